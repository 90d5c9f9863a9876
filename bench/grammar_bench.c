/* grammar_bench - the cost of the structured-output token mask per step.
 *
 *   bench/grammar_bench TOKENIZER (model dir or tokenizer.json) [STEPS] [SEED]
 *
 * Walks documents under a few schemas (an extraction record, nested arrays
 * of objects, enums and formats, free text): at every step the mask over
 * the whole vocabulary is computed (timed: thread CPU time), then a random
 * allowed token is fed, preferring the more common short tokens the way a
 * model would. Prints one JSON object: vocabulary size, steps, and the mean,
 * median, 99th percentile and maximum microseconds per mask. The decode
 * step it is compared with comes from `coli bench` (bench/grammar_mask.sh). */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "grammar.h"
#include "grammar_mask.h"
#include "tokenizer.h"
#include "util_time.h"
#include "bench_stats.h"

static const char *const schemas[] = {
	"{\"type\":\"object\",\"properties\":{\"party_a\":{\"type\":\"string\"},\"party_b\":{\"type\":\"string\"},"
	"\"signed\":{\"type\":\"string\",\"format\":\"date\"},\"value\":{\"type\":\"number\"},\"currency\":"
	"{\"enum\":[\"EUR\",\"USD\",\"GBP\"]},\"clauses\":{\"type\":\"array\",\"items\":{\"type\":\"string\"}}},"
	"\"required\":[\"party_a\",\"party_b\",\"signed\",\"value\",\"currency\",\"clauses\"],"
	"\"additionalProperties\":false}",
	"{\"type\":\"array\",\"items\":{\"type\":\"object\",\"properties\":{\"id\":{\"type\":\"integer\"},"
	"\"tags\":{\"type\":\"array\",\"items\":{\"enum\":[\"red\",\"green\",\"blue\"]}},\"ok\":{\"type\":"
	"\"boolean\"},\"note\":{\"anyOf\":[{\"type\":\"string\"},{\"type\":\"null\"}]}},\"required\":[\"id\","
	"\"tags\",\"ok\",\"note\"],\"additionalProperties\":false},\"maxItems\":4}",
	"{\"type\":\"object\"}",
};

static uint64_t rng = 88172645463325252ull;
static uint64_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: grammar_bench TOKENIZER [STEPS] [SEED]\n");
		return 2;
	}
	int steps = argc > 2 ? atoi(argv[2]) : 2000;
	if (argc > 3)
		rng += strtoull(argv[3], NULL, 10) * 0x9e3779b97f4a7c15ull;
	coli_err err = { 0 };
	coli_tokenizer *t = NULL;
	size_t al = strlen(argv[1]);
	int rc = al > 5 && !strcmp(argv[1] + al - 5, ".json") ? coli_tokenizer_load(argv[1], &t, &err)
							     : coli_tokenizer_load_dir(argv[1], &t, &err);
	if (rc) {
		fprintf(stderr, "grammar_bench: %s\n", err.msg);
		return 1;
	}
	const int V = coli_tokenizer_vocab_size(t);
	int eos = coli_tokenizer_eos_id(t);
	grammar_vocab *v = NULL;
	uint64_t *mask = calloc((size_t)(V + 63) / 64, sizeof *mask);
	int *allowed = malloc(sizeof(int) * (size_t)V);
	double *us = malloc(sizeof(double) * (size_t)steps);
	if (!mask || !allowed || !us || grammar_vocab_new(t, V, &eos, 1, &v, &err)) {
		fprintf(stderr, "grammar_bench: %s\n", err.msg[0] ? err.msg : "out of memory");
		return 1;
	}
	const int ns = (int)(sizeof schemas / sizeof schemas[0]);
	coli_grammar *g[3] = { 0 };
	for (int i = 0; i < ns; i++)
		if (grammar_compile_schema(schemas[i], strlen(schemas[i]), "schema", &g[i], &err)) {
			fprintf(stderr, "grammar_bench: %s\n", err.msg);
			return 1;
		}
	grammar_matcher *m = NULL;
	int which = 0, docs = 0, len = 0;
	grammar_matcher_new(g[0], &m, &err);
	double total = 0;
	for (int s = 0; s < steps; s++) {
		double t0 = coli_thread_cpu_s() * 1e6;
		int n = grammar_mask_compute(v, m, mask);
		us[s] = coli_thread_cpu_s() * 1e6 - t0;
		total += us[s];
		int k = 0;
		for (int id = 0; id < V; id++)
			if ((mask[id >> 6] >> (id & 63)) & 1)
				allowed[k++] = id;
		/* end a long document when it may end; otherwise a random token,
		 * biased towards low ids (the frequent merges) */
		int tok = -1;
		if ((n == 0 || k == 0 || (len > 60 && grammar_matcher_accepts(m))) ||
		    !grammar_matcher_can_continue(m)) {
			tok = eos;
		} else {
			int a = allowed[rnd() % (uint64_t)k], b = allowed[rnd() % (uint64_t)k];
			tok = a < b ? a : b;
			if (len > 200) /* steer long documents to an end */
				for (int i = 0; i < k; i++) {
					size_t bl = 0;
					const uint8_t *bb = coli_tokenizer_token_bytes(t, allowed[i], &bl);
					if (bb && bl == 1 && (bb[0] == '"' || bb[0] == '}' || bb[0] == ']')) {
						tok = allowed[i];
						break;
					}
				}
		}
		if (tok == eos || grammar_mask_feed(v, m, tok)) {
			docs++;
			len = 0;
			which = (which + 1) % ns;
			grammar_matcher_free(m);
			m = NULL;
			grammar_matcher_new(g[which], &m, &err);
			continue;
		}
		len++;
	}
	bench_sort(us, steps);
	printf("{\"tokenizer\":\"%s\",\"vocab\":%d,\"steps\":%d,\"documents\":%d,\"mask_us_mean\":%.1f,"
	       "\"mask_us_p50\":%.1f,\"mask_us_p99\":%.1f,\"mask_us_max\":%.1f}\n",
	       argv[1], V, steps, docs, total / steps, us[steps / 2], us[steps * 99 / 100], us[steps - 1]);
	grammar_matcher_free(m);
	for (int i = 0; i < ns; i++)
		grammar_free(g[i]);
	grammar_vocab_free(v);
	coli_tokenizer_free(t);
	free(mask);
	free(allowed);
	free(us);
	return 0;
}
