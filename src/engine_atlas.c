/* engine_atlas.c - see engine_atlas.h. */
#include "config.h"

#include "engine_atlas.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KMEANS_ROUNDS 50

void atlas_grid_free(atlas_grid *g)
{
	if (!g)
		return;
	free(g->v);
	g->v = NULL;
}

int atlas_grid_from_profile(const coli_profile *p, const char *name, atlas_grid *g, coli_err *err)
{
	memset(g, 0, sizeof *g);
	const size_t m = (size_t)p->n_layers * (size_t)p->n_experts;
	if (!(g->v = malloc(sizeof(double) * (m ? m : 1))))
		return coli_err_set(err, -ENOMEM, "out of memory");
	for (size_t i = 0; i < m; i++)
		g->v[i] = (double)p->counts[i];
	g->n_layers = p->n_layers;
	g->n_experts = p->n_experts;
	g->top_k = p->top_k;
	g->tokens = (double)p->tokens;
	g->requests = (double)p->requests;
	snprintf(g->fingerprint, sizeof g->fingerprint, "%s", p->fingerprint);
	snprintf(g->name, sizeof g->name, "%s", name);
	return 0;
}

double atlas_layer_total(const atlas_grid *g, int l)
{
	double t = 0;
	for (int e = 0; e < g->n_experts; e++)
		t += g->v[(size_t)l * g->n_experts + e];
	return t;
}

/* (value, id) pairs sorted without shared state: colitop ranks and
 * orders on two threads */
typedef struct rank_item {
	double v;
	int id;
} rank_item;

static int rank_cmp(const void *x, const void *y)
{
	const rank_item *a = x, *b = y;
	if (a->v != b->v)
		return a->v < b->v ? 1 : -1;
	return a->id - b->id;
}

void atlas_layer_rank(const atlas_grid *g, int l, int *order)
{
	const int E = g->n_experts;
	rank_item *it = malloc(sizeof *it * (size_t)E);
	if (!it) { /* no room to sort: id order */
		for (int e = 0; e < E; e++)
			order[e] = e;
		return;
	}
	for (int e = 0; e < E; e++)
		it[e] = (rank_item){ g->v[(size_t)l * E + e], e };
	qsort(it, (size_t)E, sizeof *it, rank_cmp);
	for (int e = 0; e < E; e++)
		order[e] = it[e].id;
	free(it);
}

int atlas_layer_stats(const atlas_grid *g, int l, int k, double *conc, double *entropy)
{
	const double t = atlas_layer_total(g, l);
	*conc = *entropy = 0;
	if (t <= 0)
		return 0;
	/* the k largest, by selection: no buffer needed */
	double top = 0, h = 0, prev = INFINITY;
	int prev_e = -1;
	for (int i = 0; i < k && i < g->n_experts; i++) {
		int best = -1;
		for (int e = 0; e < g->n_experts; e++) {
			const double x = g->v[(size_t)l * g->n_experts + e];
			if ((x < prev || (x == prev && e > prev_e)) &&
			    (best < 0 || x > g->v[(size_t)l * g->n_experts + best]))
				best = e;
		}
		if (best < 0)
			break;
		prev = g->v[(size_t)l * g->n_experts + best];
		prev_e = best;
		top += prev;
	}
	for (int e = 0; e < g->n_experts; e++) {
		const double p = g->v[(size_t)l * g->n_experts + e] / t;
		if (p > 0)
			h -= p * log2(p);
	}
	*conc = top / t;
	*entropy = h;
	return 1;
}

