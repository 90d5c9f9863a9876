/* engine_atlas.h - the arithmetic of `coli atlas` (pure: no files, no
 * printing), on grids of routing counts or heat per (layer, expert).
 *
 * Layer statistics: the share of the layer's routings its top-k experts
 * take (concentration; k = the model's experts per token, so a router
 * that always chose the same k experts scores 1 and a uniform one k/E)
 * and the Shannon entropy of the layer's routing distribution in bits
 * (log2 E when uniform).
 *
 * Comparison of two profiles A and B, per (layer, expert): the 2x2 table
 * of rows that chose the expert and rows that did not, in A and in B.
 * Score: the log odds ratio with 0.5 added to each cell (Haldane-Anscombe)
 *   d = ln((a + .5)(Nb - b + .5) / ((Na - a + .5)(b + .5)))
 * with its Woolf standard error
 *   se = sqrt(1/(a + .5) + 1/(Na - a + .5) + 1/(b + .5) + 1/(Nb - b + .5))
 * and z = d / se: z > 0 means the expert is chosen more often in A, and
 * |z| >= 3.3 is significant at about 0.1% two-sided. Na, Nb are the rows
 * routed at the layer (its routings / top-k).
 *
 * Clustering: every (layer, expert) of a MoE layer is an item; its
 * feature over P profiles is, for each profile, the log of its smoothed
 * share of that layer's routings over its share in all P together:
 *   f_p = ln((c_p + .5) / (T_p + .5E)) - ln((S + .5P) / (T + .5EP))
 * (c_p its count in profile p, T_p the layer's routings there, S and T
 * the same summed over the profiles). Experts whose usage rises and falls
 * together across the workloads have near features and land in one
 * cluster, across layers. k-means on these features with a deterministic
 * start (the first centre is the item farthest from the origin, each next
 * one the item farthest from the chosen centres, ties to the lowest
 * index) and a fixed number of rounds: the same profiles give the same
 * clusters, bit for bit. Clusters are numbered by the profile they favour
 * most (the largest mean feature), then by size. */
#ifndef COLI_ENGINE_ATLAS_H
#define COLI_ENGINE_ATLAS_H

#include <stddef.h>

#include "coli_err.h"
#include "engine_profile.h"

typedef struct atlas_grid {
	int n_layers, n_experts, top_k;
	double *v;                 /* (n_layers, n_experts): counts or heat */
	double tokens;             /* rows routed (profiles); 0 for heat */
	double requests;
	int is_heat;
	char name[300];            /* what the user named: label, session:NAME, path, heat */
	char fingerprint[65];
} atlas_grid;

void atlas_grid_free(atlas_grid *g);
/* g := the counts of profile p (its shape, tokens, requests and
 * fingerprint), named NAME; 0 or -ENOMEM. */
int atlas_grid_from_profile(const coli_profile *p, const char *name, atlas_grid *g, coli_err *err);
/* Sum of layer l. */
double atlas_layer_total(const atlas_grid *g, int l);
/* Concentration (share of the top k) and entropy in bits of layer l;
 * 0 when the layer is empty (returns 0), else 1. */
int atlas_layer_stats(const atlas_grid *g, int l, int k, double *conc, double *entropy);
/* The layer's experts by value, largest first (ties: lower id first). */
void atlas_layer_rank(const atlas_grid *g, int l, int *order);

typedef struct atlas_cmp {
	int layer, expert;
	double a, b;               /* counts */
	double na, nb;             /* rows routed at the layer */
	double log_odds, z;
} atlas_cmp;

/* Every (layer, expert) of the layers both profiles routed, into out
 * (room for n_layers * n_experts); returns how many. Shapes must match
 * (the caller checks). */
int atlas_compare(const atlas_grid *a, const atlas_grid *b, atlas_cmp *out);
/* Sort by z, largest first (ties: layer, then expert). */
void atlas_cmp_sort(atlas_cmp *c, int n);

/* Cluster the items of g[0..n) (same shape) into at most k clusters:
 * cluster[l * E + e] gets the cluster (0..), -1 for layers none of the
 * profiles routed; favour[c] (room for k) the index of the profile
 * cluster c favours. Returns the number of clusters, or -1 when out of
 * memory. */
int atlas_cluster(const atlas_grid *const *g, int n, int k, int *cluster, int *favour);
/* Column order of layer l for a heatmap: experts by (cluster, id). */
void atlas_cluster_order(const int *cluster, int n_experts, int l, int *order);

#endif
