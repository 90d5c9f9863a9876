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
	coli_sampler_free(&s);
	return test_summary(__FILE__);
}
