/* Sampler: greedy picks the lowest id on ties; seeded sampling is
 * reproducible; top-p never picks outside the nucleus; temperature 0 is
 * greedy. */
#include "config.h"

#include <stdio.h>

#include "sampler.h"
#include "test_util.h"

int main(void)
{
	float logits[8] = { 0.1f, 2.0f, 2.0f, -1.0f, 1.5f, 0.0f, -3.0f, 1.9f };
	CHECK(coli_argmax(logits, 8) == 1, "argmax tie -> lowest id");
	coli_sampler s;
	coli_err err = { 0 };
	CHECK(coli_sampler_init(&s, 8, 0.0f, 1.0f, 1, &err) == 0, "init");
	CHECK(coli_sampler_sample(&s, logits) == 1, "temperature 0 is greedy");
	/* same seed -> same sequence */
	int a[64], b[64];
	coli_sampler_reset(&s, 1.0f, 1.0f, 42);
	for (int i = 0; i < 64; i++)
		a[i] = coli_sampler_sample(&s, logits);
	coli_sampler_reset(&s, 1.0f, 1.0f, 42);
	for (int i = 0; i < 64; i++)
		b[i] = coli_sampler_sample(&s, logits);
	int same = 1, distinct = 0;
	for (int i = 0; i < 64; i++) {
		same &= a[i] == b[i];
		distinct |= a[i] != a[0];
	}
	CHECK(same, "seeded sampling reproducible");
	CHECK(distinct, "temperature 1 samples more than one token");
	/* top-p 0.5: probabilities are 0.26 (ids 1, 2), 0.235 (id 7), ...;
	 * the smallest set reaching 0.5 is {1, 2} */
	coli_sampler_reset(&s, 1.0f, 0.5f, 7);
	for (int i = 0; i < 500; i++) {
		int t = coli_sampler_sample(&s, logits);
		CHECK(t == 1 || t == 2, "top-p stays in the nucleus {1, 2}");
		if (!(t == 1 || t == 2))
			break;
	}
	/* top_p 0 and top_p below the top token's probability keep only the
	 * top token: greedy at any temperature and seed */
	const float tps[3] = { 0.0f, 1e-6f, 0.2f };
	for (int k = 0; k < 3; k++)
		for (uint64_t seed = 0; seed < 64; seed++) {
			coli_sampler_reset(&s, 1.0f, tps[k], seed);
			int t = coli_sampler_sample(&s, logits);
			if (t != 1) {
				fprintf(stderr, "top_p %g seed %llu -> %d\n", (double)tps[k],
					(unsigned long long)seed, t);
				CHECK(0, "top_p <= the top token's probability is greedy");
				break;
			}
		}
	float dist[8];
	coli_sampler_reset(&s, 1.0f, 0.0f, 3);
	coli_sampler_dist(&s, logits, dist);
	CHECK(dist[1] == 1.0f && dist[2] == 0.0f, "top_p 0 dist is one-hot on the argmax");
	coli_sampler_free(&s);
	/* a near-uniform distribution over many tokens with top_p < 1/n: the
	 * top token used to fall under the pre-sort cutoff ((1-p)/(n-1)), leaving
	 * an empty nucleus */
	enum { NV = 1000 };
	static float flat[NV];
	for (int i = 0; i < NV; i++)
		flat[i] = 0.0f;
	flat[417] = 1e-4f;
	CHECK(coli_sampler_init(&s, NV, 1.0f, 1e-4f, 5, &err) == 0, "init flat");
	for (uint64_t seed = 0; seed < 16; seed++) {
		coli_sampler_reset(&s, 1.0f, 1e-4f, seed);
		CHECK(coli_sampler_sample(&s, flat) == 417, "flat: top token alone");
	}
	coli_sampler_free(&s);
	return test_summary(__FILE__);
}
