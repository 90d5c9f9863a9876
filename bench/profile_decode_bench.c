/* profile_decode_bench.c - does recording routing profiles cost the decode
 * step? One request decoded to its end (ignore_eos, one event per token)
 * by an engine with routing profiles on (the default: the step adds each
 * row's chosen experts to its slot's counts, the request's counts go to
 * the profile writer when it ends) and by one opened with --no-profiles
 * (no counting, no writer), the two interleaved round by round.
 *
 * The step's time is read between the request's TEXT events as its reader
 * gets them: the median gap of a round over its decode tokens (the first
 * token, which carries the prompt, left out). Prints one JSON line: per
 * mode the rounds' medians (ms), their median, and the on/off ratio of the
 * medians and the median of the rounds' paired ratios.
 *
 *   profile_decode_bench MODEL_DIR CACHE_DIR [ROUNDS [TOKENS [THREADS]]]
 *
 * Figures, not assertions: never run by make check (bench/profile_decode.sh
 * drives it; tests/engine_profile_sessions.sh checks the behaviour). */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "engine.h"
#include "bench_stats.h"
#include "util_time.h"

#define MAX_ROUNDS 64
#define MAX_TOKENS 4096

/* One request of `tokens` decoded by a fresh engine: the median gap
 * between its tokens in ms, or -1. */
static double run(const char *model, const char *cache, int no_profiles, int tokens, int threads)
{
	coli_engine_opts o;
	coli_engine_opts_default(&o);
	o.model_dir = model;
	o.cache_dir = cache;
	o.parallel = 1;
	o.threads = threads;
	o.no_heat = 1;
	o.no_profiles = no_profiles;
	o.ctx = tokens + 64;
	coli_err err = { 0 };
	coli_engine *e = NULL;
	if (coli_engine_new(&o, &e, &err)) {
		fprintf(stderr, "profile_decode_bench: %s\n", err.msg);
		return -1;
	}
	static double t[MAX_TOKENS + 1], gap[MAX_TOKENS];
	const int prompt[8] = { 1, 17, 33, 49, 65, 81, 97, 113 };
	coli_gen_params p;
	coli_gen_params_default(&p);
	p.max_tokens = tokens;
	p.ignore_eos = 1;
	p.every_token = 1;
	coli_request *r = NULL;
	double med = -1;
	int n = 0;
	if (coli_engine_submit(e, prompt, 8, &p, &r, &err)) {
		fprintf(stderr, "profile_decode_bench: %s\n", err.msg);
		goto out;
	}
	coli_event ev;
	for (;;) {
		if (!coli_request_next(r, &ev, 600 * 1000))
			break;
		if (ev.kind != COLI_EV_TEXT)
			break;
		if (n <= MAX_TOKENS)
			t[n++] = coli_now_s();
	}
	if (ev.kind == COLI_EV_DONE && n > 2) {
		for (int i = 1; i < n; i++)
			gap[i - 1] = 1e3 * (t[i] - t[i - 1]);
		med = bench_median(gap, n - 1);
	} else {
		fprintf(stderr, "profile_decode_bench: the request ended after %d tokens (%s)\n", n, ev.message);
	}
	coli_request_free(r);
out:
	coli_engine_free(e);
	return med;
}

static void list(const double *v, int n)
{
	for (int i = 0; i < n; i++)
		printf("%s%.4f", i ? ", " : "", v[i]);
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: %s MODEL_DIR CACHE_DIR [ROUNDS [TOKENS [THREADS]]]\n", argv[0]);
		return 2;
	}
	int rounds = argc > 3 ? atoi(argv[3]) : 7, tokens = argc > 4 ? atoi(argv[4]) : 256;
	const int threads = argc > 5 ? atoi(argv[5]) : 1;
	if (rounds < 1 || rounds > MAX_ROUNDS || tokens < 3 || tokens > MAX_TOKENS) {
		fprintf(stderr, "profile_decode_bench: ROUNDS 1..%d, TOKENS 3..%d\n", MAX_ROUNDS, MAX_TOKENS);
		return 2;
	}
	double on[MAX_ROUNDS], off[MAX_ROUNDS], ratio[MAX_ROUNDS], s_on[MAX_ROUNDS], s_off[MAX_ROUNDS];
	run(argv[1], argv[2], 0, tokens, threads); /* warm the page cache and the allocator */
	for (int k = 0; k < rounds; k++) {
		/* alternate which goes first, so a drift favours neither */
		const int first_off = k % 2;
		double a = run(argv[1], argv[2], first_off, tokens, threads);
		double b = run(argv[1], argv[2], !first_off, tokens, threads);
		on[k] = first_off ? b : a;
		off[k] = first_off ? a : b;
		if (on[k] < 0 || off[k] < 0)
			return 1;
		ratio[k] = on[k] / off[k];
	}
	memcpy(s_on, on, sizeof(double) * (size_t)rounds);
	memcpy(s_off, off, sizeof(double) * (size_t)rounds);
	const double m_on = bench_median(s_on, rounds), m_off = bench_median(s_off, rounds);
	const double m_ratio = bench_median(ratio, rounds); /* sorts ratio */
	printf("{\"rounds\": %d, \"tokens\": %d, \"threads\": %d, \"profiles_on_ms\": [", rounds, tokens, threads);
	list(on, rounds);
	printf("], \"profiles_off_ms\": [");
	list(off, rounds);
	printf("], \"median_on_ms\": %.4f, \"median_off_ms\": %.4f, \"on_over_off\": %.4f, "
	       "\"median_paired_ratio\": %.4f, \"paired_ratio_min\": %.4f, \"paired_ratio_max\": %.4f}\n",
	       m_on, m_off, m_on / m_off, m_ratio, ratio[0], ratio[rounds - 1]);
	return 0;
}
