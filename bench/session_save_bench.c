/* session_save_bench.c - does another slot's session save stall a running
 * slot? The largest gap between two tokens of request B (decoded and read
 * to its end) while request A, in the other slot, runs short turns one
 * after another, in two situations interleaved round by round in one
 * engine with two slots:
 *
 *   saving    A's turns continue session "s": each turn ends with an
 *             append and an fsync of s.kv (the session writer's)
 *   plain     A's turns are the same without a session: nothing is saved
 *
 * B's gaps are measured between its TEXT events as its reader gets them
 * (every_token: one event per token). Prints one JSON line: per situation
 * the median over rounds of B's largest gap and of its 99th percentile
 * gap (ms), and how many of A's turns (saves) ran beside B.
 *
 *   session_save_bench MODEL_DIR CACHE_DIR [ROUNDS [THREADS]]
 *
 * Figures, not assertions: never run by make check (bench/session_save.sh
 * drives it; tests/core_session_writer checks the behaviour). */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>

#include "engine.h"
#include "bench_cadence.h"
#include "bench_stats.h"
#include "util_time.h"

#define MAX_ROUNDS 32
#define B_TOKENS 600

/* A: short turns one after another on `ctx` (a session name, or NULL
 * for plain turns) until told to stop. */
static int a_turn(coli_engine *e, void *ctx, int i)
{
	static const int prompt[] = { 3, 4, 5 };
	(void)i;
	return bench_turn("session_save_bench", e, ctx, prompt, 3, 8, 0);
}

/* One B beside A's turns: B's largest and 99th percentile gap (s). */
static int run_b(coli_engine *e, const char *session, double *max_gap, double *p99, int *turns)
{
	static double gaps[B_TOKENS + 1];
	return bench_cadence_beside("session_save_bench", e, B_TOKENS, gaps, a_turn, (void *)session, max_gap, p99,
				    turns);
}

int main(int argc, char **argv)
{
	if (argc < 3 || argc > 5) {
		fprintf(stderr, "usage: %s MODEL_DIR CACHE_DIR [ROUNDS [THREADS]]\n", argv[0]);
		return 2;
	}
	int rounds = argc > 3 ? atoi(argv[3]) : 5;
	if (rounds < 1 || rounds > MAX_ROUNDS)
		rounds = 5;
	coli_engine *e = bench_engine_open("session_save_bench", argv[1], argv[2], 4096, argc > 4 ? atoi(argv[4]) : 2);
	if (!e)
		return 1;
	double mx[2][MAX_ROUNDS], pc[2][MAX_ROUNDS];
	int turns[2] = { 0, 0 };
	for (int k = 0; k < rounds; k++)
		for (int s = 0; s < 2; s++) {
			int t = 0;
			/* a fresh session per round: its history stays short */
			char name[32];
			snprintf(name, sizeof name, "s%d", k);
			if (run_b(e, s == 0 ? name : NULL, &mx[s][k], &pc[s][k], &t)) {
				coli_engine_free(e);
				return 1;
			}
			turns[s] += t;
		}
	coli_engine_free(e);
	printf("{\"rounds\":%d,\"b_tokens\":%d,\"saving\":{\"max_gap_ms\":%.2f,\"p99_gap_ms\":%.2f,\"a_turns\":%d},"
	       "\"plain\":{\"max_gap_ms\":%.2f,\"p99_gap_ms\":%.2f,\"a_turns\":%d}}\n",
	       rounds, B_TOKENS, 1e3 * bench_median(mx[0], rounds), 1e3 * bench_median(pc[0], rounds), turns[0],
	       1e3 * bench_median(mx[1], rounds), 1e3 * bench_median(pc[1], rounds), turns[1]);
	return 0;
}
