/* util_buf.c - the growable byte string (util_buf.h): appends of bytes,
 * strings and formatted text across many doublings, clear and consume,
 * steal (including an empty buffer), JSON string escapes, reading a stream whole and past a
 * limit (and a file by its path), and the sticky -ENOMEM after a request too large to represent. */
#include "config.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "test_util.h"
#include "util_buf.h"

int main(int argc, char **argv)
{
	(void)argc;
	util_buf b = { 0 };
	CHECK(b.p == NULL && b.len == 0);
	CHECK_RC(util_buf_add(&b, NULL, 0), 0);
	CHECK(b.p && b.len == 0 && b.p[0] == '\0');
	CHECK_RC(util_buf_puts(&b, "ab"), 0);
	CHECK_RC(util_buf_add(&b, "c\0d", 3), 0);
	CHECK(b.len == 5 && !memcmp(b.p, "abc\0d", 6));
	util_buf_clear(&b);
	CHECK(b.len == 0 && b.p && b.p[0] == '\0');

	/* many doublings: the bytes are the ones appended, in order */
	char want[16];
	for (int i = 0; i < 5000; i++)
		CHECK_RC(util_buf_printf(&b, "%d,", i), 0);
	size_t off = 0;
	int ok = 1;
	for (int i = 0; i < 5000 && ok; i++) {
		int n = snprintf(want, sizeof want, "%d,", i);
		ok = off + (size_t)n <= b.len && !memcmp(b.p + off, want, (size_t)n);
		off += (size_t)n;
	}
	CHECK(ok && off == b.len && b.p[b.len] == '\0');
	CHECK(b.cap > b.len);
	CHECK_RC(util_buf_ok(&b), 0);

	/* consume: the tail moves to the front */
	util_buf_clear(&b);
	CHECK_RC(util_buf_puts(&b, "hello world"), 0);
	util_buf_consume(&b, 6);
	CHECK_STR(b.p, "world");
	CHECK(b.len == 5);
	util_buf_consume(&b, 99);
	CHECK(b.len == 0 && b.p[0] == '\0');

	/* reserve: room without length */
	CHECK_RC(util_buf_reserve(&b, 1000), 0);
	CHECK(b.cap >= 1001 && b.len == 0);

	/* steal hands the string over and leaves the buffer empty */
	CHECK_RC(util_buf_puts(&b, "kept"), 0);
	size_t n = 0;
	char *s = util_buf_steal(&b, &n);
	CHECK(s && n == 4);
	CHECK_STR(s, "kept");
	CHECK(b.p == NULL && b.len == 0 && b.cap == 0);
	free(s);
	s = util_buf_steal(&b, &n);
	CHECK(s && n == 0 && s[0] == '\0');
	free(s);

	/* JSON string escapes: every control byte, quote and backslash */
	util_buf_clear(&b);
	const char raw[] = "a\"b\\c\n\r\t\b\f\x01\x1f\x7f/\xc3\xa9";
	CHECK_RC(util_buf_json_escape(&b, raw, sizeof raw - 1), 0);
	CHECK_STR(b.p, "a\\\"b\\\\c\\n\\r\\t\\b\\f\\u0001\\u001f\x7f/\xc3\xa9");
	util_buf_clear(&b);
	CHECK_RC(util_buf_json_escape(&b, "\0x", 2), 0);
	CHECK(b.len == 7 && !strcmp(b.p, "\\u0000x"));
	util_buf_free(&b);

	/* a stream read whole, then one past its limit */
	FILE *f = tmpfile();
	REQUIRE(f);
	for (int i = 0; i < 3000; i++)
		fprintf(f, "line %d\n", i);
	long size = ftell(f);
	rewind(f);
	CHECK_RC(util_buf_puts(&b, ">"), 0);
	CHECK_RC(util_buf_read(&b, f, 0), 0);
	CHECK(b.len == (size_t)size + 1 && !strncmp(b.p, ">line 0\nline 1\n", 15));
	CHECK(!strcmp(b.p + b.len - 10, "line 2999\n"));
	util_buf_clear(&b);
	rewind(f);
	CHECK_RC(util_buf_read(&b, f, (size_t)size), 0);
	CHECK(b.len == (size_t)size);
	util_buf_clear(&b);
	rewind(f);
	CHECK_RC(util_buf_read(&b, f, (size_t)size - 1), -EFBIG);
	CHECK_RC(util_buf_ok(&b), 0);
	fclose(f);
	util_buf_free(&b);

	/* a file read whole by its path, past its limit, and one missing */
	char dir[64], path[96];
	snprintf(dir, sizeof dir, "/tmp/coli-util-buf-XXXXXX");
	REQUIRE(mkdtemp(dir));
	snprintf(path, sizeof path, "%s/f", dir);
	f = fopen(path, "wb");
	REQUIRE(f);
	fputs("abc\ndef\n", f);
	REQUIRE(fclose(f) == 0);
	char *text = NULL;
	n = 0;
	CHECK_RC(util_buf_read_path(path, 0, &text, &n), 0);
	CHECK(text && n == 8 && !strcmp(text, "abc\ndef\n"));
	free(text);
	text = NULL;
	CHECK_RC(util_buf_read_path(path, 8, &text, NULL), 0);
	CHECK(text && !strcmp(text, "abc\ndef\n"));
	free(text);
	text = NULL;
	CHECK_RC(util_buf_read_path(path, 7, &text, &n), -EFBIG);
	CHECK(text == NULL);
	unlink(path);
	CHECK_RC(util_buf_read_path(path, 0, &text, &n), -ENOENT);
	CHECK(text == NULL);
	rmdir(dir);

	/* a size that cannot be represented: -ENOMEM, sticky, contents kept */
	CHECK_RC(util_buf_puts(&b, "x"), 0);
	CHECK_RC(util_buf_reserve(&b, SIZE_MAX), -ENOMEM);
	CHECK_RC(util_buf_ok(&b), -ENOMEM);
	CHECK_RC(util_buf_puts(&b, "y"), -ENOMEM);
	CHECK_RC(util_buf_printf(&b, "%d", 1), -ENOMEM);
	CHECK(b.len == 1 && !strcmp(b.p, "x"));
	CHECK(util_buf_steal(&b, &n) == NULL && n == 0);
	CHECK(b.p == NULL && !b.oom);
	util_buf_free(&b);
	util_buf_free(&b);   /* twice: a no-op on an empty buffer */
	return test_summary(argv[0]);
}
