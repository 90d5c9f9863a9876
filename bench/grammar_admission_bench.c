/* grammar_admission_bench.c - does admitting a schema-constrained request
 * disturb the token cadence of a slot already decoding? Request B (read
 * to its end, one event per token) decodes in a fresh engine with two
 * slots; when it has produced AT tokens a second thread submits request A
 * (8 tokens) and reads it, in one of two situations:
 *
 *   plain        A is unconstrained
 *   constrained  A is constrained by a large schema given as text (the
 *                first constrained request of the engine: the vocabulary's
 *                mask table is built for it too)
 *
 * The figures are the largest gap between two consecutive tokens of B
 * over its run (after its first 5 tokens) and the largest of those that
 * overlap A's admission (from A's submit to A's first token), against the
 * same run with a plain A: work done on the engine thread at A's
 * admission shows up as one long gap; work done by the submitting thread
 * does not. The situations
 * alternate round by round (a fresh engine each time) so drift and other
 * load hit both alike. Prints one JSON line: per situation the median over
 * rounds of B's largest gap and of its median gap, in milliseconds, and
 * the time coli_engine_submit took for A.
 *
 *   grammar_admission_bench MODEL_DIR CACHE_DIR [ROUNDS [THREADS]]
 *
 * Figures, not assertions: never run by make check (bench/
 * grammar_admission.sh drives it; tests/engine_grammar_submit checks that
 * the engine thread compiles nothing). */
#include "config.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "engine.h"
#include "bench_stats.h"
#include "util_time.h"

#define MAX_ROUNDS 32
#define B_TOKENS 400
#define AT 100

/* An agent-tool-like schema: 48 properties of every kind the subset has
 * (patterns, formats, enums, bounded numbers, arrays of objects). */
static char *big_schema(void)
{
	size_t cap = 1 << 16, n = 0;
	char *s = malloc(cap);
	if (!s)
		return NULL;
	n += (size_t)snprintf(s + n, cap - n, "{\"type\":\"object\",\"properties\":{");
	for (int i = 0; i < 48; i++) {
		const char *sep = i ? "," : "";
		switch (i % 6) {
		case 0:
			n += (size_t)snprintf(s + n, cap - n, "%s\"id_%d\":{\"type\":\"string\",\"pattern\":"
					      "\"^[A-Z]{2,4}-[0-9]{3,6}(-[a-z]{1,3})?$\"}", sep, i);
			break;
		case 1:
			n += (size_t)snprintf(s + n, cap - n, "%s\"when_%d\":{\"type\":\"string\",\"format\":"
					      "\"date-time\"}", sep, i);
			break;
		case 2:
			n += (size_t)snprintf(s + n, cap - n, "%s\"kind_%d\":{\"enum\":[", sep, i);
			for (int k = 0; k < 40; k++)
				n += (size_t)snprintf(s + n, cap - n, "%s\"value_%d_%d\"", k ? "," : "", i, k);
			n += (size_t)snprintf(s + n, cap - n, "]}");
			break;
		case 3:
			n += (size_t)snprintf(s + n, cap - n, "%s\"amount_%d\":{\"type\":\"number\",\"minimum\":-1000,"
					      "\"exclusiveMaximum\":1000000}", sep, i);
			break;
		case 4:
			n += (size_t)snprintf(s + n, cap - n, "%s\"items_%d\":{\"type\":\"array\",\"maxItems\":8,"
					      "\"items\":{\"type\":\"object\",\"properties\":{\"name\":{\"type\":"
					      "\"string\",\"maxLength\":40},\"qty\":{\"type\":\"integer\",\"minimum\":0,"
					      "\"maximum\":999}},\"required\":[\"name\"],\"additionalProperties\":false}}",
					      sep, i);
			break;
		default:
			n += (size_t)snprintf(s + n, cap - n, "%s\"mail_%d\":{\"type\":\"string\",\"format\":"
					      "\"email\"}", sep, i);
			break;
		}
	}
	snprintf(s + n, cap - n, "},\"required\":[\"id_0\",\"kind_2\"],\"additionalProperties\":false}");
	return s;
}

struct side {
	coli_engine *e;
	const char *schema;        /* NULL: plain */
	double submit_s;
	double t0, t_first;        /* submit called; A's first token */
	int rc;
};

static void *run_a(void *arg)
{
	struct side *a = arg;
	static const int pa[] = { 1, 17, 33, 49 };
	coli_gen_params p;
	coli_gen_params_default(&p);
	p.max_tokens = 8;
	p.json_schema = a->schema;
	coli_request *r = NULL;
	coli_err err = { 0 };
	const double t0 = coli_now_s();
	a->t0 = t0;
	a->rc = coli_engine_submit(a->e, pa, 4, &p, &r, &err);
	a->submit_s = coli_now_s() - t0;
	if (a->rc) {
		fprintf(stderr, "grammar_admission_bench: A: %s\n", err.msg);
		return NULL;
	}
	coli_event ev;
	while (coli_request_next(r, &ev, 300 * 1000) && ev.kind == COLI_EV_TEXT)
		if (!a->t_first)
			a->t_first = coli_now_s();
	if (ev.kind != COLI_EV_DONE) {
		fprintf(stderr, "grammar_admission_bench: A: %s\n", ev.message);
		a->rc = -1;
	}
	coli_request_free(r);
	return NULL;
}

