/* cmd_atlas_out.c - the reports of `coli atlas` (text, JSON, CSV). */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cli.h"
#include "cli_print.h"
#include "cmd_atlas.h"

static int print_json(json_t *j)
{
	if (cli_print_json(j, JSON_COMPACT | JSON_PRESERVE_ORDER)) {
		cli_errorf("atlas", "out of memory");
		return COLI_EXIT_FAIL;
	}
	return COLI_EXIT_OK;
}

/* "42" for a count, "12.5" for heat */
static const char *num(char *buf, size_t cap, double v, int heat)
{
	snprintf(buf, cap, heat ? "%.3f" : "%.0f", v);
	return buf;
}

int atlas_show(const atlas_opts *o, const atlas_grid *g)
{
	const int E = g->n_experts, K = g->top_k > 0 ? g->top_k : o->heat_k > 0 ? o->heat_k : 8;
	const int top = o->top < E ? o->top : E;
	int *order = malloc(sizeof(int) * (size_t)E);
	json_t *layers = o->fmt == ATLAS_JSON ? json_array() : NULL;
	if (!order)
		return COLI_EXIT_FAIL;
	if (o->fmt == ATLAS_TEXT) {
		if (g->is_heat)
			printf("%s: learned routing heat (decayed routing counts), %d layers x %d experts\n", g->name,
			       g->n_layers, E);
		else
			printf("%s: %.0f tokens, %.0f requests, %d layers x %d experts, top-%d routing\n", g->name,
			       g->tokens, g->requests, g->n_layers, E, g->top_k);
		char kk[16];
		snprintf(kk, sizeof kk, "top-%d", K);
		printf("%-5s %10s %9s %8s  %s\n", "layer", g->is_heat ? "heat" : "routings", kk, "entropy",
		       "top experts (share of the layer)");
	} else if (o->fmt == ATLAS_CSV) {
		puts("layer,rank,expert,value,share,concentration,entropy_bits");
	}
	char b[64];
	for (int l = 0; l < g->n_layers; l++) {
		double conc, h;
		if (!atlas_layer_stats(g, l, K, &conc, &h))
			continue;
		const double t = atlas_layer_total(g, l);
		const double *v = g->v + (size_t)l * E;
		atlas_layer_rank(g, l, order);
		if (o->fmt == ATLAS_TEXT) {
			printf("%-5d %10s %8.1f%% %8.3f ", l, num(b, sizeof b, t, g->is_heat), 100 * conc, h);
			for (int i = 0; i < top; i++)
				printf(" e%d %.1f%%", order[i], 100 * v[order[i]] / t);
			putchar('\n');
		} else if (o->fmt == ATLAS_CSV) {
			for (int i = 0; i < top; i++)
				printf("%d,%d,%d,%s,%.6f,%.6f,%.6f\n", l, i + 1, order[i],
				       num(b, sizeof b, v[order[i]], g->is_heat), v[order[i]] / t, conc, h);
		} else {
			json_t *tj = json_array();
			for (int i = 0; i < top; i++)
				json_array_append_new(tj, json_pack("{s:i, s:f, s:f}", "expert", order[i], "value",
								    v[order[i]], "share", v[order[i]] / t));
			json_array_append_new(layers, json_pack("{s:i, s:f, s:f, s:f, s:o}", "layer", l, "total", t,
								"concentration", conc, "entropy_bits", h, "top", tj));
		}
	}
	free(order);
	if (o->fmt != ATLAS_JSON)
		return COLI_EXIT_OK;
	return print_json(json_pack("{s:s, s:s, s:f, s:f, s:i, s:i, s:i, s:s, s:o}", "profile", g->name, "kind",
				    g->is_heat ? "heat" : "profile", "tokens", g->tokens, "requests", g->requests,
				    "n_layers", g->n_layers, "n_experts", E, "top_k", g->top_k, "fingerprint",
				    g->fingerprint, "layers", layers));
}

static json_t *cmp_json(const atlas_cmp *c)
{
	return json_pack("{s:i, s:i, s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:f}", "layer", c->layer, "expert", c->expert,
			 "a_count", c->a, "a_rows", c->na, "a_rate", c->na > 0 ? c->a / c->na : 0, "b_count", c->b,
			 "b_rows", c->nb, "b_rate", c->nb > 0 ? c->b / c->nb : 0, "log_odds", c->log_odds, "z", c->z);
}

static void cmp_row(const atlas_cmp *c)
{
	printf("%-5d %6d %9.0f %7.3f %9.0f %7.3f %9.3f %8.2f\n", c->layer, c->expert, c->a,
	       c->na > 0 ? c->a / c->na : 0, c->b, c->nb > 0 ? c->b / c->nb : 0, c->log_odds, c->z);
}