int atlas_compare(const atlas_grid *a, const atlas_grid *b, atlas_cmp *out)
{
	int n = 0;
	for (int l = 0; l < a->n_layers; l++) {
		const double ta = atlas_layer_total(a, l), tb = atlas_layer_total(b, l);
		if (ta <= 0 || tb <= 0)
			continue;
		const double na = a->top_k > 0 ? ta / a->top_k : ta, nb = b->top_k > 0 ? tb / b->top_k : tb;
		for (int e = 0; e < a->n_experts; e++) {
			const double x = a->v[(size_t)l * a->n_experts + e], y = b->v[(size_t)l * b->n_experts + e];
			const double x0 = na - x > 0 ? na - x : 0, y0 = nb - y > 0 ? nb - y : 0;
			atlas_cmp *c = &out[n++];
			c->layer = l;
			c->expert = e;
			c->a = x;
			c->b = y;
			c->na = na;
			c->nb = nb;
			c->log_odds = log((x + .5) * (y0 + .5) / ((x0 + .5) * (y + .5)));
			c->z = c->log_odds / sqrt(1 / (x + .5) + 1 / (x0 + .5) + 1 / (y + .5) + 1 / (y0 + .5));
		}
	}
	return n;
}

static int cmp_z(const void *x, const void *y)
{
	const atlas_cmp *a = x, *b = y;
	if (a->z != b->z)
		return a->z < b->z ? 1 : -1;
	if (a->layer != b->layer)
		return a->layer - b->layer;
	return a->expert - b->expert;
}

void atlas_cmp_sort(atlas_cmp *c, int n)
{
	qsort(c, (size_t)n, sizeof *c, cmp_z);
}

static double dist2(const double *x, const double *y, int p)
{
	double d = 0;
	for (int i = 0; i < p; i++)
		d += (x[i] - y[i]) * (x[i] - y[i]);
	return d;
}

/* Item features (n_items, P) of the routed layers; item_of[i] = l * E + e. */
static int features(const atlas_grid *const *g, int P, double *f, int *item_of)
{
	const int L = g[0]->n_layers, E = g[0]->n_experts;
	int n = 0;
	for (int l = 0; l < L; l++) {
		double T = 0;
		for (int p = 0; p < P; p++)
			T += atlas_layer_total(g[p], l);
		if (T <= 0)
			continue;
		for (int e = 0; e < E; e++) {
			double S = 0;
			for (int p = 0; p < P; p++)
				S += g[p]->v[(size_t)l * E + e];
			const double base = log((S + .5 * P) / (T + .5 * E * P));
			for (int p = 0; p < P; p++) {
				const double c = g[p]->v[(size_t)l * E + e], Tp = atlas_layer_total(g[p], l);
				f[(size_t)n * P + p] = log((c + .5) / (Tp + .5 * E)) - base;
			}
			item_of[n++] = l * E + e;
		}
	}
	return n;
}

/* Deterministic farthest-point start: centres[0..k) from the items. */
static int kmeans_start(const double *f, int n, int P, int k, double *centre, double *near)
{
	double zero[64] = { 0 };
	int first = 0;
	double best = -1;
	for (int i = 0; i < n; i++) {
		const double d = dist2(f + (size_t)i * P, zero, P);
		if (d > best) {
			best = d;
			first = i;
		}
	}
	memcpy(centre, f + (size_t)first * P, sizeof(double) * (size_t)P);
	for (int i = 0; i < n; i++)
		near[i] = dist2(f + (size_t)i * P, centre, P);
	int m = 1;
	for (; m < k; m++) {
		int pick = -1;
		best = 0;
		for (int i = 0; i < n; i++)
			if (near[i] > best) {
				best = near[i];
				pick = i;
			}
		if (pick < 0)
			break; /* every item sits on a centre */
		memcpy(centre + (size_t)m * P, f + (size_t)pick * P, sizeof(double) * (size_t)P);
		for (int i = 0; i < n; i++) {
			const double d = dist2(f + (size_t)i * P, centre + (size_t)m * P, P);
			if (d < near[i])
				near[i] = d;
		}
	}
	return m;
}

typedef struct cl_key {
	int id, favour, size;
	double strength;
} cl_key;

static int cl_cmp(const void *x, const void *y)
{
	const cl_key *a = x, *b = y;
	if (a->favour != b->favour)
		return a->favour - b->favour;
	if (a->size != b->size)
		return b->size - a->size;
	return a->id - b->id;
}

