/* store_heat.c - routing heat drives the pinned set and survives a
 * restart (heat.bin round trip); a corrupted, truncated, foreign or
 * future-version heat file is ignored with one warning. */
#include "config.h"

#include <dirent.h>

#include <unistd.h>

#include "coli_log.h"
#include "expert_store_stats.h"
#include "expert_store.h"
#include "store_test.h"

#define LAYERS 3
#define EXPERTS 8
#define TOPK 2
#define REC 8192

static int warnings;

static void sink(void *opaque, int level, const char *line)
{
	(void)opaque;
	if (level >= COLI_LOG_WARN)
		warnings++;
	if (getenv("STORE_TEST_VERBOSE"))
		fprintf(stderr, "log: %s\n", line);
}

static expert_store *open_heat(test_model *m, const char *heat_dir)
{
	expert_store_opts o;
	expert_store_opts_default(&o);
	o.cache_bytes = 2 * REC;
	o.pin_bytes = 3 * REC;
	o.heat_dir = heat_dir;
	expert_store *s;
	coli_err e;
	coli_err_clear(&e);
	if (expert_store_open(&m->c, &o, &s, &e)) {
		fprintf(stderr, "open: %s\n", e.msg);
		exit(1);
	}
	return s;
}

static int tier(const expert_store *s, int layer, int e)
{
	expert_stats_expert ex[EXPERTS];
	REQUIRE(expert_stats_experts_get(expert_store_stats(s), layer, ex, EXPERTS) == EXPERTS);
	return ex[e].tier;
}

/* Wait until no read is in flight: the warm start's order then depends
 * only on the store's rules, never on how fast the drive (or a loaded
 * machine) completes a read. The bound only turns a lost completion into a
 * failure instead of a hang. */
static void wait_idle(expert_store *s)
{
	for (long k = 0; k < 600000 && expert_store_poll(s) > 0; k++)
		usleep(100);
	REQUIRE(expert_store_poll(s) == 0);
}

static void patch(const char *path, long off, const void *bytes, size_t n)
{
	FILE *f = fopen(path, "r+b");
	REQUIRE(f);
	REQUIRE(fseek(f, off, SEEK_SET) == 0);
	REQUIRE(fwrite(bytes, 1, n, f) == n);
	REQUIRE(fclose(f) == 0);
}

static void copy_file(const char *from, const char *to)
{
	char cmd[1200];
	snprintf(cmd, sizeof cmd, "cp '%s' '%s'", from, to);
	REQUIRE(system(cmd) == 0);
}

