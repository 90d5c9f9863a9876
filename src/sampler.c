/* sampler.c - see sampler.h. */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>

#include "sampler.h"

int coli_sampler_init(coli_sampler *s, int vocab, float temperature, float top_p, uint64_t seed,
		      coli_err *err)
{
	s->vocab = vocab;
	s->prob = malloc(sizeof(float) * (size_t)vocab);
	s->idx = malloc(sizeof(int) * (size_t)vocab);
	if (!s->prob || !s->idx) {
		coli_sampler_free(s);
		return coli_err_set(err, -ENOMEM, "out of memory (sampler)");
	}
	coli_sampler_reset(s, temperature, top_p, seed);
	return 0;
}

void coli_sampler_reset(coli_sampler *s, float temperature, float top_p, uint64_t seed)
{
	s->temperature = temperature;
	/* 0 (or a NaN) keeps only the top token, as any top_p below the top
	 * token's probability does; >= 1 is off */
	s->top_p = top_p < 1.0f ? (top_p > 0.0f ? top_p : 0.0f) : 1.0f;
	/* splitmix64 of the seed, so seed 0 is a valid state */
	uint64_t z = seed + 0x9e3779b97f4a7c15ULL;
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	s->rng = (z ^ (z >> 31)) | 1;
}

void coli_sampler_free(coli_sampler *s)
{
	free(s->prob);
	free(s->idx);
	s->prob = NULL;
	s->idx = NULL;
}

int coli_argmax(const float *logits, int n)
{
	int best = 0;
	for (int i = 1; i < n; i++)
		if (logits[i] > logits[best])
			best = i;
	return best;
}

static float rng_uniform(coli_sampler *s)
{
	s->rng ^= s->rng >> 12;
	s->rng ^= s->rng << 25;
	s->rng ^= s->rng >> 27;
	return (float)((s->rng * 0x2545F4914F6CDD1DULL) >> 40) / 16777216.0f;
}

static int cmp_prob_desc(const void *a, const void *b, void *ctx)
{
	const float *p = ctx;
	float x = p[*(const int *)a], y = p[*(const int *)b];
	if (x != y)
		return x > y ? -1 : 1;
	return *(const int *)a - *(const int *)b;
}

/* Sort the nucleus of p (the smallest prefix of the tokens by descending
 * probability whose mass exceeds top_p; the top token alone when top_p is
 * 0 or below its probability) into s->idx[0..last]; returns last and its
 * mass in *cum.  Only tokens that can be in it are sorted: a token whose
 * higher-ranked mass is <= top_p leaves >= 1 - top_p for itself and the at
 * most n tokens ranked below it, so its probability is >= (1 - top_p) / n.
 * The argmax always passes that test (it is >= 1/n), so the set is never
 * empty. */
static int nucleus(coli_sampler *s, const float *p, float *cum)
{
	const int n = s->vocab;
	const float cutoff = (1.0f - s->top_p) / (float)n;
	int m = 0, top = coli_argmax(p, n);
	for (int i = 0; i < n; i++)
		if (p[i] >= cutoff || i == top)
			s->idx[m++] = i;
	qsort_r(s->idx, (size_t)m, sizeof(int), cmp_prob_desc, (void *)p);
	float c = 0.0f;
	int last = m - 1;
	for (int i = 0; i < m; i++) {
		c += p[s->idx[i]];
		if (c > s->top_p) {
			last = i;
			break;
		}
	}
	*cum = c;
	return last;
}

int coli_sampler_sample(coli_sampler *s, const float *logits)
{
	const int n = s->vocab;
	if (s->temperature <= 0.0f)
		return coli_argmax(logits, n);
	const float mx = logits[coli_argmax(logits, n)];
	double sum = 0.0;
	for (int i = 0; i < n; i++) {
		s->prob[i] = expf((logits[i] - mx) / s->temperature);
		sum += s->prob[i];
	}
	for (int i = 0; i < n; i++)
		s->prob[i] = (float)(s->prob[i] / sum);
	float r = rng_uniform(s);
	if (s->top_p >= 1.0f) {
		float acc = 0.0f;
		for (int i = 0; i < n; i++) {
			acc += s->prob[i];
			if (r < acc)
				return i;
		}
		return n - 1;
	}
	float cum;
	int last = nucleus(s, s->prob, &cum);
	float target = r * cum, acc = 0.0f;
	for (int i = 0; i <= last; i++) {
		acc += s->prob[s->idx[i]];
		if (target < acc)
			return s->idx[i];
	}
	return s->idx[last];
}

float coli_sampler_uniform(coli_sampler *s)
{
	return rng_uniform(s);
}

void coli_sampler_dist(coli_sampler *s, const float *logits, float *probs)
{
	const int n = s->vocab;
	if (s->temperature <= 0.0f) {
		for (int i = 0; i < n; i++)
			probs[i] = 0.0f;
		probs[coli_argmax(logits, n)] = 1.0f;
		return;
	}
	const float mx = logits[coli_argmax(logits, n)];
	double sum = 0.0;
	for (int i = 0; i < n; i++) {
		probs[i] = expf((logits[i] - mx) / s->temperature);
		sum += probs[i];
	}
	for (int i = 0; i < n; i++)
		probs[i] = (float)(probs[i] / sum);
	if (s->top_p >= 1.0f)
		return;
	/* the nucleus as coli_sampler_sample chooses it, renormalized */
	float cum;
	int last = nucleus(s, probs, &cum);
	/* s->prob marks the kept tokens */
	for (int i = 0; i < n; i++)
		s->prob[i] = 0.0f;
	for (int i = 0; i <= last; i++)
		s->prob[s->idx[i]] = 1.0f;
	for (int i = 0; i < n; i++)
		probs[i] = s->prob[i] != 0.0f ? probs[i] / cum : 0.0f;
}

int coli_sampler_draw(coli_sampler *s, const float *probs)
{
	const int n = s->vocab;
	double sum = 0.0;
	int last = -1;
	for (int i = 0; i < n; i++)
		if (probs[i] > 0.0f) {
			sum += probs[i];
			last = i;
		}
	if (last < 0)
		return coli_argmax(probs, n);
	double target = (double)rng_uniform(s) * sum, acc = 0.0;
	for (int i = 0; i < n; i++) {
		acc += probs[i];
		if (target < acc && probs[i] > 0.0f)
			return i;
	}
	return last;
}
