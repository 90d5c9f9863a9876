/* indexer_precision.c - how often the DSA indexer's key selection changes
 * with the precision of its projections (wq_b, wk): the same token
 * sequence through a reference container (indexer f32) and others that
 * differ from it only there (bench/indexer_precision.sh makes them).
 *
 *   indexer_precision REF_MODEL MODEL... [-p 2048,4096,8192] [-w 16] [-g 32]
 *                     [-s SEED] [-t THREADS]
 *
 * For each sample point P the rows at positions P .. P+W-1 are fed one at
 * a time (the state keeps the last row's selection per layer:
 * coli_state_trace_index), the tokens between points in one prefill call.
 * Every row of every layer that selects (context above index_topk) is
 * compared with the reference's: overlap = |A & B| / |A| (both hold
 * index_topk keys), Jaccard = |A & B| / |A | B|, and whether the sets
 * differ at all. Since each container attends over its own selections,
 * the hidden states drift apart too: the figure is the end-to-end effect,
 * as a serving stack would see it. Then -g tokens are decoded greedily
 * from the end and compared with the reference's position by position.
 *
 * One line per MODEL and point, then the greedy agreement; a figure, not
 * an assertion: never run by make check. */
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "model.h"

#define MAX_POINTS 8

struct trace {
	int *sel;   /* (points, window, layers, topk) */
	int *n;     /* (points, window, layers), -1: dense or no indexer */
	int *gen;   /* (gen) greedy tokens */
};

struct cfg {
	int points[MAX_POINTS], n_points, window, gen, threads, topk, layers;
	uint64_t seed;
};

static int argmax(const float *v, int n)
{
	int b = 0;
	for (int i = 1; i < n; i++)
		if (v[i] > v[b])
			b = i;
	return b;
}

/* The sequence: xorshift64 over the vocabulary, the same for every model. */
static void make_tokens(int *t, int n, int vocab, uint64_t seed)
{
	uint64_t x = seed ? seed : 1;
	for (int i = 0; i < n; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		t[i] = (int)(x % (uint64_t)vocab);
	}
}

static int run_model(const char *dir, struct cfg *g, int is_ref, struct trace *tr)
{
	coli_model_opts o;
	coli_model_opts_default(&o);
	o.threads = g->threads;
	coli_err err = { 0, "" };
	coli_model *m = NULL;
	coli_state *s = NULL;
	float *logits = NULL;
	int *tok = NULL, rc = -1;
	if (coli_model_open(dir, &o, &m, &err) < 0)
		goto fail;
	if (is_ref) {
		g->topk = m->cfg.index_topk;
		g->layers = m->cfg.num_hidden_layers;
	} else if (m->cfg.index_topk != g->topk || m->cfg.num_hidden_layers != g->layers) {
		fprintf(stderr, "indexer_precision: %s: not the reference's shape\n", dir);
		goto out;
	}
	const int last = g->points[g->n_points - 1] + g->window, cap = last + g->gen + 1;
	const int V = m->cfg.vocab_size, L = g->layers, K = g->topk;
	if (K <= 0) {
		fprintf(stderr, "indexer_precision: %s has no DSA indexer\n", dir);
		goto out;
	}
	if (coli_state_new(m, cap, 16, &s, &err) < 0)
		goto fail;
	if (coli_state_trace_index(s) < 0) {
		fprintf(stderr, "indexer_precision: out of memory\n");
		goto out;
	}
	const size_t rows = (size_t)g->n_points * (size_t)g->window * (size_t)L;
	tr->sel = malloc(rows * (size_t)K * sizeof(int));
	tr->n = malloc(rows * sizeof(int));
	tr->gen = malloc((size_t)(g->gen + 1) * sizeof(int));
	tok = malloc((size_t)last * sizeof(int));
	logits = malloc((size_t)V * sizeof(float));
	if (!tr->sel || !tr->n || !tr->gen || !tok || !logits) {
		fprintf(stderr, "indexer_precision: out of memory\n");
		goto out;
	}
	make_tokens(tok, last, V, g->seed);
	int pos = 0;
	for (int p = 0; p < g->n_points; p++) {
		const int P = g->points[p];
		if (P > pos && coli_forward(m, s, tok + pos, P - pos, NULL, 0, &err) < 0)
			goto fail;
		pos = P > pos ? P : pos;
		for (int r = 0; r < g->window; r++, pos++) {
			if (coli_forward(m, s, tok + pos, 1, logits, 0, &err) < 0)
				goto fail;
			for (int l = 0; l < L; l++) {
				size_t row = ((size_t)p * (size_t)g->window + (size_t)r) * (size_t)L + (size_t)l;
				int n;
				const int *sel = coli_state_index_selection(s, l, &n);
				tr->n[row] = sel ? n : -1;
				if (sel)
					memcpy(tr->sel + row * (size_t)K, sel, (size_t)n * sizeof(int));
			}
		}
	}
	/* greedy from the last window's logits */
	for (int i = 0; i < g->gen; i++) {
		int t = argmax(logits, V);
		tr->gen[i] = t;
		if (coli_forward(m, s, &t, 1, logits, 0, &err) < 0)
			goto fail;
	}
	rc = 0;
	goto out;
fail:
	fprintf(stderr, "indexer_precision: %s: %s\n", dir, err.msg);
out:
	free(tok);
	free(logits);
	coli_state_free(s);
	coli_model_free(m);
	return rc;
}

