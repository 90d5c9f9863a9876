/* tui_affinity.c - see tui_affinity.h. */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "tui_affinity.h"

int tui_affinity_init(tui_affinity *a, int n_layers, int n_experts)
{
	memset(a, 0, sizeof *a);
	if (n_layers <= 0 || n_experts <= 0)
		return 0;
	size_t ee = (size_t)n_experts * (size_t)n_experts;
	a->co = calloc((size_t)n_layers * ee, sizeof *a->co);
	a->order = malloc(sizeof(int) * (size_t)n_layers * (size_t)n_experts);
	a->seen = calloc((size_t)n_layers, sizeof *a->seen);
	if (!a->co || !a->order || !a->seen) {
		tui_affinity_free(a);
		return -ENOMEM;
	}
	a->n_layers = n_layers;
	a->n_experts = n_experts;
	for (int l = 0; l < n_layers; l++)
		for (int e = 0; e < n_experts; e++)
			a->order[l * n_experts + e] = e;
	return 0;
}

void tui_affinity_free(tui_affinity *a)
{
	free(a->co);
	free(a->order);
	free(a->seen);
	memset(a, 0, sizeof *a);
}

void tui_affinity_note(tui_affinity *a, int layer, uint64_t token, const int *experts, int n)
{
	if (layer < 0 || layer >= a->n_layers || n <= 0 || a->seen[layer] == token + 1)
		return;
	a->seen[layer] = token + 1;
	const int E = a->n_experts;
	uint16_t *m = a->co + (size_t)layer * (size_t)E * (size_t)E;
	int saturated = 0;
	for (int i = 0; i < n; i++) {
		int x = experts[i];
		if (x < 0 || x >= E)
			continue;
		for (int j = 0; j < n; j++) {
			int y = experts[j];
			if (y < 0 || y >= E)
				continue;
			if (++m[x * E + y] == UINT16_MAX)
				saturated = 1;
		}
	}
	if (saturated)   /* keep proportions, make room */
		for (size_t k = 0; k < (size_t)E * (size_t)E; k++)
			m[k] /= 2;
	a->changed = 1;
}

void tui_affinity_order(const uint16_t *co, int n, int *order)
{
	char *placed = calloc((size_t)n, 1);
	uint64_t *score = calloc((size_t)n, sizeof *score);
	if (!placed || !score) {
		for (int i = 0; i < n; i++)
			order[i] = i;
		goto out;
	}
	for (int k = 0; k < n; k++) {
		/* the unplaced expert most linked to the current group */
		int best = -1;
		for (int j = 0; j < n; j++)
			if (!placed[j] && score[j] > 0 && (best < 0 || score[j] > score[best]))
				best = j;
		if (best < 0) {
			/* nothing linked: a new group, seeded by the busiest expert
			 * (its diagonal is how often it was routed) */
			memset(score, 0, sizeof *score * (size_t)n);
			for (int j = 0; j < n; j++)
				if (!placed[j] && (best < 0 || co[j * n + j] > co[best * n + best]))
					best = j;
		}
		placed[best] = 1;
		order[k] = best;
		for (int j = 0; j < n; j++)
			if (!placed[j] && j != best)
				score[j] += co[best * n + j];
	}
out:
	free(placed);
	free(score);
}

void tui_affinity_reorder(tui_affinity *a)
{
	const int E = a->n_experts;
	for (int l = 0; l < a->n_layers; l++)
		tui_affinity_order(a->co + (size_t)l * (size_t)E * (size_t)E, E, a->order + l * E);
	a->changed = 0;
}
