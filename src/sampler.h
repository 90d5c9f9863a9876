/* sampler.h - next-token choice: greedy, or temperature + top-p with a
 * seeded generator (same seed, same logits -> same token). */
#ifndef COLI_SAMPLER_H
#define COLI_SAMPLER_H

#include <stdint.h>

#include "coli_err.h"

typedef struct coli_sampler {
	int vocab;
	float temperature;   /* 0 = greedy */
	float top_p;         /* [0, 1]; 1 = off, 0 = the top token only */
	uint64_t rng;        /* xorshift64* state */
	float *prob;         /* (vocab) scratch */
	int *idx;            /* (vocab) scratch */
} coli_sampler;

int coli_sampler_init(coli_sampler *s, int vocab, float temperature, float top_p, uint64_t seed,
		      coli_err *err);
void coli_sampler_reset(coli_sampler *s, float temperature, float top_p, uint64_t seed);
void coli_sampler_free(coli_sampler *s);
/* Largest logit; ties go to the lowest id. */
int coli_argmax(const float *logits, int n);
int coli_sampler_sample(coli_sampler *s, const float *logits);

/* For speculative sampling (engine_draft.c): the distribution sample()
 * draws from (temperature, then the top-p nucleus renormalized; one-hot at
 * the argmax when greedy) written to probs (vocab) without using the
 * generator; a uniform number in [0, 1) from the generator; a draw from
 * probs, which need not sum to 1 (normalized here; all zero: the argmax). */
void coli_sampler_dist(coli_sampler *s, const float *logits, float *probs);
float coli_sampler_uniform(coli_sampler *s);
int coli_sampler_draw(coli_sampler *s, const float *probs);

#endif
