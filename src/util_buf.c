/* util_buf.c - see util_buf.h. */
#include "config.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util_array.h"
#include "util_buf.h"

#define UTIL_BUF_MIN_CAP 64

int util_buf_reserve(util_buf *b, size_t extra)
{
	if (b->oom)
		return -ENOMEM;
	if (extra >= SIZE_MAX - b->len ||
	    util_array_grow(&b->p, &b->cap, b->len + extra + 1, UTIL_BUF_MIN_CAP)) {
		b->oom = 1;
		return -ENOMEM;
	}
	return 0;
}

int util_buf_add(util_buf *b, const void *s, size_t n)
{
	if (util_buf_reserve(b, n))
		return -ENOMEM;
	if (n)
		memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = '\0';
	return 0;
}

int util_buf_puts(util_buf *b, const char *s)
{
	return util_buf_add(b, s, strlen(s));
}

int util_buf_vprintf(util_buf *b, const char *fmt, va_list ap)
{
	va_list aq;
	va_copy(aq, ap);
	int n = vsnprintf(NULL, 0, fmt, aq);
	va_end(aq);
	if (n < 0) {
		b->oom = 1;
		return -ENOMEM;
	}
	if (util_buf_reserve(b, (size_t)n))
		return -ENOMEM;
	vsnprintf(b->p + b->len, (size_t)n + 1, fmt, ap);
	b->len += (size_t)n;
	return 0;
}

int util_buf_printf(util_buf *b, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int rc = util_buf_vprintf(b, fmt, ap);
	va_end(ap);
	return rc;
}

int util_buf_json_escape(util_buf *b, const char *s, size_t n)
{
	size_t i = 0;
	while (i < n) {
		size_t run = i;
		while (run < n && (unsigned char)s[run] >= 0x20 && s[run] != '"' && s[run] != '\\')
			run++;
		util_buf_add(b, s + i, run - i);   /* the bytes that stay as they are */
		if (run == n)
			break;
		unsigned char c = (unsigned char)s[run];
		const char *e = c == '"' ? "\\\"" : c == '\\' ? "\\\\" : c == '\n' ? "\\n" : c == '\r' ? "\\r"
			      : c == '\t' ? "\\t" : c == '\b' ? "\\b" : c == '\f' ? "\\f" : NULL;
		if (e)
			util_buf_add(b, e, 2);
		else
			util_buf_printf(b, "\\u%04x", c);
		i = run + 1;
	}
	return util_buf_ok(b);
}

int util_buf_read(util_buf *b, FILE *f, size_t max)
{
	const size_t start = b->len;
	for (;;) {
		if (util_buf_reserve(b, 4096))
			return -ENOMEM;
		size_t room = b->cap - b->len - 1;
		size_t r = fread(b->p + b->len, 1, room, f);
		b->len += r;
		b->p[b->len] = '\0';
		if (max && b->len - start > max)
			return -EFBIG;
		if (r < room)
			break;   /* end of file or an error */
	}
	return ferror(f) ? -EIO : 0;
}

int util_buf_read_path(const char *path, size_t max, char **out, size_t *len)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return -errno;
	util_buf b = { 0 };
	int rc = util_buf_read(&b, f, max);
	fclose(f);
	char *s = rc ? NULL : util_buf_steal(&b, len);
	if (!rc && !s)
		rc = -ENOMEM;
	util_buf_free(&b);
	if (!rc)
		*out = s;
	return rc;
}

int util_buf_ok(const util_buf *b)
{
	return b->oom ? -ENOMEM : 0;
}

void util_buf_clear(util_buf *b)
{
	b->len = 0;
	if (b->p)
		b->p[0] = '\0';
}

void util_buf_consume(util_buf *b, size_t n)
{
	if (n >= b->len) {
		util_buf_clear(b);
		return;
	}
	memmove(b->p, b->p + n, b->len - n);
	b->len -= n;
	b->p[b->len] = '\0';
}

char *util_buf_steal(util_buf *b, size_t *len)
{
	if (!b->oom && !b->p)
		util_buf_add(b, NULL, 0);
	char *p = b->oom ? NULL : b->p;
	if (len)
		*len = p ? b->len : 0;
	if (!p)
		free(b->p);
	memset(b, 0, sizeof *b);
	return p;
}

void util_buf_free(util_buf *b)
{
	free(b->p);
	memset(b, 0, sizeof *b);
}
