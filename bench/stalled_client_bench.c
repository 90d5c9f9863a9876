/* stalled_client_bench.c - does a reader that stops reading slow the other
 * slots down? Decode rate of request B (read to its end) in three
 * situations, in one engine with two slots, interleaved round by round so
 * that drift and other load hit every situation alike:
 *
 *   alone     B is the only request
 *   reading   A is decoded beside B and read by its own thread
 *   stalled   A is decoded beside B and never read (cancel_when_stalled,
 *             as the HTTP server sets it): its buffer fills, it is
 *             cancelled, B goes on
 *
 * B's rate is its completion tokens after the first over the time from its
 * first to its last event (decode only; admission and prefill excluded).
 * Prints one JSON line: the median rate of each situation, the ratios
 * stalled/reading (the claim: >= 0.90) and stalled/alone, and how many
 * tokens the stalled A got before it was cancelled.
 *
 *   stalled_client_bench MODEL_DIR CACHE_DIR [ROUNDS [THREADS]]
 *
 * Figures, not assertions: never run by make check (bench/stalled_client.sh
 * drives it; tests/core_stalled_client checks the behaviour). */
#include "config.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "engine.h"
#include "util_time.h"
#include "bench_cadence.h"
#include "bench_stats.h"

#define MAX_ROUNDS 32

/* Read r to its end. Returns completion tokens, -1 on a hang or an error;
 * *rate gets the decode rate (tokens after the first per second). */
static int drain(coli_request *r, double *rate, int *finish)
{
	coli_event ev;
	double t_first = 0.0, t_last = 0.0;
	int texts = 0;
	for (;;) {
		if (!coli_request_next(r, &ev, 300 * 1000))
			return -1;
		if (ev.kind == COLI_EV_TEXT) {
			t_last = coli_now_s();
			if (!texts++)
				t_first = t_last;
			continue;
		}
		if (ev.kind != COLI_EV_DONE) {
			fprintf(stderr, "stalled_client_bench: %s\n", ev.message);
			return -1;
		}
		*finish = ev.finish;
		if (rate)
			*rate = t_last > t_first ? (ev.completion_tokens - 1) / (t_last - t_first) : 0.0;
		return ev.completion_tokens;
	}
}

struct reader {
	coli_request *r;
	int tokens, finish;
};

static void *read_a(void *arg)
{
	struct reader *rd = arg;
	rd->tokens = drain(rd->r, NULL, &rd->finish);
	return NULL;
}

enum { ALONE, READING, STALLED, N_MODES };
static const char *const mode_name[N_MODES] = { "alone", "reading", "stalled" };

/* One measurement of B's rate in MODE; *a_tokens gets A's tokens. */
static int one(coli_engine *e, int mode, double *rate, int *a_tokens, coli_err *err)
{
	static const int pa[] = { 1, 17, 33, 49 }, pb[] = { 1, 5, 9 };
	coli_gen_params p;
	coli_gen_params_default(&p);
	p.ignore_eos = 1;
	p.cancel_when_stalled = 1;
	coli_request *a = NULL, *b = NULL;
	struct reader rd = { 0 };
	pthread_t th;
	int rc = -1, finish, threaded = 0;
	*a_tokens = 0;
	if (mode != ALONE) {
		p.max_tokens = 1800;
		if (coli_engine_submit(e, pa, 4, &p, &a, err))
			goto out;
		rd.r = a;
		if (mode == READING) {
			if (pthread_create(&th, NULL, read_a, &rd))
				goto out;
			threaded = 1;
		}
	}
	p.max_tokens = 900;
	if (coli_engine_submit(e, pb, 3, &p, &b, err))
		goto out;
	if (drain(b, rate, &finish) != 900)
		goto out;
	if (threaded) {
		coli_request_cancel(a); /* B's figure is taken; A's tail is not needed */
		pthread_join(th, NULL);
		threaded = 0;
	} else if (a) {
		read_a(&rd);
	}
	*a_tokens = rd.tokens;
	if (mode == STALLED && rd.finish != COLI_FINISH_CANCELLED)
		fprintf(stderr, "stalled_client_bench: the stalled request was not cancelled (finish %d)\n",
			rd.finish);
	rc = 0;
out:
	if (threaded)
		pthread_join(th, NULL);
	coli_request_free(a);
	coli_request_free(b);
	return rc;
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
	const int threads = argc > 4 ? atoi(argv[4]) : 2;
	coli_engine *e = bench_engine_open("stalled_client_bench", argv[1], argv[2], 2048, threads);
	if (!e)
		return 1;
	double rate[N_MODES][MAX_ROUNDS];
	int a_stalled[MAX_ROUNDS], a_read = 0, rc = 0;
	coli_err err = { 0 };
	for (int r = 0; r < rounds && !rc; r++) {
		/* the order turns each round: no situation always runs first */
		for (int k = 0; k < N_MODES && !rc; k++) {
			int m = (r + k) % N_MODES, at = 0;
			if (one(e, m, &rate[m][r], &at, &err)) {
				fprintf(stderr, "stalled_client_bench: %s: %s\n", mode_name[m],
					err.msg[0] ? err.msg : "request failed");
				rc = 1;
			}
			if (m == STALLED)
				a_stalled[r] = at;
			else if (m == READING)
				a_read = at;
		}
	}
	coli_engine_free(e);
	if (rc)
		return 1;
	double med[N_MODES];
	for (int m = 0; m < N_MODES; m++)
		med[m] = bench_median(rate[m], rounds);
	int amin = a_stalled[0], amax = a_stalled[0];
	for (int r = 1; r < rounds; r++) {
		amin = a_stalled[r] < amin ? a_stalled[r] : amin;
		amax = a_stalled[r] > amax ? a_stalled[r] : amax;
	}
	printf("{\"rounds\":%d,\"threads\":%d,\"b_tokens\":900,"
	       "\"b_tps_alone\":%.2f,\"b_tps_beside_reading\":%.2f,\"b_tps_beside_stalled\":%.2f,"
	       "\"ratio_stalled_to_reading\":%.3f,\"ratio_stalled_to_alone\":%.3f,"
	       "\"a_tokens_read_beside_b\":%d,\"a_tokens_before_cancel\":[%d,%d]}\n",
	       rounds, threads, med[ALONE], med[READING], med[STALLED], med[STALLED] / med[READING],
	       med[STALLED] / med[ALONE], a_read, amin, amax);
	return 0;
}
