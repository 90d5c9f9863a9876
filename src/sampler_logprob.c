/* sampler_logprob.c - log-softmax statistics for OpenAI-style logprobs (see
 * engine.h). One pass for the maximum, one for the sum and the top k kept
 * in a small sorted array (k <= 20, so insertion is cheap next to the
 * vocabulary scan). */
#include "config.h"

#include <math.h>

#include "engine.h"

float coli_logprob_top(const float *logits, int n, int k, coli_logprob *out)
{
	if (k > COLI_MAX_TOP_LOGPROBS)
		k = COLI_MAX_TOP_LOGPROBS;
	if (k < 0)
		k = 0;
	float mx = -INFINITY;
	for (int i = 0; i < n; i++)
		if (logits[i] > mx)
			mx = logits[i];
	double sum = 0.0;
	int m = 0;
	for (int i = 0; i < n; i++) {
		sum += exp((double)logits[i] - mx);
		if (!k || (m == k && logits[i] <= out->top_logprob[m - 1]))
			continue;
		/* insert after equal values: the lower id stays first */
		int j = m < k ? m++ : k - 1;
		while (j > 0 && out->top_logprob[j - 1] < logits[i]) {
			out->top_logprob[j] = out->top_logprob[j - 1];
			out->top_id[j] = out->top_id[j - 1];
			j--;
		}
		out->top_logprob[j] = logits[i];
		out->top_id[j] = i;
	}
	float lse = mx + (float)log(sum);
	for (int j = 0; j < m; j++)
		out->top_logprob[j] -= lse;
	out->n_top = m;
	out->logprob = 0.0f;
	return lse;
}