int atlas_compare_out(const atlas_opts *o, const atlas_grid *a, const atlas_grid *b)
{
	if (a->is_heat || b->is_heat) {
		cli_errorf("atlas", "compare takes two profiles: heat has no counts to test");
		return COLI_EXIT_USAGE;
	}
	const size_t cells = (size_t)a->n_layers * (size_t)a->n_experts;
	atlas_cmp *c = malloc(sizeof *c * (cells ? cells : 1));
	if (!c)
		return COLI_EXIT_FAIL;
	const int n = atlas_compare(a, b, c);
	atlas_cmp_sort(c, n);
	const int top = o->top < n ? o->top : n;
	int status = COLI_EXIT_OK;
	if (o->fmt == ATLAS_CSV) {
		puts("layer,expert,a_count,a_rows,b_count,b_rows,log_odds,z");
		for (int i = 0; i < n; i++)
			printf("%d,%d,%.0f,%.0f,%.0f,%.0f,%.6f,%.6f\n", c[i].layer, c[i].expert, c[i].a, c[i].na, c[i].b,
			       c[i].nb, c[i].log_odds, c[i].z);
	} else if (o->fmt == ATLAS_JSON) {
		json_t *ja = json_array(), *jb = json_array();
		for (int i = 0; i < top; i++) {
			if (c[i].z > 0)
				json_array_append_new(ja, cmp_json(&c[i]));
			if (c[n - 1 - i].z < 0)
				json_array_append_new(jb, cmp_json(&c[n - 1 - i]));
		}
		status = print_json(json_pack("{s:s, s:s, s:f, s:f, s:s, s:o, s:o}", "a", a->name, "b", b->name,
					      "a_tokens", a->tokens, "b_tokens", b->tokens, "score",
					      "log odds ratio with 0.5 per cell (Haldane-Anscombe), z = log odds / "
					      "Woolf standard error", "a_specific", ja, "b_specific", jb));
	} else {
		printf("%s (%.0f tokens) against %s (%.0f tokens): log odds ratio of choosing the expert,\n"
		       "0.5 added per cell, and z = log odds / its standard error (|z| >= 3.3: p < 0.001)\n",
		       a->name, a->tokens, b->name, b->tokens);
		const char *hdr = "layer expert   A count  A rate   B count  B rate  log odds        z\n";
		printf("\nmore often in %s:\n%s", a->name, hdr);
		for (int i = 0; i < top && c[i].z > 0; i++)
			cmp_row(&c[i]);
		printf("\nmore often in %s:\n%s", b->name, hdr);
		for (int i = 0; i < top && c[n - 1 - i].z < 0; i++)
			cmp_row(&c[n - 1 - i]);
	}
	free(c);
	return status;
}

int atlas_clusters_of(const atlas_opts *o, const atlas_grid *const *g, int n, int *cluster, int *favour)
{
	return atlas_cluster(g, n, o->clusters, cluster, favour);
}

int atlas_cluster_out(const atlas_opts *o, const atlas_grid *const *g, int n)
{
	const int L = g[0]->n_layers, E = g[0]->n_experts;
	int *cluster = malloc(sizeof(int) * (size_t)L * (size_t)E), favour[64], *order = malloc(sizeof(int) * (size_t)E);
	const int m = cluster && order ? atlas_clusters_of(o, g, n, cluster, favour) : -1;
	if (m < 0) {
		free(cluster);
		free(order);
		cli_errorf("atlas", "out of memory");
		return COLI_EXIT_FAIL;
	}
	int status = COLI_EXIT_OK;
	if (o->fmt == ATLAS_CSV) {
		puts("layer,expert,cluster,favours");
		for (int l = 0; l < L; l++)
			for (int e = 0; e < E; e++)
				if (cluster[l * E + e] >= 0)
					printf("%d,%d,%d,%s\n", l, e, cluster[l * E + e], g[favour[cluster[l * E + e]]]->name);
	} else if (o->fmt == ATLAS_JSON) {
		json_t *names = json_array(), *cl = json_array(), *ord = json_array();
		for (int p = 0; p < n; p++)
			json_array_append_new(names, json_string(g[p]->name));
		for (int c = 0; c < m; c++) {
			json_t *mem = json_array();
			for (int l = 0; l < L; l++)
				for (int e = 0; e < E; e++)
					if (cluster[l * E + e] == c)
						json_array_append_new(mem, json_pack("[i, i]", l, e));
			json_array_append_new(cl, json_pack("{s:i, s:s, s:i, s:o}", "id", c, "favours",
							    g[favour[c]]->name, "size", (int)json_array_size(mem),
							    "members", mem));
		}
		for (int l = 0; l < L; l++) {
			json_t *row = json_array();
			if (cluster[l * E] >= 0) {
				atlas_cluster_order(cluster, E, l, order);
				for (int e = 0; e < E; e++)
					json_array_append_new(row, json_integer(order[e]));
			}
			json_array_append_new(ord, row);
		}
		status = print_json(json_pack("{s:o, s:o, s:o}", "profiles", names, "clusters", cl, "order", ord));
	} else {
		printf("%d cluster(s) of the experts of %d profile(s) by co-activation across them\n", m, n);
		for (int c = 0; c < m; c++) {
			int size = 0;
			for (int i = 0; i < L * E; i++)
				size += cluster[i] == c;
			printf("cluster %d: %d experts, used most by %s:", c, size, g[favour[c]]->name);
			for (int l = 0; l < L; l++)
				for (int e = 0; e < E; e++)
					if (cluster[l * E + e] == c)
						printf(" %d:%d", l, e);
			putchar('\n');
		}
	}
	free(cluster);
	free(order);
	return status;
}
