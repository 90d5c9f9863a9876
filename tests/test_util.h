/* test_util.h - what the C unit tests share: a failure counter with a
 * CHECK that reports and goes on, and a small deterministic generator (so
 * a failing case is the same on every run). Header-only: each test program
 * is one file. */
#ifndef COLI_TEST_UTIL_H
#define COLI_TEST_UTIL_H

#include <stdint.h>
#include <stdio.h>

static int fails;

/* CHECK(condition, printf-format, ...): counts and prints a failure. */
#define CHECK(c, ...)                                              \
	do {                                                       \
		if (!(c)) {                                        \
			fails++;                                   \
			printf("FAIL %s:%d: ", __FILE__, __LINE__); \
			printf(__VA_ARGS__);                       \
			printf("\n");                              \
		}                                                  \
	} while (0)

/* xorshift64; set test_rng to seed it (nonzero) */
static uint64_t test_rng = 0x9e3779b97f4a7c15ull;

/* uniform in [-1, 1) */
static inline float frand(void)
{
	test_rng ^= test_rng << 13;
	test_rng ^= test_rng >> 7;
	test_rng ^= test_rng << 17;
	return (float)((double)(test_rng >> 11) * 0x1p-53 * 2.0 - 1.0);
}

#endif
