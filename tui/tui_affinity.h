/* tui_affinity.h - co-activation of experts and an ordering that groups
 * experts routed together (the Expert map's affinity view).
 *
 * Counts come from the routing the TUI samples (the latest token of each
 * layer, read at the refresh rate), so they are a subsample of all tokens:
 * enough to show structure, not exact counts. The ordering is a greedy
 * agglomeration: start from the busiest expert, keep adding the expert
 * most co-activated with the current group, open a new group when nothing
 * left is linked to it. O(E^2) per layer; recomputed at most once a second. */
#ifndef COLI_TUI_AFFINITY_H
#define COLI_TUI_AFFINITY_H

#include <stdint.h>

typedef struct tui_affinity {
	int n_layers, n_experts;
	uint16_t *co;        /* (layers, E, E) co-activation counts, halved on saturation */
	int *order;          /* (layers, E) display position -> expert id */
	uint64_t *seen;      /* (layers) token id of the last routing counted */
	int changed;         /* counts changed since the last tui_affinity_reorder */
} tui_affinity;

int tui_affinity_init(tui_affinity *a, int n_layers, int n_experts);
void tui_affinity_free(tui_affinity *a);
/* Count one token's routed experts at a layer (once per token id). */
void tui_affinity_note(tui_affinity *a, int layer, uint64_t token, const int *experts, int n);
/* Recompute every layer's order from the counts. */
void tui_affinity_reorder(tui_affinity *a);

/* Pure ordering of n experts given the n x n symmetric matrix co. */
void tui_affinity_order(const uint16_t *co, int n, int *order);

#endif
