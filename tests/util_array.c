/* util_array.c - growing an array by doubling (util_array.h): the
 * capacities MIN, 2 MIN, 4 MIN, ... and the contents kept across them, a
 * jump past a doubling, no reallocation when the room is there, an int
 * capacity, and the failures: NEED * size past SIZE_MAX, NEED past
 * INT_MAX for an int capacity, and an allocation that fails, each
 * returning -ENOMEM with the old block and its capacity left as they
 * were. */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"
#include "util_array.h"

/* A request past PTRDIFF_MAX must come back NULL under ASan too, as it
 * does from glibc, instead of ending the test. */
const char *__asan_default_options(void);
const char *__asan_default_options(void)
{
	return "allocator_may_return_null=1";
}

int main(int argc, char **argv)
{
	(void)argc;

	/* one push at a time: 16, 32, 64, ... and every value kept */
	long *v = NULL;
	size_t cap = 0, n = 0;
	int caps_ok = 1;
	for (long i = 0; i < 5000; i++) {
		size_t before = cap;
		REQUIRE(util_array_grow(&v, &cap, n + 1, 16) == 0);
		if (cap != before && cap != (before ? before * 2 : 16))
			caps_ok = 0;
		v[n++] = i * 7;
	}
	CHECK(caps_ok);
	CHECK(cap == 8192, "cap %zu", cap);
	int vals_ok = 1;
	for (size_t i = 0; i < n; i++)
		vals_ok &= v[i] == (long)i * 7;
	CHECK(vals_ok);

	/* room enough: nothing moves */
	long *same = v;
	CHECK_RC(util_array_grow(&v, &cap, 8192, 16), 0);
	CHECK(v == same && cap == 8192);
	CHECK_RC(util_array_grow(&v, &cap, 0, 16), 0);
	CHECK(v == same && cap == 8192);

	/* a jump: doubles until it holds NEED */
	CHECK_RC(util_array_grow(&v, &cap, 40000, 16), 0);
	CHECK(cap == 65536, "cap %zu", cap);
	CHECK(v[4999] == 4999 * 7);

	/* NEED * size past SIZE_MAX: refused before any allocation */
	same = v;
	CHECK_RC(util_array_grow(&v, &cap, SIZE_MAX / sizeof *v + 1, 16), -ENOMEM);
	CHECK_RC(util_array_grow(&v, &cap, SIZE_MAX, 16), -ENOMEM);
	CHECK(v == same && cap == 65536);

	/* representable but too large to allocate (past PTRDIFF_MAX): the
	 * realloc fails and the old block is still the caller's, whole */
	CHECK_RC(util_array_grow(&v, &cap, SIZE_MAX / sizeof *v, 16), -ENOMEM);
	CHECK(v == same && cap == 65536);
	CHECK_RC(util_array_grow(&v, &cap, SIZE_MAX / sizeof *v / 2 + 1, 16), -ENOMEM);
	CHECK(v == same && cap == 65536);
	vals_ok = 1;
	for (size_t i = 0; i < n; i++)
		vals_ok &= v[i] == (long)i * 7;
	CHECK(vals_ok);
	free(v);

	/* a failure on the first allocation leaves the array empty */
	v = NULL;
	cap = 0;
	CHECK_RC(util_array_grow(&v, &cap, PTRDIFF_MAX / sizeof *v + 1, 16), -ENOMEM);
	CHECK(v == NULL && cap == 0);

	/* an int capacity: the same doublings, from MIN */
	struct pair {
		int a;
		char b[13];
	} *q = NULL;
	int icap = 0, in = 0;
	caps_ok = 1;
	for (int i = 0; i < 1000; i++) {
		int before = icap;
		REQUIRE(util_array_grow(&q, &icap, (size_t)in + 1, 4) == 0);
		if (icap != before && icap != (before ? before * 2 : 4))
			caps_ok = 0;
		q[in].a = i;
		memset(q[in].b, i & 0x7f, sizeof q[in].b);
		in++;
	}
	CHECK(caps_ok);
	CHECK(icap == 1024, "cap %d", icap);
	vals_ok = 1;
	for (int i = 0; i < in; i++)
		vals_ok &= q[i].a == i && q[i].b[12] == (char)(i & 0x7f);
	CHECK(vals_ok);

	/* an int capacity never passes INT_MAX; the block stays */
	struct pair *qs = q;
	CHECK_RC(util_array_grow(&q, &icap, (size_t)INT_MAX + 1, 4), -ENOMEM);
	CHECK(q == qs && icap == 1024 && q[999].a == 999);
	free(q);

	/* elements of 8 GiB: an int NEED whose bytes overflow, and one that
	 * fits size_t but not an allocation (past PTRDIFF_MAX) */
	char(*big)[(size_t)1 << 33] = NULL;
	icap = 0;
	CHECK_RC(util_array_grow(&big, &icap, (size_t)INT_MAX, 1), -ENOMEM);
	CHECK(big == NULL && icap == 0);
	CHECK_RC(util_array_grow(&big, &icap, (size_t)1 << 30, 1), -ENOMEM);
	CHECK(big == NULL && icap == 0);

	/* MIN 0 counts as 1 */
	char *c = NULL;
	cap = 0;
	CHECK_RC(util_array_grow(&c, &cap, 1, 0), 0);
	CHECK(c && cap == 1);
	CHECK_RC(util_array_grow(&c, &cap, 3, 0), 0);
	CHECK(cap == 4);
	free(c);
	return test_summary(argv[0]);
}