/* |A & B| of two ascending lists */
static int common(const int *a, int na, const int *b, int nb)
{
	int i = 0, j = 0, c = 0;
	while (i < na && j < nb) {
		if (a[i] == b[j]) {
			c++;
			i++;
			j++;
		} else if (a[i] < b[j]) {
			i++;
		} else {
			j++;
		}
	}
	return c;
}

static void compare(const char *name, const struct cfg *g, const struct trace *ref,
		    const struct trace *t)
{
	const int L = g->layers, K = g->topk;
	for (int p = 0; p < g->n_points; p++) {
		double ov = 0, jac = 0;
		int rows = 0, differ = 0, keys = 0, lost = 0;
		for (int r = 0; r < g->window; r++)
			for (int l = 0; l < L; l++) {
				size_t row = ((size_t)p * (size_t)g->window + (size_t)r) * (size_t)L + (size_t)l;
				int na = ref->n[row], nb = t->n[row];
				if (na < 0 && nb < 0)
					continue;
				if (na < 0 || nb < 0) { /* cannot happen with one shape */
					rows++;
					differ++;
					continue;
				}
				int c = common(ref->sel + row * (size_t)K, na, t->sel + row * (size_t)K, nb);
				rows++;
				keys += na;
				lost += na - c;
				differ += c != na || c != nb;
				ov += na ? (double)c / na : 1.0;
				jac += na + nb - c ? (double)c / (na + nb - c) : 1.0;
			}
		if (!rows) {
			printf("%-12s %6d  no selecting rows (context within index_topk %d)\n", name,
			       g->points[p], K);
			continue;
		}
		printf("%-12s %6d %5d %9.5f %9.5f %9.5f %11.3f%%\n", name, g->points[p], rows,
		       ov / rows, jac / rows, (double)differ / rows, keys ? 100.0 * lost / keys : 0.0);
	}
	int same = 0, first = g->gen;
	for (int i = 0; i < g->gen; i++) {
		if (ref->gen[i] == t->gen[i])
			same++;
		else if (first == g->gen)
			first = i;
	}
	printf("%-12s greedy: %d of %d tokens equal, first difference at %d\n", name, same, g->gen,
	       first);
}

static int parse_points(const char *s, struct cfg *g)
{
	g->n_points = 0;
	while (*s) {
		char *end;
		long v = strtol(s, &end, 10);
		if (end == s || v < 1 || v > 1 << 20 || g->n_points == MAX_POINTS ||
		    (g->n_points && v <= g->points[g->n_points - 1]))
			return -1;
		g->points[g->n_points++] = (int)v;
		s = *end == ',' ? end + 1 : end;
		if (*end && *end != ',')
			return -1;
	}
	return g->n_points ? 0 : -1;
}

int main(int argc, char **argv)
{
	struct cfg g = { .window = 16, .gen = 32, .threads = 1, .seed = 0x5eed };
	int c;
	parse_points("2048,4096,8192", &g);
	while ((c = getopt(argc, argv, "p:w:g:s:t:")) != -1) {
		switch (c) {
		case 'p':
			if (parse_points(optarg, &g) < 0) {
				fprintf(stderr, "indexer_precision: -p: ascending positions, a comma between\n");
				return 2;
			}
			break;
		case 'w': g.window = atoi(optarg); break;
		case 'g': g.gen = atoi(optarg); break;
		case 's': g.seed = strtoull(optarg, NULL, 0); break;
		case 't': g.threads = atoi(optarg); break;
		default: goto usage;
		}
	}
	if (argc - optind < 2 || g.window < 1 || g.gen < 0)
		goto usage;
	struct trace ref = { 0 };
	if (run_model(argv[optind], &g, 1, &ref) < 0)
		return 1;
	printf("reference %s: index_topk %d, %d layers, rows P..P+%d at each point P\n",
	       argv[optind], g.topk, g.layers, g.window - 1);
	printf("%-12s %6s %5s %9s %9s %9s %12s\n", "model", "point", "rows", "overlap", "jaccard",
	       "differ", "keys_changed");
	int rc = 0;
	for (int i = optind + 1; i < argc; i++) {
		struct trace t = { 0 };
		const char *b = strrchr(argv[i], '/');
		if (run_model(argv[i], &g, 0, &t) < 0)
			rc = 1;
		else
			compare(b && b[1] ? b + 1 : argv[i], &g, &ref, &t);
		free(t.sel);
		free(t.n);
		free(t.gen);
		fflush(stdout);
	}
	free(ref.sel);
	free(ref.n);
	free(ref.gen);
	return rc;
usage:
	fprintf(stderr, "usage: indexer_precision REF_MODEL MODEL... [-p P1,P2,..] [-w W] [-g N] "
			"[-s SEED] [-t THREADS]\n");
	return 2;
}
