/* session_admission_bench.c - does the number of saved sessions slow down
 * the admission of a request without a session? With prefix sharing on
 * (--share-session-prefixes), admission looks for the saved session
 * sharing the longest prefix with the prompt; the engine keeps that
 * index in memory, a thread of its own follows the directory, and
 * admission only looks up (kv_prefix_index.h), so the cost should not
 * grow with the number of session files.
 *
 * Three engines on the same model, with 10, 100 and 1,000 saved sessions
 * of 16 tokens each in their cache directories (made by the engine
 * itself for the 1,000; the smaller sets are hard links to the first of
 * them). Each round sends one short request without a session to each
 * engine, in an order that turns every round, and records its time to
 * first token (admission + a 4-token prefill + one step; the engine's own
 * ttft_ms). Beside it, the lookup alone: kv_prefix_index_lookup on an
 * index of each directory kept as the engine keeps it (watched).
 *
 * Prints one JSON line: median TTFT and median lookup per size, and the
 * ratios 1,000 / 10 (the claim: flat, i.e. TTFT ratio <= FLAT_BOUND).
 *
 *   session_admission_bench MODEL_DIR WORK_DIR [ROUNDS [THREADS]]
 *
 * WORK_DIR must not exist (it is created and left for inspection). Figures,
 * not assertions: never run by make check (bench/session_admission.sh
 * drives it). */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "engine.h"
#include "kv_store.h"
#include "util_time.h"
#include "bench_stats.h"

#define N_SIZES 3
#define MAX_ROUNDS 200
#define SESSION_TOKENS 16
/* "flat": TTFT beside 1,000 sessions at most this times TTFT beside 10 */
#define FLAT_BOUND 1.2

static const int sizes[N_SIZES] = { 10, 100, 1000 };

/* Run one request to its end; the engine's TTFT in *ttft_ms. */
static int run(coli_engine *e, const int *prompt, int n, const char *session, double *ttft_ms)
{
	coli_gen_params p;
	coli_gen_params_default(&p);
	p.max_tokens = 1;
	p.ignore_eos = 1;
	p.session = session;
	coli_request *r = NULL;
	coli_err err = { 0 };
	coli_event ev;
	int rc = -1;
	if (coli_engine_submit(e, prompt, n, &p, &r, &err)) {
		fprintf(stderr, "session_admission_bench: %s\n", err.msg);
		return -1;
	}
	for (;;) {
		if (!coli_request_next(r, &ev, 300 * 1000))
			break;
		if (ev.kind == COLI_EV_TEXT)
			continue;
		if (ev.kind == COLI_EV_DONE && !ev.message[0]) {
			if (ttft_ms)
				*ttft_ms = ev.ttft_ms;
			rc = 0;
		} else {
			fprintf(stderr, "session_admission_bench: %s\n", ev.message);
		}
		break;
	}
	coli_request_free(r);
	return rc;
}

static int new_engine(const char *model, const char *cache, int threads, coli_engine **e)
{
	coli_engine_opts o;
	coli_engine_opts_default(&o);
	o.model_dir = model;
	o.cache_dir = cache;
	o.parallel = 1;
	o.ctx = 256;
	o.threads = threads;
	o.share_session_prefixes = 1;
	coli_err err = { 0 };
	if (coli_engine_new(&o, e, &err)) {
		fprintf(stderr, "session_admission_bench: %s\n", err.msg);
		return -1;
	}
	return 0;
}

/* Hard-link the files of sessions s0000..s(N-1) from FROM into TO. */
static int link_sessions(const char *from, const char *to, int n)
{
	DIR *d = opendir(from);
	if (!d || (mkdir(to, 0700) && errno != EEXIST)) {
		perror(d ? to : from);
		if (d)
			closedir(d);
		return -1;
	}
	struct dirent *de;
	int linked = 0;
	while ((de = readdir(d))) {
		int k;
		char a[PATH_MAX + 256], b[PATH_MAX + 256];
		if (sscanf(de->d_name, "s%4d", &k) != 1 || k >= n)
			continue;
		snprintf(a, sizeof a, "%s/%s", from, de->d_name);
		snprintf(b, sizeof b, "%s/%s", to, de->d_name);
		if (link(a, b)) {
			perror(b);
			closedir(d);
			return -1;
		}
		linked++;
	}
	closedir(d);
	return linked > 0 ? 0 : -1;
}

