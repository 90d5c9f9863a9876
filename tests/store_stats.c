/* store_stats.c - the telemetry block: counters and per-expert tiers follow
 * the store, and a reader thread never sees a torn per-layer record (the
 * experts of one token with the weights of another) while the writer runs. */
#include "config.h"

#include <pthread.h>
#include <stdatomic.h>

#include "expert_store_stats.h"
#include "expert_store.h"
#include "store_test.h"

#define E 16
#define ROUNDS 200000

static expert_stats *g_st;
static atomic_int g_done;

static void *reader(void *arg)
{
	long *reads = arg;
	while (!atomic_load(&g_done)) {
		expert_stats_layer ly;
		REQUIRE(expert_stats_layer_get(g_st, 1, &ly) == 0);
		if (ly.n == 0)
			continue;
		REQUIRE(ly.n == 4);
		for (int i = 0; i < 4; i++) {
			REQUIRE(ly.experts[i] == (ly.experts[0] + i) % E);
			REQUIRE(ly.weights[i] == ly.weights[0]);
		}
		REQUIRE((long)ly.weights[0] % E == ly.experts[0]);
		expert_stats_summary sum;
		expert_stats_snapshot(g_st, &sum);
		REQUIRE(sum.hits_cached + sum.misses <= ROUNDS);
		(*reads)++;
	}
	return NULL;
}

static void test_seqlock(void)
{
	g_st = expert_stats_new(3, E, 4, 2);
	REQUIRE(g_st);
	expert_stats_set_drive(g_st, 0, "primary", 1);
	pthread_t th;
	long reads = 0;
	REQUIRE(pthread_create(&th, NULL, reader, &reads) == 0);
	for (int t = 0; t < ROUNDS; t++) {
		int ex[4];
		float w[4];
		for (int i = 0; i < 4; i++) {
			ex[i] = (t + i) % E;
			w[i] = (float)t;
		}
		expert_stats_note_routing(g_st, 1, ex, w, 4, 1);
		expert_stats_note_lookup(g_st, 1, ex[0], t % 3 ? EXPERT_HIT_CACHED : EXPERT_MISS);
		expert_stats_note_read(g_st, 0, 4096);
	}
	atomic_store(&g_done, 1);
	REQUIRE(pthread_join(th, NULL) == 0);
	expert_stats_summary sum;
	expert_stats_snapshot(g_st, &sum);
	REQUIRE(sum.tokens == ROUNDS);
	REQUIRE(sum.hits_cached + sum.misses == ROUNDS);
	REQUIRE(sum.hit_rate_valid && sum.hit_rate > 0.66 && sum.hit_rate < 0.67);
	REQUIRE(sum.drives[0].bytes == (uint64_t)ROUNDS * 4096 && sum.bytes_read == sum.drives[0].bytes);
	REQUIRE(!strcmp(sum.drives[0].name, "primary") && sum.drives[0].enabled);
	REQUIRE(expert_stats_layer_get(g_st, 3, NULL) == -EINVAL);
	expert_stats_layer ly;
	REQUIRE(expert_stats_layer_get(g_st, 1, &ly) == 0 && ly.hits + ly.misses == ROUNDS);
	expert_stats_free(g_st);
	expert_stats_free(NULL);
}

/* Tiers and per-expert counters through the store. */
static void test_store_tiers(void)
{
	test_model m;
	tm_make(&m, 2, 8, 2, 4096);
	expert_store_opts o;
	expert_store_opts_default(&o);
	o.cache_bytes = 0;
	o.pin_bytes = 0;
	o.max_batch = 4; /* scratch: 2 x 4 = 8 records */
	expert_store *s;
	coli_err err;
	REQUIRE(expert_store_open(&m.c, &o, &s, &err) == 0);
	const expert_stats *st = expert_store_stats(s);
	expert_stats_expert ex[8];
	REQUIRE(expert_stats_experts_get(st, 1, ex, 8) == 8);
	for (int e = 0; e < 8; e++)
		REQUIRE(ex[e].tier == EXPERT_TIER_DISK && ex[e].hits == 0);
	int a[2] = { 2, 5 };
	const void *r[4];
	REQUIRE(expert_store_acquire(s, 1, a, 2, r, &err) == 0);
	REQUIRE(expert_stats_experts_get(st, 1, ex, 8) == 8);
	REQUIRE(ex[2].tier == EXPERT_TIER_CACHED && ex[5].tier == EXPERT_TIER_CACHED);
	REQUIRE(ex[2].misses == 1 && ex[2].hits == 0);
	REQUIRE(expert_store_acquire(s, 1, a, 2, r, &err) == 0);
	REQUIRE(expert_stats_experts_get(st, 1, ex, 8) == 8);
	REQUIRE(ex[2].hits == 1);
	expert_store_release(s, 1);
	/* scratch is 2 x max_batch = 8 records: touching all 8 others evicts */
	int b[4] = { 0, 1, 3, 4 }, c[4] = { 6, 7, 0, 1 };
	REQUIRE(expert_store_acquire(s, 1, b, 4, r, &err) == 0);
	expert_store_release(s, 1);
	REQUIRE(expert_store_acquire(s, 1, c, 4, r, &err) == 0);
	expert_store_release(s, 1);
	REQUIRE(expert_stats_experts_get(st, 1, ex, 8) == 8);
	int resident = 0;
	for (int e = 0; e < 8; e++)
		resident += ex[e].tier == EXPERT_TIER_CACHED;
	REQUIRE(resident == 8); /* 8 slots, 8 experts */
	expert_stats_summary sum;
	expert_stats_snapshot(st, &sum);
	REQUIRE(sum.resident_cached == 8 * 4096 && sum.resident_pinned == 0 && sum.resident_inflight == 0);
	REQUIRE(sum.misses == 8 && sum.hits_cached == 4);
	REQUIRE(sum.bytes_read == 8 * 4096);
	REQUIRE(sum.n_drives >= 1 && sum.drives[0].bytes == 8 * 4096);
	expert_store_free(s);
	tm_free(&m);
}

int main(void)
{
	test_seqlock();
	test_store_tiers();
	return test_summary(__FILE__);
}
