/* Scan resistance of the expert store in wide steps (issue 27): a step
 * of many sequences needs more of a layer's records than one acquire
 * holds, and the cache must keep its share instead of being replaced by
 * every step.
 *  1. even routing, every record of both MoE layers needed each step, a
 *     cache of a quarter of the records: after the first steps each step
 *     hits at least the cache minus the streaming slots, and the same
 *     records every step;
 *  2. then four experts of each layer take most rows: within a few steps
 *     they are promoted and hit in every step after;
 *  3. the same steps noted as one sequence's (no expert_store_note_rows)
 *     stream nothing: the old policy, whose hits collapse. */
#include "config.h"

#include "expert_store.h"
#include "store_test.h"

#define E 32
#define TOPK 4
#define REC 4096

/* One wide step over layers 1 and 2: every expert, rows[e] each, in
 * groups of the store's max_batch; returns the hits (records already in
 * RAM when acquired) and sets hit[layer][e]. */
static int step(expert_store *s, const int *rows, int note, unsigned char hit[3][E])
{
	int all[E];
	for (int e = 0; e < E; e++)
		all[e] = e;
	int hits = 0;
	for (int l = 1; l <= 2; l++) {
		if (note)
			expert_store_note_rows(s, l, all, rows, E);
		for (int g = 0; g < E; g += TOPK) {
			for (int i = 0; i < TOPK; i++) {
				const int e = g + i;
				hit[l][e] = (unsigned char)expert_store_ready(s, l, e);
				hits += hit[l][e];
			}
			const void *r[TOPK];
			coli_err err = { 0 };
			REQUIRE(expert_store_request(s, l, all + g, TOPK) >= 0);
			REQUIRE(expert_store_acquire(s, l, all + g, TOPK, r, &err) == 0);
			expert_store_release(s, l);
		}
	}
	return hits;
}

static expert_store *open_store(test_model *m)
{
	expert_store_opts o;
	expert_store_opts_default(&o);
	o.cache_bytes = 16 * REC; /* a quarter of the 64 records */
	o.pin_bytes = 0;
	o.max_batch = TOPK;
	o.prefetch = 0;
	expert_store *s;
	coli_err err = { 0 };
	REQUIRE(expert_store_open(&m->c, &o, &s, &err) == 0);
	return s;
}

int main(void)
{
	test_model m;
	tm_make(&m, 3, E, TOPK, REC);
	unsigned char hit[3][E], prev[3][E];
	int rows[E];

	/* 1. even routing */
	expert_store *s = open_store(&m);
	for (int e = 0; e < E; e++)
		rows[e] = 2;
	int min_hits = 1 << 30, same = 1;
	for (int t = 0; t < 12; t++) {
		int h = step(s, rows, 1, hit);
		if (t >= 3) {
			min_hits = h < min_hits ? h : min_hits;
			if (t > 3 && memcmp(hit, prev, sizeof hit))
				same = 0;
		}
		memcpy(prev, hit, sizeof hit);
	}
	printf("even routing: at least %d of %d records hit per step (cache 16), same set: %d\n", min_hits,
	       2 * E, same);
	/* 16 slots, at most a group's worth (4) and the next group's reads
	 * streaming: 8 stay */
	CHECK(min_hits >= 8);
	CHECK(same);

	/* 2. four hot experts per layer */
	for (int e = 0; e < E; e++)
		rows[e] = e >= E - 4 ? 40 : 1;
	int hot_all = 0;
	for (int t = 0; t < 12; t++) {
		step(s, rows, 1, hit);
		int h = 0;
		for (int l = 1; l <= 2; l++)
			for (int e = E - 4; e < E; e++)
				h += hit[l][e];
		hot_all = t >= 6 ? hot_all + (h == 8) : 0;
	}
	printf("hot experts: hit in %d of the last 6 steps\n", hot_all);
	CHECK(hot_all == 6);
	expert_store_free(s);

	/* 3. without the rows noted nothing streams: the cyclic scan replaces
	 * the cache (what --parallel 16 measured before) */
	s = open_store(&m);
	for (int e = 0; e < E; e++)
		rows[e] = 2;
	int max_old = 0;
	for (int t = 0; t < 12; t++) {
		int h = step(s, rows, 0, hit);
		if (t >= 3)
			max_old = h > max_old ? h : max_old;
	}
	printf("without noting the step's rows: at most %d hits per step\n", max_old);
	CHECK(max_old < min_hits);
	expert_store_free(s);
	tm_free(&m);
	return test_summary("store_stream");
}
