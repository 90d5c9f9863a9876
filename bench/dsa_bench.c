/* dsa_bench.c - decode time of a DSA model at a given context, sparse
 * (the lightning indexer selects index_topk keys) against dense MLA over
 * the same context, in one process (bench/dsa_decode.sh drives it).
 *
 *   dsa_bench MODEL_DIR CTX [GEN [THREADS]]
 *
 * The KV cache is filled with CTX rows of random numbers instead of a
 * prefill (a 32k-token prefill of a GLM-5-shaped layer takes hours on a
 * small machine; attention and the indexer cost the same whatever the
 * numbers), then GEN tokens are decoded greedily. Dense MLA is the same
 * model with the indexer switched off in memory (index_topk 0, no layer
 * runs it; the cached rows are then 576 numbers wide); the two alternate,
 * twice each, and the faster run of each is reported. Prints one JSON
 * line: ms/token split into indexer, attention (without the indexer),
 * experts (MoE) and the rest, for both, and the peak RSS. Figures, not
 * assertions: never run by make check. */
#include "config.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "model.h"

struct run {
	double total, indexer, attention, moe, dense;
};

#define REPS 2

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static float rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (float)((double)(rng >> 11) / 9007199254740992.0 * 2.0 - 1.0);
}

static int decode(coli_model *m, int ctx, int gen, struct run *r, coli_err *err)
{
	coli_state *s = NULL;
	const coli_config *c = &m->cfg;
	const int W = coli_config_kv_width(c), V = c->vocab_size;
	float *logits = malloc(sizeof(float) * (size_t)V);
	int rc = logits ? coli_state_new(m, ctx + gen + 1, 1, &s, err) : coli_err_set(err, -ENOMEM, "out of memory");
	if (rc)
		goto out;
	coli_seq *q = coli_state_seq(s);
	for (int l = 0; l < c->num_hidden_layers; l++) {
		float *kv = coli_seq_kv(q, l), *ik = coli_seq_index_keys(q, l);
		for (size_t i = 0; i < (size_t)ctx * W; i++)
			kv[i] = rnd();
		for (size_t i = 0; ik && i < (size_t)ctx * c->index_head_dim; i++)
			ik[i] = rnd();
	}
	if ((rc = coli_seq_set_window(q, 0, ctx, err)))
		goto out;
	int tok = 1;
	/* one step untimed: first touches of the weights and experts */
	if ((rc = coli_forward(m, s, &tok, 1, logits, 0, err)))
		goto out;
	const coli_timing t0 = *coli_state_timing(s);
	for (int i = 0; i < gen; i++) {
		int best = 0;
		for (int v = 1; v < V; v++)
			best = logits[v] > logits[best] ? v : best;
		tok = best;
		if ((rc = coli_forward(m, s, &tok, 1, logits, 0, err)))
			goto out;
	}
	const coli_timing *t1 = coli_state_timing(s);
	const double per = 1000.0 / gen;
	r->total = (t1->total - t0.total) * per;
	r->indexer = (t1->indexer - t0.indexer) * per;
	r->attention = (t1->attention - t0.attention) * per - r->indexer;
	r->moe = (t1->moe - t0.moe) * per;
	r->dense = (t1->dense_ffn - t0.dense_ffn) * per;
out:
	coli_state_free(s);
	free(logits);
	return rc;
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
	struct run sparse = { 0 }, dense = { 0 };
	if (ctx < 1 || gen < 1) {
		fprintf(stderr, "dsa_bench: CTX and GEN must be positive\n");
		return 2;
	}
	if (coli_model_open(argv[1], &o, &m, &err))
		goto fail;
	if (!coli_config_has_indexer(&m->cfg)) {
		fprintf(stderr, "dsa_bench: %s has no DSA indexer\n", argv[1]);
		coli_model_free(m);
		return 1;
	}
	const int topk = m->cfg.index_topk, L = m->cfg.num_hidden_layers;
	int *full = calloc((size_t)L, sizeof *full);
	if (!full)
		return 1;
	for (int l = 0; l < L; l++)
		full[l] = m->layers[l].has_indexer;
	/* sparse and dense alternate, REPS times each; the fastest run of
	 * each counts (other processes only ever add time) */
	for (int rep = 0; rep < REPS; rep++)
		for (int k = 0; k < 2; k++) {
			/* k = 1: the same model without its indexer, dense MLA over
			 * every key */
			m->cfg.index_topk = k ? 0 : topk;
			for (int l = 0; l < L; l++)
				m->layers[l].has_indexer = k ? 0 : full[l];
			struct run r;
			if (decode(m, ctx, gen, &r, &err)) {
				free(full);
				goto fail;
			}
			struct run *best = k ? &dense : &sparse;
			if (rep == 0 || r.total < best->total)
				*best = r;
		}
	free(full);
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	printf("{\"ctx\":%d,\"gen\":%d,\"index_topk\":%d,", ctx, gen, topk);
	print_run("sparse", &sparse);
	printf(",");
	print_run("dense", &dense);
	printf(",\"dense_over_sparse\":%.3f,\"peak_rss_mib\":%.0f}\n", dense.total / sparse.total,
	       ru.ru_maxrss / 1024.0);
	coli_model_free(m);
	return 0;
fail:
	fprintf(stderr, "dsa_bench: %s\n", err.msg);
	coli_model_free(m);
	return 1;
}
