/* engine_draft_auto.c - the `--draft auto` rule (see coli(1), DRAFTING).
 *
 * A decode step with k drafts per slot evaluates k + 1 rows a slot
 * instead of one. Its predicted time is
 *     T(k) = a + b * rows + slots * k * mtp + reads(rows)
 * where a + b * rows is the step's compute (the line through the measured
 * averages of plain and verify steps, disk waits excluded), mtp the MTP
 * module's measured time per draft, and reads(rows) the expected time of
 * the expert records the step misses: per MoE layer, the distinct experts
 * `rows` positions route to (uniform routing: an upper bound), times the
 * miss rate (1 - the expert cache's current hit rate), times the record
 * size, over the bandwidth the drives measured. A step produces
 * E(k) = 1 + a1 + a1 a2 + ... + a1..ak tokens a slot, a_d the running
 * acceptance at draft depth d. Drafting is chosen when
 * E(k) T(0) / T(k), the predicted ratio of tokens per second, exceeds 1.05
 * (and kept while it exceeds 1.0, so the choice does not flap), with the
 * k that maximizes it. It is re-evaluated before every step: as the cache
 * warms the reads term shrinks; as the text changes the acceptance moves.
 * While off, one step in AUTO_PROBE_EVERY drafts anyway when the
 * prediction is above AUTO_PROBE_ABOVE, so a verify step's cost and the
 * acceptance are measured again (a single noisy early measurement cannot
 * keep drafting off for good); a clear loss (reads from disk) never
 * probes. */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "engine_draft_auto.h"

#define AUTO_EMA 0.15          /* weight of a new measurement */
#define AUTO_DECAY 0.98        /* acceptance counts: ~50 slot-steps of memory */
#define AUTO_PRIOR_ACCEPT 0.5  /* depth 1 before any measurement */
#define AUTO_PRIOR_WEIGHT 2.0
#define AUTO_ON 1.05
#define AUTO_STAY 1.0
#define AUTO_DEFAULT_BW 1.0e9  /* bytes/s before the drives were measured */
#define AUTO_PROBE_EVERY 64    /* off: one drafting step this often ... */
#define AUTO_PROBE_ABOVE 0.85  /* ... while the prediction is above this */

void draft_auto_init(draft_auto *a)
{
	memset(a, 0, sizeof *a);
	a->on = 1;
	a->n = 1;
	snprintf(a->reason, sizeof a->reason, "on: measuring the cost of a verify step");
}

static void ema(double *avg, unsigned long *n, double x)
{
	*avg = *n ? *avg + AUTO_EMA * (x - *avg) : x;
	++*n;
}

void draft_auto_note_step(draft_auto *a, int rows, int slots, double compute_s)
{
	if (compute_s < 0)
		compute_s = 0;
	if (rows <= slots) {
		unsigned long n = a->plain_n;
		ema(&a->plain_rows, &n, rows);
		ema(&a->plain_s, &a->plain_n, compute_s);
	} else {
		unsigned long n = a->ver_n;
		ema(&a->ver_rows, &n, rows);
		ema(&a->ver_s, &a->ver_n, compute_s);
	}
}

void draft_auto_note_mtp(draft_auto *a, double seconds_per_draft)
{
	ema(&a->mtp_s, &a->mtp_n, seconds_per_draft);
}

void draft_auto_note_accept(draft_auto *a, int tested, int accepted)
{
	for (int d = 0; d < COLI_DRAFT_MAX; d++) {
		a->tested[d] *= AUTO_DECAY;
		a->accepted[d] *= AUTO_DECAY;
	}
	for (int d = 0; d < tested && d < COLI_DRAFT_MAX; d++) {
		a->tested[d] += 1.0;
		a->accepted[d] += d < accepted ? 1.0 : 0.0;
	}
}

double draft_auto_acceptance(const draft_auto *a, int d)
{
	if (d < 1 || d > COLI_DRAFT_MAX)
		return 0.0;
	/* deeper drafts chain the module on its own output: assume less */
	double prior = AUTO_PRIOR_ACCEPT * pow(0.8, d - 1);
	return (a->accepted[d - 1] + AUTO_PRIOR_WEIGHT * prior) / (a->tested[d - 1] + AUTO_PRIOR_WEIGHT);
}

