/* engine_profile_test.c - the routing profile file (engine_profile.h):
 * write, read back, add; labels; every damaged form refused with a reason
 * (bad magic, other version, truncated, grown, a flipped count byte). */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine_profile.h"
#include "test_util.h"

static char dir[64];

static void path_in(char *out, size_t cap, const char *name)
{
	snprintf(out, cap, "%s/%s", dir, name);
}

static int write_bytes(const char *path, const uint8_t *b, size_t n)
{
	FILE *f = fopen(path, "wb");
	if (!f)
		return -1;
	const size_t w = fwrite(b, 1, n, f);
	return fclose(f) || w != n ? -1 : 0;
}

/* The profile's file with byte `at` changed (or cut to `len` when len
 * is not the size), read back: the error code, err filled. */
static int damaged(const coli_profile *p, long at, size_t len, coli_err *err)
{
	const size_t n = coli_profile_size(p->n_layers, p->n_experts);
	uint8_t *b = calloc(1, n + 8);
	char path[128];
	path_in(path, sizeof path, "bad.prof");
	coli_profile_encode(p, b);
	if (at >= 0)
		b[at] ^= 0x5a;
	coli_profile q;
	int rc = write_bytes(path, b, len) ? -EIO : coli_profile_read(path, &q, err);
	coli_profile_free(&q);
	free(b);
	return rc;
}

int main(void)
{
	snprintf(dir, sizeof dir, "/tmp/coli-profile-XXXXXX");
	REQUIRE(mkdtemp(dir) != NULL);
	coli_err err = { 0 };
	coli_profile p, q;
	REQUIRE(coli_profile_init(&p, 3, 5, 2, &err) == 0);
	for (int i = 0; i < 15; i++)
		p.counts[i] = (uint64_t)i * 1000003u + (i == 14 ? (1ull << 40) : 0);
	p.tokens = 77;
	p.requests = 3;
	snprintf(p.fingerprint, sizeof p.fingerprint, "%064d", 7);
	snprintf(p.label, sizeof p.label, "zh-code.v2");
	char path[128];
	path_in(path, sizeof path, "a.prof");
	CHECK_RC(coli_profile_write(path, &p, &err), 0);
	CHECK_RC(coli_profile_read(path, &q, &err), 0);
	CHECK(q.n_layers == 3 && q.n_experts == 5 && q.top_k == 2 && q.tokens == 77 && q.requests == 3);
	CHECK(q.counts && !memcmp(q.counts, p.counts, 15 * sizeof *p.counts), "counts round trip");
	CHECK_STR(q.label, "zh-code.v2");
	CHECK_STR(q.fingerprint, p.fingerprint);
	CHECK_RC(coli_profile_add(&q, &p, &err), 0);
	CHECK(q.counts[14] == 2 * p.counts[14] && q.tokens == 154 && q.requests == 6, "add sums");
	coli_profile r;
	REQUIRE(coli_profile_init(&r, 3, 4, 2, &err) == 0);
	CHECK_RC(coli_profile_add(&q, &r, &err), -EINVAL);
	coli_profile_free(&r);
	coli_profile_free(&q);

	const size_t n = coli_profile_size(3, 5);
	CHECK(n == 168 + 8 * 15 + 4, "size %zu", n);
	CHECK_RC(damaged(&p, 0, n, &err), -EINVAL);
	CHECK(strstr(err.msg, "not a routing profile") != NULL, "%s", err.msg);
	CHECK_RC(damaged(&p, 8, n, &err), -EINVAL);
	CHECK(strstr(err.msg, "version") != NULL, "%s", err.msg);
	CHECK_RC(damaged(&p, -1, n - 1, &err), -EINVAL);
	CHECK(strstr(err.msg, "truncated") != NULL, "%s", err.msg);
	CHECK_RC(damaged(&p, -1, n + 4, &err), -EINVAL);
	CHECK(strstr(err.msg, "truncated or damaged") != NULL, "%s", err.msg);
	CHECK_RC(damaged(&p, 168 + 8 * 7, n, &err), -EINVAL);
	CHECK(strstr(err.msg, "checksum") != NULL, "%s", err.msg);
	CHECK_RC(damaged(&p, 13, n, &err), -EINVAL); /* n_layers changed: the size no longer fits */
	path_in(path, sizeof path, "missing.prof");
	CHECK_RC(coli_profile_read(path, &q, &err), -ENOENT);

	CHECK(coli_profile_label_valid("zh"));
	CHECK(coli_profile_label_valid("A-z_0.9"));
	CHECK(!coli_profile_label_valid(""));
	CHECK(!coli_profile_label_valid(".hidden"));
	CHECK(!coli_profile_label_valid("_all"));
	CHECK(!coli_profile_label_valid("a/b"));
	CHECK(!coli_profile_label_valid("a b"));
	char big[80];
	memset(big, 'x', sizeof big - 1);
	big[sizeof big - 1] = 0;
	CHECK(!coli_profile_label_valid(big));
	big[64] = 0;
	CHECK(!coli_profile_label_valid(big)); /* 64 characters */
	big[63] = 0;
	CHECK(coli_profile_label_valid(big));  /* 63 */
	CHECK(coli_profile_init(&q, 0, 5, 2, &err) == -EINVAL);

	coli_profile_free(&p);
	path_in(path, sizeof path, "a.prof");
	unlink(path);
	path_in(path, sizeof path, "bad.prof");
	unlink(path);
	rmdir(dir);
	return test_summary("engine_profile_test");
}
