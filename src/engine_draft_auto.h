/* engine_draft_auto.h - when drafting pays: the cost model behind
 * `--draft auto` (pure arithmetic on live figures, unit-testable). */
#ifndef COLI_ENGINE_DRAFT_AUTO_H
#define COLI_ENGINE_DRAFT_AUTO_H

#include <stddef.h>

#include "engine.h"

/* Running figures the engine keeps (engine thread). Seconds. */
typedef struct draft_auto {
	/* compute of a decode step (disk waits excluded) as a + b * rows:
	 * exponential averages of plain steps (one row a slot) and of verify
	 * steps (several) give two points of the line */
	double plain_rows, plain_s;  /* averages; plain_n steps seen */
	double ver_rows, ver_s;
	unsigned long plain_n, ver_n;
	double mtp_s;                /* MTP module time per slot and draft */
	unsigned long mtp_n;
	/* acceptance by draft depth: decayed counts of drafts tested (the
	 * ones before it were accepted) and accepted */
	double tested[COLI_DRAFT_MAX], accepted[COLI_DRAFT_MAX];
	int on;                      /* the current decision */
	int n;                       /* drafts per step when on (or probing) */
	int probe;                   /* off, but draft this one step to measure
	                              * again (every AUTO_PROBE_EVERY steps while
	                              * the prediction is not hopeless) */
	int since_probe;
	double gain;                 /* predicted tokens/s ratio of that choice */
	char reason[160];
} draft_auto;

/* What the expert store says now (all valid flags folded in). */
typedef struct draft_auto_io {
	int has_store;               /* routed experts come through the store */
	int moe_layers, n_experts, top_k;
	double hit_rate;             /* of expert lookups, [0, 1] */
	double record_bytes;         /* one expert */
	double bandwidth;            /* bytes/s the drives gave while busy */
} draft_auto_io;

void draft_auto_init(draft_auto *a);
void draft_auto_note_step(draft_auto *a, int rows, int slots, double compute_s);
void draft_auto_note_mtp(draft_auto *a, double seconds_per_draft);
/* Per slot-step: drafts verified (the depth reached) and accepted. */
void draft_auto_note_accept(draft_auto *a, int tested, int accepted);
/* Acceptance of depth d (1-based) with its prior. */
double draft_auto_acceptance(const draft_auto *a, int d);
/* Expected distinct experts one layer reads for `rows` positions routed
 * uniformly (an upper bound: real routing overlaps more). */
double draft_auto_union(int n_experts, int top_k, double rows);
/* Decide for `slots` decoding slots with up to max_n drafts: sets on, n,
 * gain and reason. hidden_layers scales the prior MTP cost. */
void draft_auto_decide(draft_auto *a, const draft_auto_io *io, int slots, int max_n, int hidden_layers);

#endif
