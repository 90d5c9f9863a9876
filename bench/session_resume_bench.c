/* session_resume_bench.c - does resuming a long session stall a running
 * slot? The largest gap between two tokens of request B (decoded and read
 * to its end) while request A, in the other slot, runs one-token turns
 * one after another, in two situations interleaved round by round in one
 * engine with two slots:
 *
 *   resuming  A's turns alternate between two saved sessions of LONG
 *             tokens (default 4000): each turn binds the other one, so it
 *             opens the file and reads all its rows (the session writer's
 *             since issue 28; before, the engine thread's); its prompt is
 *             the whole conversation, so the file stays that long
 *   plain     A's turns are the same without a session
 *
 * B's gaps are measured between its TEXT events as its reader gets them
 * (every_token: one event per token). Prints one JSON line: per situation
 * the median over rounds of B's largest gap and of its 99th percentile
 * gap (ms), and how many of A's turns (resumes) ran beside B.
 *
 *   session_resume_bench MODEL_DIR CACHE_DIR [ROUNDS [THREADS [LONG]]]
 *
 * Figures, not assertions: never run by make check (bench/session_resume.sh
 * drives it; tests/core_session_bind checks the behaviour). */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>

#include "engine.h"
#include "bench_cadence.h"
#include "bench_stats.h"
#include "util_time.h"

#define MAX_ROUNDS 32
#define B_TOKENS 400
#define MAX_LONG 8000

static int long_prompt[MAX_LONG + 1], n_long = 4000;

/* A: one-token turns, alternating sessions L0 and L1 (ctx non-NULL) or
 * none: the long prompt and one token, all but the last token reused. */
static int a_turn(coli_engine *e, void *ctx, int i)
{
	static const int one[] = { 3 };
	return ctx ? bench_turn("session_resume_bench", e, i % 2 ? "L1" : "L0", long_prompt, n_long + 1, 1, 1)
		   : bench_turn("session_resume_bench", e, NULL, one, 1, 1, 0);
}

/* One B beside A's turns: B's largest and 99th percentile gap (s). */
static int run_b(coli_engine *e, int sessions, double *max_gap, double *p99, int *turns)
{
	static double gaps[B_TOKENS + 1];
	static int on = 1;
	return bench_cadence_beside("session_resume_bench", e, B_TOKENS, gaps, a_turn, sessions ? &on : NULL,
				    max_gap, p99, turns);
}

int main(int argc, char **argv)
{
	if (argc < 3 || argc > 6) {
		fprintf(stderr, "usage: %s MODEL_DIR CACHE_DIR [ROUNDS [THREADS [LONG]]]\n", argv[0]);
		return 2;
	}
	int rounds = argc > 3 ? atoi(argv[3]) : 3;
	if (rounds < 1 || rounds > MAX_ROUNDS)
		rounds = 3;
	n_long = argc > 5 ? atoi(argv[5]) : 4000;
	if (n_long < 1 || n_long > MAX_LONG)
		n_long = 4000;
	coli_engine *e = bench_engine_open("session_resume_bench", argv[1], argv[2], n_long + 512,
					   argc > 4 ? atoi(argv[4]) : 2);
	if (!e)
		return 1;
	/* the two long sessions, saved once */
	for (int i = 0; i < n_long; i++)
		long_prompt[i] = 2 + i % 97;
	long_prompt[n_long] = 3;
	if (bench_turn("session_resume_bench", e, "L0", long_prompt, n_long, 1, 0) ||
	    bench_turn("session_resume_bench", e, "L1", long_prompt, n_long, 1, 0)) {
		coli_engine_free(e);
		return 1;
	}
	double mx[2][MAX_ROUNDS], pc[2][MAX_ROUNDS];
	int turns[2] = { 0, 0 };
	for (int k = 0; k < rounds; k++)
		for (int s = 0; s < 2; s++) {
			int t = 0;
			if (run_b(e, s == 0, &mx[s][k], &pc[s][k], &t)) {
				coli_engine_free(e);
				return 1;
			}
			turns[s] += t;
		}
	coli_engine_free(e);
	printf("{\"rounds\":%d,\"b_tokens\":%d,\"long\":%d,\"resuming\":{\"max_gap_ms\":%.2f,\"p99_gap_ms\":%.2f,"
	       "\"a_turns\":%d},\"plain\":{\"max_gap_ms\":%.2f,\"p99_gap_ms\":%.2f,\"a_turns\":%d}}\n",
	       rounds, B_TOKENS, n_long, 1e3 * bench_median(mx[0], rounds), 1e3 * bench_median(pc[0], rounds),
	       turns[0], 1e3 * bench_median(mx[1], rounds), 1e3 * bench_median(pc[1], rounds), turns[1]);
	return 0;
}