/* One run: B's largest and median gap, its largest gap while A was
 * being admitted (from A's submit to A's first token), A's submit time;
 * all in ms. */
static int one(const coli_engine_opts *o, const char *schema, double *max_gap, double *med_gap, double *adm_gap,
	       double *submit_ms)
{
	coli_err err = { 0 };
	coli_engine *e = NULL;
	if (coli_engine_new(o, &e, &err)) {
		fprintf(stderr, "grammar_admission_bench: %s\n", err.msg);
		return -1;
	}
	static const int pb[] = { 1, 5, 9 };
	coli_gen_params p;
	coli_gen_params_default(&p);
	p.max_tokens = B_TOKENS;
	p.ignore_eos = 1;
	p.every_token = 1;
	coli_request *b = NULL;
	struct side a = { .e = e, .schema = schema };
	pthread_t th;
	int started = 0, n = 0, rc = -1;
	static double t[B_TOKENS + 1], gaps[B_TOKENS];
	if (coli_engine_submit(e, pb, 3, &p, &b, &err)) {
		fprintf(stderr, "grammar_admission_bench: B: %s\n", err.msg);
		goto out;
	}
	coli_event ev;
	while (coli_request_next(b, &ev, 300 * 1000) && ev.kind == COLI_EV_TEXT) {
		if (n <= B_TOKENS)
			t[n] = coli_now_s();
		if (++n == AT && !started) {
			if (pthread_create(&th, NULL, run_a, &a))
				goto out;
			started = 1;
		}
	}
	if (ev.kind != COLI_EV_DONE || n < AT + 10) {
		fprintf(stderr, "grammar_admission_bench: B ended after %d tokens: %s\n", n, ev.message);
		goto out;
	}
	int g = 0;
	for (int i = 6; i < n && i <= B_TOKENS; i++)
		gaps[g++] = (t[i] - t[i - 1]) * 1e3;
	*max_gap = 0;
	for (int i = 0; i < g; i++)
		*max_gap = gaps[i] > *max_gap ? gaps[i] : *max_gap;
	*med_gap = bench_median(gaps, g);
	rc = 0;
out:
	if (started) {
		pthread_join(th, NULL);
		if (a.rc)
			rc = -1;
	}
	*adm_gap = 0;
	for (int i = 6; !rc && i < n && i <= B_TOKENS; i++)
		if (t[i] > a.t0 && t[i - 1] < a.t_first && (t[i] - t[i - 1]) * 1e3 > *adm_gap)
			*adm_gap = (t[i] - t[i - 1]) * 1e3;
	*submit_ms = a.submit_s * 1e3;
	coli_request_free(b);
	coli_engine_free(e);
	return rc;
}

int main(int argc, char **argv)
{
	if (argc < 3 || argc > 5) {
		fprintf(stderr, "usage: %s MODEL_DIR CACHE_DIR [ROUNDS [THREADS]]\n", argv[0]);
		return 2;
	}
	int rounds = argc > 3 ? atoi(argv[3]) : 7;
	if (rounds < 1 || rounds > MAX_ROUNDS)
		rounds = 7;
	coli_engine_opts o;
	coli_engine_opts_default(&o);
	o.model_dir = argv[1];
	o.cache_dir = argv[2];
	o.parallel = 2;
	o.ctx = 1024;
	o.no_heat = 1;
	o.draft = COLI_DRAFT_OFF;
	o.threads = argc > 4 ? atoi(argv[4]) : 1;
	char *schema = big_schema();
	if (!schema)
		return 1;
	double mx[2][MAX_ROUNDS], md[2][MAX_ROUNDS], ad[2][MAX_ROUNDS], sub[2][MAX_ROUNDS];
	int rc = 0;
	for (int r = 0; r < rounds && !rc; r++)
		for (int k = 0; k < 2 && !rc; k++) {
			int m = (r + k) % 2; /* the order turns each round */
			rc = one(&o, m ? schema : NULL, &mx[m][r], &md[m][r], &ad[m][r], &sub[m][r]);
		}
	const size_t schema_bytes = strlen(schema);
	free(schema);
	if (rc)
		return 1;
	printf("{\"rounds\":%d,\"threads\":%d,\"b_tokens\":%d,\"a_at\":%d,\"schema_bytes\":%zu,"
	       "\"plain\":{\"b_max_gap_ms\":%.3f,\"b_admission_gap_ms\":%.3f,\"b_median_gap_ms\":%.3f,"
	       "\"a_submit_ms\":%.3f},"
	       "\"constrained\":{\"b_max_gap_ms\":%.3f,\"b_admission_gap_ms\":%.3f,\"b_median_gap_ms\":%.3f,"
	       "\"a_submit_ms\":%.3f}}\n",
	       rounds, o.threads, B_TOKENS, AT, schema_bytes, bench_median(mx[0], rounds), bench_median(ad[0], rounds),
	       bench_median(md[0], rounds), bench_median(sub[0], rounds), bench_median(mx[1], rounds), bench_median(ad[1], rounds),
	       bench_median(md[1], rounds), bench_median(sub[1], rounds));
	return 0;
}
