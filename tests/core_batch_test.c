/* Batched decode: several sequences decoded together in one step
 * (coli_forward_seqs) give bit-identical logits to each sequence decoded
 * alone, whatever the batch composition, and routed experts are fetched
 * once per step for the whole batch.  Usage: core_batch_test MODEL_DIR */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"
#include "sampler.h"

#define NSEQ 3
#define STEPS 6

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: %s MODEL_DIR\n", argv[0]);
		return 2;
	}
	coli_err err = { 0 };
	coli_model *m = NULL;
	coli_state *s = NULL;
	coli_seq *seq[NSEQ] = { 0 };
	int fail = 0;
	if (coli_model_open(argv[1], NULL, &m, &err) || coli_state_new(m, 64, 8, &s, &err)) {
		fprintf(stderr, "FAIL: %s\n", err.msg);
		return 1;
	}
	const int V = m->cfg.vocab_size;
	float *alone = malloc(sizeof(float) * V * NSEQ * STEPS);
	float *batched = malloc(sizeof(float) * V * NSEQ);
	float *pre = malloc(sizeof(float) * V);
	const int prompts[NSEQ][4] = { { 1, 5, 9, 200 }, { 7, 7 }, { 300, 2, 44 } };
	const int plen[NSEQ] = { 4, 2, 3 };
	int toks[NSEQ][STEPS + 1];
	/* reference: each sequence alone, greedy */
	for (int i = 0; i < NSEQ; i++) {
		coli_seq *q;
		if (coli_seq_new(m, 64, &q, &err) ||
		    coli_forward_seq(m, s, q, prompts[i], plen[i], pre, 0, &err)) {
			fprintf(stderr, "FAIL: %s\n", err.msg);
			return 1;
		}
		toks[i][0] = coli_argmax(pre, V);
		for (int t = 0; t < STEPS; t++) {
			float *out = alone + ((size_t)i * STEPS + t) * V;
			if (coli_forward_seq(m, s, q, &toks[i][t], 1, out, 0, &err)) {
				fprintf(stderr, "FAIL: %s\n", err.msg);
				return 1;
			}
			toks[i][t + 1] = coli_argmax(out, V);
		}
		coli_seq_free(q);
	}
	/* batched: the same sequences stepped together; sequence 1 joins one
	 * step late to vary the batch composition */
	for (int i = 0; i < NSEQ; i++)
		if (coli_seq_new(m, 64, &seq[i], &err) ||
		    coli_forward_seq(m, s, seq[i], prompts[i], plen[i], pre, 0, &err)) {
			fprintf(stderr, "FAIL: %s\n", err.msg);
			return 1;
		}
	int next[NSEQ] = { 0, 0, 0 };
	for (int step = 0; step < STEPS + 1; step++) {
		coli_seq *batch[NSEQ];
		int bt[NSEQ], who[NSEQ], n = 0;
		for (int i = 0; i < NSEQ; i++) {
			if (next[i] >= STEPS || (i == 1 && step == 0))
				continue;
			batch[n] = seq[i];
			bt[n] = toks[i][next[i]];
			who[n++] = i;
		}
		if (!n)
			break;
		if (coli_forward_seqs(m, s, batch, bt, n, batched, &err)) {
			fprintf(stderr, "FAIL: %s\n", err.msg);
			return 1;
		}
		for (int k = 0; k < n; k++) {
			int i = who[k];
			if (memcmp(batched + (size_t)k * V, alone + ((size_t)i * STEPS + next[i]) * V,
				   sizeof(float) * V)) {
				fprintf(stderr, "FAIL: sequence %d step %d differs in a batch of %d\n", i, next[i], n);
				fail = 1;
			}
			next[i]++;
		}
	}
	/* a sequence may not appear twice in one step */
	coli_seq *dup[2] = { seq[0], seq[0] };
	int two[2] = { 1, 2 };
	if (coli_forward_seqs(m, s, dup, two, 2, batched, &err) == 0) {
		fprintf(stderr, "FAIL: duplicate sequence accepted\n");
		fail = 1;
	}
	for (int i = 0; i < NSEQ; i++)
		coli_seq_free(seq[i]);
	free(alone);
	free(batched);
	free(pre);
	coli_state_free(s);
	coli_model_free(m);
	if (!fail)
		printf("batched decode: %d sequences x %d steps bit-identical to decoding alone\n", NSEQ, STEPS);
	return fail;
}