double draft_auto_union(int n_experts, int top_k, double rows)
{
	if (n_experts <= 0 || top_k <= 0)
		return 0.0;
	return n_experts * (1.0 - pow(1.0 - (double)top_k / n_experts, rows));
}

static double reads_s(const draft_auto_io *io, double rows)
{
	if (!io->has_store || io->hit_rate >= 1.0)
		return 0.0;
	double bw = io->bandwidth > 0 ? io->bandwidth : AUTO_DEFAULT_BW;
	return io->moe_layers * draft_auto_union(io->n_experts, io->top_k, rows) * (1.0 - io->hit_rate) *
	       io->record_bytes / bw;
}

void draft_auto_decide(draft_auto *a, const draft_auto_io *io, int slots, int max_n, int hidden_layers)
{
	if (slots < 1)
		slots = 1;
	if (max_n > COLI_DRAFT_MAX)
		max_n = COLI_DRAFT_MAX;
	if (max_n < 1 || (!a->plain_n && !a->ver_n)) {
		a->on = max_n >= 1;
		a->n = a->on;
		a->gain = 0;
		return;
	}
	/* the compute line through the two measured points; with one point,
	 * a prior that makes the missing regime worth measuring once: extra
	 * rows cost 15% of a plain step (optimistic) when only plain steps
	 * were seen, everything scales with rows (pessimistic) when only
	 * verify steps were */
	double b, c0;
	if (a->plain_n && a->ver_n && a->ver_rows > a->plain_rows + 0.5) {
		b = (a->ver_s - a->plain_s) / (a->ver_rows - a->plain_rows);
		b = b > 0 ? b : 0;
		c0 = a->plain_s - b * a->plain_rows;
	} else if (a->plain_n) {
		b = 0.15 * a->plain_s / (a->plain_rows > 0 ? a->plain_rows : 1);
		c0 = a->plain_s - b * a->plain_rows;
	} else {
		b = a->ver_s / (a->ver_rows > 0 ? a->ver_rows : 1);
		c0 = 0;
	}
	c0 = c0 > 0 ? c0 : 0;
	const double one = c0 + b * slots;
	double mtp = a->mtp_n ? a->mtp_s : one / slots / (hidden_layers + 1);
	const double t_off = one + reads_s(io, slots);
	double best = 0, best_t = 0, best_reads = 0;
	int best_k = 0;
	for (int k = 1; k <= max_n; k++) {
		double rows = (double)slots * (k + 1);
		double reads = reads_s(io, rows) - reads_s(io, slots);
		double t_on = c0 + b * rows + slots * k * mtp + reads_s(io, rows);
		double e = 1.0, chain = 1.0;
		for (int d = 1; d <= k; d++) {
			chain *= draft_auto_acceptance(a, d);
			e += chain;
		}
		double g = t_on > 0 ? e * t_off / t_on : 0;
		if (g > best) {
			best = g;
			best_k = k;
			best_t = t_on;
			best_reads = reads;
		}
	}
	const int on = best > (a->on ? AUTO_STAY : AUTO_ON);
	a->on = on;
	a->n = on ? best_k : 0;
	a->gain = best;
	a->probe = 0;
	if (on || best <= AUTO_PROBE_ABOVE) {
		a->since_probe = 0;
	} else if (++a->since_probe >= AUTO_PROBE_EVERY) {
		a->since_probe = 0;
		a->probe = 1;
		a->n = 1;
	}
	snprintf(a->reason, sizeof a->reason,
		 "%s: %d draft%s predict %.2fx tokens/s (acceptance %.2f, step %.2f ms vs %.2f ms, "
		 "extra expert reads %.2f ms at hit rate %.2f)",
		 on ? "on" : "off", best_k, best_k == 1 ? "" : "s", best, draft_auto_acceptance(a, 1),
		 best_t * 1e3, t_off * 1e3, best_reads * 1e3, io->has_store ? io->hit_rate : 1.0);
}
