/* dsa_bench.c - decode time of a DSA model at a given context, sparse
 * (the lightning indexer selects index_topk keys) against dense MLA over
 * the same context, in one process (bench/dsa_decode.sh drives it).
 *
 *   dsa_bench MODEL_DIR CTX [GEN [THREADS]]
 *
 * The expert store takes its options from the environment
 * (COLI_EXPERT_CACHE etc., expert_store_opts_from_env).
 *
 * Two states hold the same CTX rows of random numbers instead of a prefill
 * (a 32k-token prefill of a GLM-5-shaped layer takes hours on a small
 * machine; attention and the indexer cost the same whatever the numbers):
 * one for the model as it is (sparse), one for the same model with the
 * indexer switched off in memory (index_topk 0, no layer runs it, no index
 * keys kept: dense MLA over every key). Then GEN tokens are decoded
 * greedily on each, interleaved token by token (sparse, dense, sparse,
 * ...), so a burst of load from other processes hits both sides alike.
 * Each side's figure is its fastest token (other processes only ever add
 * time; the first tokens also pay reads of experts), split into
 * indexer, attention (its projections included, the indexer not),
 * experts (MoE), dense FFN and the rest; and each side's least CPU time
 * for a token (the process's, every thread: with THREADS 1 it is the
 * work itself, which time slices taken by other processes do not
 * inflate; the ratio the crossover is read from). Also printed: the peak
 * RSS (getrusage, VmHWM) next to its bound, dense weights + expert store
 * budget (pin + cache + scratch records) + the KV both states hold in
 * RAM, plus 10%. Figures, not assertions: never run by make check. */
#include "config.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "model_container.h"
#include "expert_store_stats.h"
#include "expert_store.h"
#include "model.h"
#include "util_time.h"

struct run {
	double total, indexer, attention, moe, dense;
	double cpu; /* CPU time of the process (every thread) for the token */
};

static uint64_t rng;

static float rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (float)((double)(rng >> 11) / 9007199254740992.0 * 2.0 - 1.0);
}

/* The model as side k sees it: 0 sparse (its indexer), 1 dense MLA. */
static void configure(coli_model *m, int k, int topk, const int *full)
{
	m->cfg.index_topk = k ? 0 : topk;
	for (int l = 0; l < m->cfg.num_hidden_layers; l++)
		m->layers[l].has_indexer = k ? 0 : full[l];
}

/* A state for the model as configured, ctx random rows (the same numbers
 * for both sides: the same seed), room for gen + 1 more; *kv gets the
 * bytes of KV it holds. */
static int fill_state(coli_model *m, int ctx, int gen, coli_state **out, double *kv, coli_err *err)
{
	const coli_config *c = &m->cfg;
	const int W = coli_config_kv_width(c), cap = ctx + gen + 1;
	int rc = coli_state_new(m, cap, 1, out, err);
	if (rc)
		return rc;
	*kv = (double)cap * (double)coli_config_kv_token_numbers(c) * sizeof(float);
	coli_seq *q = coli_state_seq(*out);
	rng = 0x9e3779b97f4a7c15ull;
	for (int l = 0; l < c->num_hidden_layers; l++) {
		float *kvr = coli_seq_kv(q, l), *ik = coli_seq_index_keys(q, l);
		for (size_t i = 0; i < (size_t)ctx * W; i++)
			kvr[i] = rnd();
		for (size_t i = 0; ik && i < (size_t)ctx * c->index_head_dim; i++)
			ik[i] = rnd();
	}
	return coli_seq_set_window(q, 0, ctx, err);
}

static int argmax(const float *v, int n)
{
	int best = 0;
	for (int i = 1; i < n; i++)
		best = v[i] > v[best] ? i : best;
	return best;
}

static int cmp_total(const void *a, const void *b)
{
	const struct run *x = a, *y = b;
	return (x->total > y->total) - (x->total < y->total);
}

static void print_run(const char *name, const struct run *r)
{
	printf("\"%s\":{\"ms_per_token\":%.2f,\"indexer_ms\":%.2f,\"attention_ms\":%.2f,\"experts_ms\":%.2f,"
	       "\"dense_ffn_ms\":%.2f,\"other_ms\":%.2f}", name, r->total, r->indexer, r->attention, r->moe, r->dense,
	       r->total - r->indexer - r->attention - r->moe - r->dense);
}

