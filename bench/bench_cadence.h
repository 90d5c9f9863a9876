/* bench_cadence.h - the token cadence of a running request, for the
 * benches that measure what other work does to it (session saves,
 * session resumes, stalled readers): a 3-token prompt decoded to `tokens`
 * new tokens with every token delivered, and the largest and
 * 99th-percentile gap between consecutive tokens; the same beside
 * another request's turns run one after another on a thread; one such
 * turn; and the two-slot engine these benches open. Header-only, for
 * bench/ alone. */
#ifndef COLI_BENCH_CADENCE_H
#define COLI_BENCH_CADENCE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>

#include "bench_stats.h"
#include "engine.h"
#include "util_time.h"

/* Decode the request on e; gaps (capacity tokens) is scratch. 0 with
 * *max_gap and *p99 in seconds, or -1 when the request failed or made
 * fewer than 3 tokens. */
static inline int bench_cadence(coli_engine *e, int tokens, double *gaps, double *max_gap, double *p99)
{
	const int prompt[] = { 1, 5, 9 };
	coli_gen_params p;
	coli_gen_params_default(&p);
	p.ignore_eos = 1;
	p.every_token = 1;
	p.max_tokens = tokens;
	coli_request *r = NULL;
	coli_err err = { 0 };
	int rc = coli_engine_submit(e, prompt, 3, &p, &r, &err), n = 0;
	double last = 0.0;
	coli_event ev;
	while (!rc) {
		if (!coli_request_next(r, &ev, 300 * 1000)) {
			rc = -1;
			break;
		}
		if (ev.kind != COLI_EV_TEXT) {
			rc = ev.kind == COLI_EV_DONE ? 0 : -1;
			break;
		}
		double t_now = coli_now_s();
		if (last > 0.0 && n < tokens)
			gaps[n++] = t_now - last;
		last = t_now;
	}
	coli_request_free(r);
	if (rc || n < 2)
		return -1;
	bench_sort(gaps, n);
	*max_gap = gaps[n - 1];
	*p99 = gaps[(n * 99) / 100];
	return 0;
}

/* One turn of max new tokens on `session` (NULL: none; whole: the prompt
 * is the whole conversation), read to its end: 0, or -1 with the reason
 * on stderr after `who`. */
static inline int bench_turn(const char *who, coli_engine *e, const char *session, const int *prompt, int n, int max,
		      int whole)
{
	coli_gen_params p;
	coli_gen_params_default(&p);
	p.ignore_eos = 1;
	p.max_tokens = max;
	p.session = session;
	p.session_whole = whole;
	coli_request *r = NULL;
	coli_err err = { 0 };
	if (coli_engine_submit(e, prompt, n, &p, &r, &err)) {
		fprintf(stderr, "%s: %s\n", who, err.msg);
		return -1;
	}
	coli_event ev;
	ev.kind = COLI_EV_ERROR;
	ev.message[0] = 0;
	while (coli_request_next(r, &ev, 300 * 1000) && ev.kind == COLI_EV_TEXT)
		;
	const int ok = ev.kind == COLI_EV_DONE && !ev.message[0];
	if (!ok)
		fprintf(stderr, "%s: turn: %s\n", who, ev.message[0] ? ev.message : "no answer");
	coli_request_free(r);
	return ok ? 0 : -1;
}

/* A's turns: fn(ctx, i) for i = 0, 1, ... until B is done (0 each, or
 * nonzero when the turn failed). */
typedef int (*bench_turn_fn)(coli_engine *e, void *ctx, int i);

typedef struct {
	coli_engine *e;
	bench_turn_fn fn;
	void *ctx;
	atomic_int stop;
	int turns;
	int failed;
} bench_beside_loop;

static inline void *bench_beside_main(void *arg)
{
	bench_beside_loop *a = arg;
	while (!atomic_load(&a->stop)) {
		if (a->fn(a->e, a->ctx, a->turns)) {
			a->failed = 1;
			return NULL;
		}
		a->turns++;
	}
	return NULL;
}

/* bench_cadence of `tokens` while a thread runs A's turns: 0 with B's
 * gaps and how many of A's turns ran, or -1 (reported after `who`). */
static inline int bench_cadence_beside(const char *who, coli_engine *e, int tokens, double *gaps, bench_turn_fn fn,
				void *ctx, double *max_gap, double *p99, int *turns)
{
	bench_beside_loop a = { .e = e, .fn = fn, .ctx = ctx };
	atomic_init(&a.stop, 0);
	pthread_t t;
	if (pthread_create(&t, NULL, bench_beside_main, &a))
		return -1;
	const int rc = bench_cadence(e, tokens, gaps, max_gap, p99);
	atomic_store(&a.stop, 1);
	pthread_join(t, NULL);
	if (rc || a.failed) {
		fprintf(stderr, "%s: %s\n", who, rc ? "B failed" : "A failed");
		return -1;
	}
	*turns = a.turns;
	return 0;
}

/* The benches' engine: two slots of ctx tokens, threads threads. NULL
 * after reporting why. */
static inline coli_engine *bench_engine_open(const char *who, const char *model_dir, const char *cache_dir, int ctx,
				      int threads)
{
	coli_engine_opts o;
	coli_engine_opts_default(&o);
	o.model_dir = model_dir;
	o.cache_dir = cache_dir;
	o.parallel = 2;
	o.ctx = ctx;
	o.threads = threads;
	coli_err err = { 0 };
	coli_engine *e = NULL;
	if (coli_engine_new(&o, &e, &err)) {
		fprintf(stderr, "%s: %s\n", who, err.msg);
		return NULL;
	}
	return e;
}

#endif
