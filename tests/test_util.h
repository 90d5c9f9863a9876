/* test_util.h - what the C unit tests share: one way to check and report,
 * and a small deterministic generator (so a failing case is the same on
 * every run). Header-only: each test program is one file.
 *
 * Reporting convention (every C test, so a log reads the same everywhere):
 *   FILE:LINE: check failed: EXPRESSION[: message]     on stderr, per failure
 *   NAME: N checks, N failed                           at the end (test_summary)
 * and the program exits nonzero when any check failed.
 *
 *   CHECK(cond)               count, report, go on
 *   CHECK(cond, "fmt", ...)   the same with a printf-style message (a literal)
 *   REQUIRE(cond[, ...])      report and stop at once (exit 1): for a check
 *                             whose failure would make the next lines crash
 *   FAIL("fmt", ...)          an unconditional failure found by other means
 *   CHECK_RC(expr, want)      an int-returning call, reporting both values
 *   CHECK_STR(a, b)           two strings equal, reporting both
 *   return test_summary(argv0 or NAME);   at the end of main
 * A test that reaches test_summary having made no check fails: it proved
 * nothing (a test that cannot check anything here exits 77, SKIP).
 *
 * test_isa_required(NAME): whether $COLI_TEST_ISA_REQUIRED (a space-
 * separated list of kernel paths, set by .ci/run for the CI machine) names
 * NAME, so a path the CPU lacks is a failure instead of a skip. */
#ifndef COLI_TEST_UTIL_H
#define COLI_TEST_UTIL_H

#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TEST_UNUSED __attribute__((unused))

/* atomic: threaded tests check from several threads (ThreadSanitizer) */
static _Atomic int test_checks TEST_UNUSED;   /* checks evaluated */
static _Atomic int test_failures TEST_UNUSED; /* checks that failed */

/* FMT always starts with one space (the macros prepend it so that a check
 * without a message still passes a non-empty literal); " " alone means no
 * message. */
TEST_UNUSED __attribute__((format(printf, 4, 5)))
static void test_fail_at(const char *file, int line, const char *expr, const char *fmt, ...)
{
	test_failures++;
	fprintf(stderr, "%s:%d: check failed", file, line);
	if (expr)
		fprintf(stderr, ": %s", expr);
	if (fmt[0] && fmt[1]) {
		va_list ap;
		va_start(ap, fmt);
		fputc(':', stderr);
		vfprintf(stderr, fmt, ap);
		va_end(ap);
	}
	fputc('\n', stderr);
}

#define CHECK(cond, ...)                                                            \
	do {                                                                        \
		test_checks++;                                                      \
		if (!(cond))                                                        \
			test_fail_at(__FILE__, __LINE__, #cond, " " __VA_ARGS__);    \
	} while (0)

#define REQUIRE(cond, ...)                                                          \
	do {                                                                        \
		test_checks++;                                                      \
		if (!(cond)) {                                                      \
			test_fail_at(__FILE__, __LINE__, #cond, " " __VA_ARGS__);    \
			exit(1);                                                    \
		}                                                                   \
	} while (0)

#define FAIL(...)                                                                   \
	do {                                                                        \
		test_checks++;                                                      \
		test_fail_at(__FILE__, __LINE__, NULL, " " __VA_ARGS__);             \
	} while (0)

#define CHECK_RC(expr, want)                                                        \
	do {                                                                        \
		int rc_ = (expr), want_ = (want);                                   \
		test_checks++;                                                      \
		if (rc_ != want_)                                                   \
			test_fail_at(__FILE__, __LINE__, #expr, " returned %d, want %d", \
				     rc_, want_);                                   \
	} while (0)

#define CHECK_STR(a, b)                                                             \
	do {                                                                        \
		const char *a_ = (a), *b_ = (b);                                    \
		test_checks++;                                                      \
		if (!a_ || !b_ || strcmp(a_, b_))                                   \
			test_fail_at(__FILE__, __LINE__, #a " == " #b, " \"%s\" != \"%s\"", \
				     a_ ? a_ : "(null)", b_ ? b_ : "(null)");      \
	} while (0)

/* The last line of every C test; returns main's exit status. */
TEST_UNUSED static int test_summary(const char *name)
{
	const char *base = strrchr(name, '/');
	fprintf(stderr, "%s: %d checks, %d failed\n", base ? base + 1 : name, (int)test_checks,
		(int)test_failures);
	if (!test_checks) {
		fprintf(stderr, "%s: no check was made: failing\n", base ? base + 1 : name);
		return 1;
	}
	return test_failures ? 1 : 0;
}

TEST_UNUSED static int test_isa_required(const char *isa)
{
	const char *l = getenv("COLI_TEST_ISA_REQUIRED");
	size_t n = strlen(isa);
	while (l && *l) {
		while (*l == ' ')
			l++;
		size_t w = strcspn(l, " ");
		if (w == n && !strncmp(l, isa, n))
			return 1;
		l += w;
	}
	return 0;
}

/* xorshift64; set test_rng to seed it (nonzero) */
static uint64_t test_rng TEST_UNUSED = 0x9e3779b97f4a7c15ull;

/* uniform in [-1, 1) */
TEST_UNUSED static inline float frand(void)
{
	test_rng ^= test_rng << 13;
	test_rng ^= test_rng >> 7;
	test_rng ^= test_rng << 17;
	return (float)((double)(test_rng >> 11) * 0x1p-53 * 2.0 - 1.0);
}

#endif