int main(void)
{
	coli_log_set_sink(sink, NULL);
	test_model m;
	tm_make(&m, LAYERS, EXPERTS, TOPK, REC);
	char heat_dir[600], heat[700], good[700];
	snprintf(heat_dir, sizeof heat_dir, "%s/hot-experts", m.dir);
	snprintf(heat, sizeof heat, "%s/heat.bin", heat_dir);
	snprintf(good, sizeof good, "%s/heat.good", m.dir);

	/* First run: no history, nothing pinned. Route (1: 3,5) and (2: 6)
	 * far more often than anything else. */
	expert_store *s = open_heat(&m, heat_dir);
	expert_stats_summary sum;
	expert_stats_snapshot(expert_store_stats(s), &sum);
	REQUIRE(sum.resident_pinned == 0);
	for (int t = 0; t < 300; t++) {
		int a[TOPK] = { 3, 5 }, b[TOPK] = { 6, t % EXPERTS == 6 ? 0 : t % EXPERTS };
		float w[TOPK] = { 0.5f, 0.5f };
		if (t % 10 == 0)
			a[1] = t / 10 % EXPERTS == 3 ? 4 : t / 10 % EXPERTS;
		const void *r[TOPK];
		coli_err e;
		REQUIRE(expert_store_acquire(s, 1, a, TOPK, r, &e) == 0);
		expert_store_note_routing(s, 1, a, w, TOPK);
		REQUIRE(expert_store_acquire(s, 2, b, TOPK, r, &e) == 0);
		expert_store_note_routing(s, 2, b, w, TOPK);
		expert_store_release(s, 1);
		expert_store_release(s, 2);
	}
	/* re-chosen while running (every 256 tokens) */
	REQUIRE(tier(s, 1, 3) == EXPERT_TIER_PINNED);
	REQUIRE(tier(s, 2, 6) == EXPERT_TIER_PINNED);
	expert_stats_layer ly;
	REQUIRE(expert_stats_layer_get(expert_store_stats(s), 1, &ly) == 0);
	REQUIRE(ly.n == TOPK && ly.experts[0] == 3 && ly.weights[0] == 0.5f);
	expert_store_free(s); /* saves heat.bin */
	REQUIRE(access(heat, F_OK) == 0);
	copy_file(heat, good);

	/* Second run: the hot set is loaded at open and serves pinned hits. */
	warnings = 0;
	s = open_heat(&m, heat_dir);
	REQUIRE(warnings == 0);
	REQUIRE(tier(s, 1, 3) == EXPERT_TIER_PINNED);
	REQUIRE(tier(s, 1, 5) == EXPERT_TIER_PINNED);
	REQUIRE(tier(s, 2, 6) == EXPERT_TIER_PINNED);
	REQUIRE(tier(s, 1, 7) == EXPERT_TIER_DISK);
	expert_stats_snapshot(expert_store_stats(s), &sum);
	REQUIRE(sum.resident_pinned == 3 * REC);
	int a[TOPK] = { 3, 5 };
	const void *r[TOPK];
	coli_err e;
	REQUIRE(expert_store_acquire(s, 1, a, TOPK, r, &e) == 0);
	REQUIRE(tm_check(&m, 1, 3, r[0]) && tm_check(&m, 1, 5, r[1]));
	expert_store_release(s, 1);
	expert_stats_snapshot(expert_store_stats(s), &sum);
	REQUIRE(sum.hits_pinned == 2 && sum.misses == 0);
	/* pinned records survive a flood of other experts */
	for (int x = 0; x < EXPERTS; x++) {
		int one = x;
		REQUIRE(expert_store_acquire(s, 1, &one, 1, r, &e) == 0);
		REQUIRE(tm_check(&m, 1, x, r[0]));
		expert_store_release(s, 1);
	}
	REQUIRE(tier(s, 1, 3) == EXPERT_TIER_PINNED);
	expert_store_free(s);

	/* A pinned set smaller than the hot set, and room in the cache: the
	 * pinned set is read at open, and the cache is warmed with the next
	 * hottest records. */
	{
		expert_store_opts o;
		expert_store_opts_default(&o);
		o.cache_bytes = 5 * REC;
		o.pin_bytes = 2 * REC;
		o.heat_dir = heat_dir;
		coli_err_clear(&e);
		REQUIRE(expert_store_open(&m.c, &o, &s, &e) == 0);
		int pinned = 0, warmed = 0;
		for (int l = 1; l < LAYERS; l++)
			for (int x = 0; x < EXPERTS; x++) {
				int t = tier(s, l, x);
				pinned += t == EXPERT_TIER_PINNED;
				warmed += t == EXPERT_TIER_CACHED || t == EXPERT_TIER_INFLIGHT;
			}
		REQUIRE(pinned == 2);
		REQUIRE(warmed == 3);
		/* the three hottest all resident, one way or the other */
		REQUIRE(tier(s, 1, 3) != EXPERT_TIER_DISK && tier(s, 1, 5) != EXPERT_TIER_DISK &&
		      tier(s, 2, 6) != EXPERT_TIER_DISK);
		expert_store_free(s);
	}

	/* Third run, no pinned set (pin budget 0): the hottest records are
	 * read into the cache at open (warm start) and the first use hits. */
	{
		expert_store_opts o;
		expert_store_opts_default(&o);
		o.cache_bytes = 3 * REC;
		o.pin_bytes = 0;
		o.heat_dir = heat_dir;
		coli_err_clear(&e);
		REQUIRE(expert_store_open(&m.c, &o, &s, &e) == 0);
		REQUIRE(tier(s, 1, 3) != EXPERT_TIER_DISK && tier(s, 1, 5) != EXPERT_TIER_DISK &&
		      tier(s, 2, 6) != EXPERT_TIER_DISK);
		REQUIRE(tier(s, 1, 7) == EXPERT_TIER_DISK);
		wait_idle(s);
		REQUIRE(expert_store_ready(s, 1, 3) && expert_store_ready(s, 1, 5));
		int hot[TOPK] = { 3, 5 };
		REQUIRE(expert_store_acquire(s, 1, hot, TOPK, r, &e) == 0);
		REQUIRE(tm_check(&m, 1, 3, r[0]) && tm_check(&m, 1, 5, r[1]));
		expert_store_release(s, 1);
		expert_stats_snapshot(expert_store_stats(s), &sum);
		REQUIRE(sum.misses == 0 && sum.hits_cached == TOPK && sum.resident_pinned == 0);
		expert_store_free(s);
	}

	/* The same with an I/O ring of 2 entries: the open reads one record
	 * (half the ring), the others follow after each layer visit, into
	 * free slots only. */
	{
		expert_store_opts o;
		expert_store_opts_default(&o);
		o.cache_bytes = 3 * REC;
		o.pin_bytes = 0;
		o.queue_depth = 2;
		o.heat_dir = heat_dir;
		coli_err_clear(&e);
		REQUIRE(expert_store_open(&m.c, &o, &s, &e) == 0);
		int warm = (tier(s, 1, 3) != EXPERT_TIER_DISK) + (tier(s, 1, 5) != EXPERT_TIER_DISK) +
			   (tier(s, 2, 6) != EXPERT_TIER_DISK);
		REQUIRE(warm == 1);
		/* each visit's release tops the warm list up while the ring is
		 * at most half busy, one record at a time here. Waiting for the
		 * reads in between makes the order depend on the store's rules
		 * only: a slow read (a loaded machine) would otherwise keep the
		 * ring busy at every release, so that nothing more is asked for. */
		wait_idle(s);
		for (int v = 1; v <= 4; v++) {
			int cold = 0; /* a visit that reads nothing warm */
			REQUIRE(expert_store_acquire(s, 0 + 1, &cold, 1, r, &e) == 0);
			expert_store_release(s, 1);
			wait_idle(s);
			warm = expert_store_ready(s, 1, 3) + expert_store_ready(s, 1, 5) +
			       expert_store_ready(s, 2, 6);
			/* 4 slots (3 cache + 1 scratch): the cold record holds
			 * one, the three hottest fill the rest, and a warm read
			 * never evicts what this run used */
			REQUIRE(warm == (v < 2 ? 1 + v : 3));
			REQUIRE(expert_store_ready(s, 1, 0));
		}
		expert_store_free(s);
	}

	/* Heat from routing alone (nothing acquired): the re-choice reads the
	 * new hot experts in the background, so the first acquire hits. */
	s = open_heat(&m, NULL);
	for (int t = 0; t < 300; t++) {
		int hot[TOPK] = { 1, 2 }, spread[TOPK] = { t % EXPERTS, (t + 3) % EXPERTS };
		float w[TOPK] = { 0.5f, 0.5f };
		expert_store_note_routing(s, 1, spread, w, TOPK);
		expert_store_note_routing(s, 2, hot, w, TOPK);
	}
	{
		int hot[TOPK] = { 1, 2 };
		REQUIRE(expert_store_acquire(s, 2, hot, TOPK, r, &e) == 0);
		REQUIRE(tm_check(&m, 2, 1, r[0]) && tm_check(&m, 2, 2, r[1]));
		expert_store_release(s, 2);
		expert_stats_snapshot(expert_store_stats(s), &sum);
		REQUIRE(sum.misses == 0 && sum.hits_pinned + sum.hits_prefetched == TOPK);
		REQUIRE(tier(s, 2, 1) == EXPERT_TIER_PINNED);
	}
	expert_store_free(s);

	/* Corrupted payload byte: checksum fails, ignored with a warning. */
	copy_file(good, heat);
	patch(heat, 100, "\x55", 1);
	warnings = 0;
	s = open_heat(&m, heat_dir);
	REQUIRE(warnings == 1);
	REQUIRE(tier(s, 1, 3) == EXPERT_TIER_DISK);
	expert_store_free(s);

	/* Truncated. */
	copy_file(good, heat);
	REQUIRE(truncate(heat, 120) == 0);
	warnings = 0;
	s = open_heat(&m, heat_dir);
	REQUIRE(warnings == 1);
	expert_store_free(s);

	/* Unknown version. */
	copy_file(good, heat);
	uint32_t v = 99;
	patch(heat, 8, &v, 4);
	warnings = 0;
	s = open_heat(&m, heat_dir);
	REQUIRE(warnings == 1);
	expert_store_free(s);

	/* Another model's heat (fingerprint differs). */
	copy_file(good, heat);
	snprintf(m.c.fingerprint, sizeof m.c.fingerprint, "%064d", 8);
	warnings = 0;
	s = open_heat(&m, heat_dir);
	REQUIRE(warnings == 1);
	REQUIRE(tier(s, 1, 3) == EXPERT_TIER_DISK);
	expert_store_free(s);

	/* No temporary file (heat.bin.tmp.PID.N) left behind. */
	{
		DIR *d = opendir(heat_dir);
		struct dirent *de;
		int left = 0;
		while (d && (de = readdir(d)))
			left += !strncmp(de->d_name, "heat.bin.tmp", 12);
		if (d)
			closedir(d);
		REQUIRE(d && left == 0);
	}
	tm_free(&m);
	return test_summary(__FILE__);
}
