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

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "engine.h"
#include "bench_cadence.h"
#include "bench_stats.h"
#include "util_time.h"

#define MAX_ROUNDS 32
#define B_TOKENS 600

typedef struct {
	coli_engine *e;
	const char *session; /* NULL: plain turns */
	atomic_int stop;
	int turns;
	int failed;
} a_loop;

/* A: short turns one after another until told to stop. */
static void *a_main(void *arg)
{
	a_loop *a = arg;
	const int prompt[] = { 3, 4, 5 };
	coli_gen_params p;
	coli_gen_params_default(&p);
	p.ignore_eos = 1;
	p.max_tokens = 8;
	p.session = a->session;
	while (!atomic_load(&a->stop)) {
		coli_request *r = NULL;
		coli_err err = { 0 };
		if (coli_engine_submit(a->e, prompt, 3, &p, &r, &err)) {
			a->failed = 1;
			return NULL;
		}
		coli_event ev;
		for (;;) {
			if (!coli_request_next(r, &ev, 300 * 1000)) {
				a->failed = 1;
				break;
			}
			if (ev.kind != COLI_EV_TEXT)
				break;
		}
		if (ev.kind != COLI_EV_DONE || ev.message[0])
			a->failed = 1;
		coli_request_free(r);
		if (a->failed)
			return NULL;
		a->turns++;
	}
	return NULL;
}

/* One B beside A's turns: B's largest and 99th percentile gap (s). */
static int run_b(coli_engine *e, const char *session, double *max_gap, double *p99, int *turns)
{
	static double gaps[B_TOKENS + 1];
	a_loop a = { .e = e, .session = session };
	atomic_init(&a.stop, 0);
	pthread_t t;
	if (pthread_create(&t, NULL, a_main, &a))
		return -1;
	const int rc = bench_cadence(e, B_TOKENS, gaps, max_gap, p99);
	atomic_store(&a.stop, 1);
	pthread_join(t, NULL);
	if (rc || a.failed) {
		fprintf(stderr, "session_save_bench: %s\n", rc ? "B failed" : "A failed");
		return -1;
	}
	*turns = a.turns;
	return 0;
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
	coli_engine_opts o;
	coli_engine_opts_default(&o);
	o.model_dir = argv[1];
	o.cache_dir = argv[2];
	o.parallel = 2;
	o.ctx = 4096;
	o.threads = argc > 4 ? atoi(argv[4]) : 2;
	coli_err err = { 0 };
	coli_engine *e = NULL;
	if (coli_engine_new(&o, &e, &err)) {
		fprintf(stderr, "session_save_bench: %s\n", err.msg);
		return 1;
	}
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
