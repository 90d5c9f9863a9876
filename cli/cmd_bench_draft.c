/* cmd_bench_draft.c - `coli bench --draft MODE`: decode speed with MTP drafting
 * against none, measured in one engine and interleaved (off, MODE, off,
 * MODE, ...) so both see the same machine. Each request gets its own
 * random prompt (no prefix reuse between them). Besides wall-clock
 * tokens/s, the process's CPU time per generated token (prompt included,
 * all threads): on a machine shared with other work wall time also counts
 * what the others took, CPU time mostly does not (with --threads 1 there
 * is no pool spinning in it either), so its ratio is the compute cost. */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cmd_bench_draft.h"
#include "util_time.h"

#define BENCH_DRAFT_ROUNDS 5

static int one(coli_engine *e, const int *toks, int n_prompt, int n_gen, int draft, double *tps, coli_err *err)
{
	coli_gen_params p;
	coli_gen_params_default(&p);
	p.max_tokens = n_gen;
	p.ignore_eos = 1;
	p.draft = draft;
	coli_request *r = NULL;
	int rc = coli_engine_submit(e, toks, n_prompt, &p, &r, err);
	coli_event ev;
	memset(&ev, 0, sizeof ev);
	while (!rc) {
		if (coli_request_next(r, &ev, -1) && ev.kind != COLI_EV_TEXT)
			break;
	}
	if (!rc && ev.kind == COLI_EV_ERROR)
		rc = coli_err_set(err, ev.error_code, "%s", ev.message);
	*tps = ev.decode_tps;
	coli_request_free(r);
	return rc;
}

void bench_random_tokens(uint64_t *rng, int *toks, long n, int vocab)
{
	uint64_t x = *rng;
	for (long i = 0; i < n; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		toks[i] = (int)(x % (uint64_t)vocab);
	}
	*rng = x;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

json_t *bench_draft_run(const coli_engine_opts *base, const char *dir, int n_prompt, int n_gen, int draft,
			uint64_t seed, coli_err *err)
{
	coli_engine_opts o = *base;
	o.model_dir = dir;
	o.draft = COLI_DRAFT_AUTO;   /* load the MTP module; each request says */
	o.parallel = 1;
	coli_engine *e = NULL;
	int *toks = malloc(sizeof(int) * (size_t)(n_prompt > 0 ? n_prompt : 1));
	json_t *out = NULL;
	if (!toks) {
		coli_err_set(err, -ENOMEM, "out of memory");
		return NULL;
	}
	if (coli_engine_new(&o, &e, err))
		goto done;
	const int V = coli_engine_config(e)->vocab_size;
	uint64_t rng = seed * 0x9e3779b97f4a7c15ULL + 7;
	double off[BENCH_DRAFT_ROUNDS], on[BENCH_DRAFT_ROUNDS];
	double off_cpu[BENCH_DRAFT_ROUNDS], on_cpu[BENCH_DRAFT_ROUNDS];
	coli_draft_stats s0, s1;
	unsigned long long drafted = 0, accepted = 0, steps = 0, tokens = 0;
	/* round -1 warms up (first touch of weights and experts), not counted */
	for (int round = -1; round < BENCH_DRAFT_ROUNDS; round++) {
		for (int mode = 0; mode < 2; mode++) {
			bench_random_tokens(&rng, toks, n_prompt, V);
			coli_engine_draft_stats(e, &s0);
			double tps = 0, c0 = coli_cpu_s();
			if (one(e, toks, n_prompt, n_gen, mode ? draft : COLI_DRAFT_OFF, &tps, err))
				goto done;
			double cpu_ms = 1000.0 * (coli_cpu_s() - c0) / n_gen;
			coli_engine_draft_stats(e, &s1);
			if (round < 0)
				continue;
			(mode ? on : off)[round] = tps;
			(mode ? on_cpu : off_cpu)[round] = cpu_ms;
			if (mode) {
				drafted += s1.drafted - s0.drafted;
				accepted += s1.accepted - s0.accepted;
				steps += s1.steps - s0.steps;
				tokens += s1.tokens - s0.tokens;
			}
		}
	}
	qsort(off, BENCH_DRAFT_ROUNDS, sizeof *off, cmp_double);
	qsort(on, BENCH_DRAFT_ROUNDS, sizeof *on, cmp_double);
	qsort(off_cpu, BENCH_DRAFT_ROUNDS, sizeof *off_cpu, cmp_double);
	qsort(on_cpu, BENCH_DRAFT_ROUNDS, sizeof *on_cpu, cmp_double);
	const double med_off = off[BENCH_DRAFT_ROUNDS / 2], med_on = on[BENCH_DRAFT_ROUNDS / 2];
	const double cpu_off = off_cpu[BENCH_DRAFT_ROUNDS / 2], cpu_on = on_cpu[BENCH_DRAFT_ROUNDS / 2];
	char name[16];
	out = json_object();
	json_object_set_new(out, "mode", json_string(coli_draft_name(draft, name, sizeof name)));
	json_object_set_new(out, "rounds", json_integer(BENCH_DRAFT_ROUNDS));
	json_object_set_new(out, "tokens", json_integer(n_gen));
	json_object_set_new(out, "off_tokens_per_s", json_real(med_off));
	json_object_set_new(out, "draft_tokens_per_s", json_real(med_on));
	json_object_set_new(out, "ratio", med_off > 0 ? json_real(med_on / med_off) : json_null());
	json_object_set_new(out, "off_cpu_ms_per_token", json_real(cpu_off));
	json_object_set_new(out, "draft_cpu_ms_per_token", json_real(cpu_on));
	/* tokens per CPU second, drafting over not */
	json_object_set_new(out, "cpu_ratio", cpu_on > 0 ? json_real(cpu_off / cpu_on) : json_null());
	json_object_set_new(out, "drafted", json_integer((json_int_t)drafted));
	json_object_set_new(out, "accepted", json_integer((json_int_t)accepted));
	json_object_set_new(out, "acceptance", drafted ? json_real((double)accepted / drafted) : json_null());
	json_object_set_new(out, "tokens_per_forward", steps ? json_real((double)tokens / (double)steps) : json_null());
	json_object_set_new(out, "reason", json_string(s1.reason));
done:
	coli_engine_free(e);
	free(toks);
	return out;
}