int atlas_cluster(const atlas_grid *const *g, int P, int k, int *cluster, int *favour)
{
	const int L = g[0]->n_layers, E = g[0]->n_experts;
	const size_t N = (size_t)L * E;
	if (P > 64)
		P = 64;
	if (k < 1)
		k = 1;
	double *f = malloc(sizeof(double) * N * (size_t)P), *centre = malloc(sizeof(double) * (size_t)k * P);
	double *near = malloc(sizeof(double) * N), *sum = malloc(sizeof(double) * (size_t)k * P);
	int *item_of = malloc(sizeof(int) * N), *as = malloc(sizeof(int) * N), *cnt = malloc(sizeof(int) * (size_t)k);
	cl_key *keys = malloc(sizeof(cl_key) * (size_t)k);
	int m = -1;
	if (!f || !centre || !near || !sum || !item_of || !as || !cnt || !keys)
		goto out;
	for (size_t i = 0; i < N; i++)
		cluster[i] = -1;
	const int n = features(g, P, f, item_of);
	m = n ? kmeans_start(f, n, P, k < n ? k : n, centre, near) : 0;
	for (int i = 0; i < n; i++)
		as[i] = -1;
	for (int round = 0; round < KMEANS_ROUNDS && m > 0; round++) {
		int moved = 0;
		for (int i = 0; i < n; i++) {
			int bc = 0;
			double bd = dist2(f + (size_t)i * P, centre, P);
			for (int c = 1; c < m; c++) {
				const double d = dist2(f + (size_t)i * P, centre + (size_t)c * P, P);
				if (d < bd) {
					bd = d;
					bc = c;
				}
			}
			moved += as[i] != bc;
			as[i] = bc;
		}
		if (!moved)
			break;
		memset(sum, 0, sizeof(double) * (size_t)m * P);
		memset(cnt, 0, sizeof(int) * (size_t)m);
		for (int i = 0; i < n; i++) {
			cnt[as[i]]++;
			for (int p = 0; p < P; p++)
				sum[(size_t)as[i] * P + p] += f[(size_t)i * P + p];
		}
		for (int c = 0; c < m; c++)
			if (cnt[c])
				for (int p = 0; p < P; p++)
					centre[(size_t)c * P + p] = sum[(size_t)c * P + p] / cnt[c];
	}
	/* number the clusters: by the profile each favours, then by size */
	memset(cnt, 0, sizeof(int) * (size_t)m);
	for (int i = 0; i < n; i++)
		cnt[as[i]]++;
	int used = 0;
	for (int c = 0; c < m; c++) {
		if (!cnt[c])
			continue;
		int fav = 0;
		for (int p = 1; p < P; p++)
			if (centre[(size_t)c * P + p] > centre[(size_t)c * P + fav])
				fav = p;
		keys[used++] = (cl_key){ c, fav, cnt[c], centre[(size_t)c * P + fav] };
	}
	qsort(keys, (size_t)used, sizeof *keys, cl_cmp);
	int *renum = cnt; /* reused: old id -> new id */
	for (int c = 0; c < m; c++)
		renum[c] = -1;
	for (int j = 0; j < used; j++) {
		renum[keys[j].id] = j;
		favour[j] = keys[j].favour;
	}
	for (int i = 0; i < n; i++)
		cluster[item_of[i]] = renum[as[i]];
	m = used;
out:
	free(f);
	free(centre);
	free(near);
	free(sum);
	free(item_of);
	free(as);
	free(cnt);
	free(keys);
	return m;
}

void atlas_cluster_order(const int *cluster, int n_experts, int l, int *order)
{
	/* stable by cluster (-1 first), ids ascending within one: a pass
	 * per cluster id present, no sort state shared between threads */
	const int *cl = cluster + (size_t)l * n_experts;
	int lo = 0, hi = -1, k = 0;
	for (int e = 0; e < n_experts; e++) {
		lo = cl[e] < lo ? cl[e] : lo;
		hi = cl[e] > hi ? cl[e] : hi;
	}
	for (int c = lo; c <= hi; c++)
		for (int e = 0; e < n_experts; e++)
			if (cl[e] == c)
				order[k++] = e;
}