int main(int argc, char **argv)
{
	if (argc < 3 || argc > 5) {
		fprintf(stderr, "usage: %s MODEL_DIR CTX [GEN [THREADS]]\n", argv[0]);
		return 2;
	}
	const int ctx = atoi(argv[2]), gen = argc > 3 ? atoi(argv[3]) : 8;
	coli_model_opts o;
	coli_model_opts_default(&o);
	o.threads = argc > 4 ? atoi(argv[4]) : 0;
	coli_err err = { 0 };
	coli_model *m = NULL;
	coli_state *s[2] = { NULL, NULL };
	struct run *runs[2] = { NULL, NULL };
	float *logits = NULL;
	int *full = NULL, tok[2] = { 1, 1 }, rc = 1;
	double kv[2] = { 0, 0 };
	if (ctx < 1 || gen < 1) {
		fprintf(stderr, "dsa_bench: CTX and GEN must be positive\n");
		return 2;
	}
	if (expert_store_opts_from_env(&o.store, &err) || coli_model_open(argv[1], &o, &m, &err))
		goto fail;
	if (!coli_config_has_indexer(&m->cfg)) {
		fprintf(stderr, "dsa_bench: %s has no DSA indexer\n", argv[1]);
		goto out;
	}
	const int topk = m->cfg.index_topk, L = m->cfg.num_hidden_layers, V = m->cfg.vocab_size;
	full = calloc((size_t)L, sizeof *full);
	logits = malloc(sizeof(float) * (size_t)V);
	runs[0] = calloc((size_t)gen, sizeof *runs[0]);
	runs[1] = calloc((size_t)gen, sizeof *runs[1]);
	if (!full || !logits || !runs[0] || !runs[1]) {
		fprintf(stderr, "dsa_bench: out of memory\n");
		goto out;
	}
	for (int l = 0; l < L; l++)
		full[l] = m->layers[l].has_indexer;
	for (int k = 0; k < 2; k++) {
		configure(m, k, topk, full);
		if (fill_state(m, ctx, gen, &s[k], &kv[k], &err))
			goto fail;
		/* one step untimed each: first touches of weights and experts */
		if (coli_forward(m, s[k], &tok[k], 1, logits, 0, &err))
			goto fail;
		tok[k] = argmax(logits, V);
	}
	for (int i = 0; i < gen; i++)
		for (int k = 0; k < 2; k++) {
			configure(m, k, topk, full);
			const coli_timing t0 = *coli_state_timing(s[k]);
			const double c0 = coli_cpu_s() * 1e3;
			if (coli_forward(m, s[k], &tok[k], 1, logits, 0, &err))
				goto fail;
			const double c1 = coli_cpu_s() * 1e3;
			tok[k] = argmax(logits, V);
			const coli_timing *t1 = coli_state_timing(s[k]);
			struct run *r = &runs[k][i];
			r->total = (t1->total - t0.total) * 1e3;
			r->indexer = (t1->indexer - t0.indexer) * 1e3;
			r->attention = (t1->attention - t0.attention) * 1e3 - r->indexer;
			r->moe = (t1->moe - t0.moe) * 1e3;
			r->dense = (t1->dense_ffn - t0.dense_ffn) * 1e3;
			r->cpu = c1 - c0;
		}
	configure(m, 0, topk, full);
	double cpu[2] = { runs[0][0].cpu, runs[1][0].cpu };
	for (int k = 0; k < 2; k++)
		for (int i = 1; i < gen; i++)
			cpu[k] = runs[k][i].cpu < cpu[k] ? runs[k][i].cpu : cpu[k];
	qsort(runs[0], (size_t)gen, sizeof *runs[0], cmp_total);
	qsort(runs[1], (size_t)gen, sizeof *runs[1], cmp_total);
	const struct run *sparse = &runs[0][0], *dense = &runs[1][0];
	/* the bound: dense weights + the store's budget + both states' KV */
	expert_stats_summary st;
	expert_stats_snapshot(expert_store_stats(m->store), &st);
	const double mib = 1024.0 * 1024.0, dense_w = (double)m->container->dense_bytes;
	const double experts = (double)(st.budget_pin + st.budget_cache + st.budget_scratch);
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	const double peak = ru.ru_maxrss / 1024.0, bound = (dense_w + experts + kv[0] + kv[1]) * 1.10 / mib;
	printf("{\"ctx\":%d,\"gen\":%d,\"index_topk\":%d,\"sparse_median_ms\":%.2f,\"dense_median_ms\":%.2f,", ctx, gen,
	       topk, runs[0][gen / 2].total, runs[1][gen / 2].total);
	print_run("sparse", sparse);
	printf(",");
	print_run("dense", dense);
	printf(",\"sparse_cpu_ms\":%.2f,\"dense_cpu_ms\":%.2f,\"dense_over_sparse_cpu\":%.3f", cpu[0], cpu[1],
	       cpu[1] / cpu[0]);
	printf(",\"dense_over_sparse\":%.3f,\"peak_rss_mib\":%.0f,\"rss_bound_mib\":%.0f,\"dense_mib\":%.0f,"
	       "\"expert_budget_mib\":%.0f,\"kv_ram_mib\":%.0f,\"kv_sparse_mib\":%.0f,\"rss_within_bound\":%s}\n",
	       dense->total / sparse->total, peak, bound, dense_w / mib, experts / mib, (kv[0] + kv[1]) / mib,
	       kv[0] / mib, peak <= bound ? "true" : "false");
	rc = 0;
	goto out;
fail:
	fprintf(stderr, "dsa_bench: %s\n", err.msg);
out:
	coli_state_free(s[0]);
	coli_state_free(s[1]);
	free(runs[0]);
	free(runs[1]);
	free(logits);
	free(full);
	coli_model_free(m);
	return rc;
}
