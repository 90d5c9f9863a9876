/* bench_cadence.h - the token cadence of a running request, for the
 * benches that measure what other work does to it (session saves,
 * session resumes): a 3-token prompt decoded to `tokens` new tokens with
 * every token delivered, and the largest and 99th-percentile gap between
 * consecutive tokens. Header-only, for bench/ alone. */
#ifndef COLI_BENCH_CADENCE_H
#define COLI_BENCH_CADENCE_H

#include "bench_stats.h"
#include "engine.h"
#include "util_time.h"

/* Decode the request on e; gaps (capacity tokens) is scratch. 0 with
 * *max_gap and *p99 in seconds, or -1 when the request failed or made
 * fewer than 3 tokens. */
static int bench_cadence(coli_engine *e, int tokens, double *gaps, double *max_gap, double *p99)
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

#endif