int main(int argc, char **argv)
{
	if (argc < 3 || argc > 5) {
		fprintf(stderr, "usage: %s MODEL_DIR WORK_DIR [ROUNDS [THREADS]]\n", argv[0]);
		return 2;
	}
	const char *model = argv[1], *work = argv[2];
	int rounds = argc > 3 ? atoi(argv[3]) : 30;
	int threads = argc > 4 ? atoi(argv[4]) : 2;
	if (rounds < 1 || rounds > MAX_ROUNDS)
		rounds = 30;
	if (mkdir(work, 0700)) {
		perror(work);
		return 1;
	}
	coli_engine *e[N_SIZES] = { 0 };
	char cache[N_SIZES][PATH_MAX], kv[N_SIZES][PATH_MAX];
	int rc = 1;
	double t0 = coli_now_s();
	for (int i = N_SIZES - 1; i >= 0; i--) {
		snprintf(cache[i], sizeof cache[i], "%s/cache-%d", work, sizes[i]);
		if (new_engine(model, cache[i], threads, &e[i]))
			goto out;
		snprintf(kv[i], sizeof kv[i], "%s/kv", coli_engine_cache_dir(e[i]));
		if (i == N_SIZES - 1) {
			/* the largest set, saved by the engine: distinct prompts
			 * whose first token no measured prompt starts with */
			for (int s = 0; s < sizes[i]; s++) {
				int prompt[SESSION_TOKENS];
				char name[16];
				for (int t = 0; t < SESSION_TOKENS; t++)
					prompt[t] = 10 + (s * 7 + t * 13) % 200;
				snprintf(name, sizeof name, "s%04d", s);
				if (run(e[i], prompt, SESSION_TOKENS, name, NULL))
					goto out;
			}
		} else if (link_sessions(kv[N_SIZES - 1], kv[i], sizes[i])) {
			goto out;
		}
	}
	double t_made = coli_now_s() - t0;

	static const int probe[] = { 3, 4, 5, 6 };
	double ttft[N_SIZES][MAX_ROUNDS], look[N_SIZES][MAX_ROUNDS];
	/* one warm-up request each: the index is built on first use */
	for (int i = 0; i < N_SIZES; i++)
		if (run(e[i], probe, 4, NULL, &ttft[i][0]))
			goto out;
	for (int r = 0; r < rounds; r++)
		for (int k = 0; k < N_SIZES; k++) {
			int i = (r + k) % N_SIZES;
			if (run(e[i], probe, 4, NULL, &ttft[i][r]))
				goto out;
		}
	/* the lookup alone, warm, as admission calls it */
	for (int i = 0; i < N_SIZES; i++) {
		kv_prefix_index *ix = NULL;
		coli_err err = { 0 };
		char name[KV_NAME_MAX + 1];
		int match;
		/* no fingerprint: every entry's tokens are compared (all are
		 * this model's; the engine compares the same entries) */
		const char *fp = NULL;
		if (kv_prefix_index_new(kv[i], &ix, &err) || kv_prefix_index_watch(ix, &err)) {
			fprintf(stderr, "session_admission_bench: %s\n", err.msg);
			kv_prefix_index_free(ix);
			goto out;
		}
		for (int r = 0; r < rounds; r++) {
			double a = coli_now_s();
			kv_prefix_index_lookup(ix, fp, probe, 4, name, sizeof name, &match);
			look[i][r] = (coli_now_s() - a) * 1e6;
		}
		kv_prefix_index_free(ix);
	}
	double mt[N_SIZES], ml[N_SIZES];
	for (int i = 0; i < N_SIZES; i++) {
		mt[i] = bench_median(ttft[i], rounds);
		ml[i] = bench_median(look[i], rounds);
	}
	const double ratio = mt[2] / mt[0];
	printf("{\"rounds\":%d,\"threads\":%d,\"sessions\":[%d,%d,%d],\"setup_s\":%.1f,"
	       "\"ttft_ms\":[%.3f,%.3f,%.3f],\"lookup_us\":[%.2f,%.2f,%.2f],"
	       "\"ttft_ratio_1000_to_10\":%.3f,\"lookup_ratio_1000_to_10\":%.2f,"
	       "\"flat_bound\":%.1f,\"flat\":%s}\n",
	       rounds, threads, sizes[0], sizes[1], sizes[2], t_made, mt[0], mt[1], mt[2], ml[0], ml[1],
	       ml[2], ratio, ml[2] / ml[0], FLAT_BOUND, ratio <= FLAT_BOUND ? "true" : "false");
	rc = 0;
out:
	for (int i = 0; i < N_SIZES; i++)
		coli_engine_free(e[i]);
	return rc;
}
