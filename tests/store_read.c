/* store_read.c - the expert store returns exactly the file's bytes in every
 * tier and mode (cache 0 / tiny / everything, prefetch on/off, O_DIRECT
 * on/off, mirrors on/off/broken), never evicts a record in use, and keeps
 * resident bytes within its budget. */
#include "config.h"

#include "coli_log.h"
#include "expert_store_stats.h"
#include "expert_store.h"
#include "util_sha256.h"
#include "store_test.h"

#define LAYERS 4     /* layer 0 dense, 1..3 MoE */
#define EXPERTS 16
#define TOPK 2
#define REC 16384    /* 4 stripes of 4 KiB when mirrored */

static int warnings;
static int64_t g_pin; /* pin budget for open_store */
static const char *g_weights; /* --mirror-weights for open_store */
static int next_policy; /* alternates LRU / LFU-decay across opens */

static void sink(void *opaque, int level, const char *line)
{
	(void)opaque;
	if (level >= COLI_LOG_WARN)
		warnings++;
	if (getenv("STORE_TEST_VERBOSE"))
		fprintf(stderr, "log: %s\n", line);
}

static int route(int tok, int layer, int j)
{
	/* Deterministic routing with reuse: a few hot experts, some churn. */
	uint64_t h = (uint64_t)(tok / 3) * 2654435761u + (uint64_t)layer * 40503u + (uint64_t)j * 977u;
	int e = (int)(h % 7);
	if (j == 1)
		e = (e + 1 + (int)((uint64_t)tok * 31u % (EXPERTS - 1))) % EXPERTS;
	return e;
}

static void check_budget(const expert_store *s)
{
	expert_stats_summary sum;
	expert_stats_snapshot(expert_store_stats(s), &sum);
	REQUIRE(sum.resident_pinned + sum.resident_cached + sum.resident_inflight <=
	      sum.budget_pin + sum.budget_cache + sum.budget_scratch);
}

/* Decode-like loop: prefetch next layer, acquire this one, check, release
 * the previous layer. Returns hits seen in the snapshot. */
static void run_tokens(test_model *m, expert_store *s, int tokens)
{
	coli_err err;
	coli_err_clear(&err);
	for (int t = 0; t < tokens; t++) {
		for (int l = 1; l < LAYERS; l++) {
			int ex[TOPK], nx[TOPK];
			const void *recs[TOPK];
			float w[TOPK] = { 0.6f, 0.4f };
			for (int j = 0; j < TOPK; j++)
				ex[j] = route(t, l, j);
			int nl = l + 1 < LAYERS ? l + 1 : 1;
			int nt = l + 1 < LAYERS ? t : t + 1;
			for (int j = 0; j < TOPK; j++)
				nx[j] = route(nt, nl, j);
			int rc = expert_store_acquire(s, l, ex, TOPK, recs, &err);
			if (rc) {
				fprintf(stderr, "acquire: %s\n", err.msg);
				exit(1);
			}
			expert_store_prefetch(s, nl, nx, TOPK);
			for (int j = 0; j < TOPK; j++)
				REQUIRE(tm_check(m, l, ex[j], recs[j]));
			expert_store_note_routing(s, l, ex, w, TOPK);
			check_budget(s);
			expert_store_release(s, l == 1 ? LAYERS - 1 : l - 1);
			/* records of layer l must still be intact after the
			 * prefetch above (it must not have reused them) */
			for (int j = 0; j < TOPK; j++)
				REQUIRE(tm_check(m, l, ex[j], recs[j]));
		}
	}
	for (int l = 1; l < LAYERS; l++)
		expert_store_release(s, l);
}

static expert_store *open_store(test_model *m, int64_t cache, int prefetch, int direct,
				const char *mirror)
{
	expert_store_opts o;
	expert_store_opts_default(&o);
	o.cache_bytes = cache;
	o.pin_bytes = g_pin;
	o.prefetch = prefetch;
	o.direct = direct;
	o.policy = next_policy++ % 2 ? EXPERT_POLICY_LFU_DECAY : EXPERT_POLICY_LRU;
	if (mirror) {
		coli_err e;
		REQUIRE(expert_store_opts_parse_flag(&o, "--mirror", mirror, &e) == 1);
		if (g_weights)
			REQUIRE(expert_store_opts_parse_flag(&o, "--mirror-weights", g_weights, &e) == 1);
	}
	expert_store *s = NULL;
	coli_err err;
	coli_err_clear(&err);
	if (expert_store_open(&m->c, &o, &s, &err)) {
		fprintf(stderr, "open: %s\n", err.msg);
		exit(1);
	}
	return s;
}

/* Prefetched reads that land while nobody acquires leave the in-flight
 * tier once the owner polls (the engine does while idle): without
 * expert_store_poll they showed as in flight until the next step. */
static void test_poll(test_model *m)
{
	expert_store *s = open_store(m, (int64_t)REC * 2 * TOPK, 1, 0, NULL);
	int x[TOPK];
	for (int i = 0; i < TOPK; i++)
		x[i] = i;
	expert_store_prefetch(s, 1, x, TOPK);
	expert_stats_expert ex[EXPERTS];
	REQUIRE(expert_stats_experts_get(expert_store_stats(s), 1, ex, EXPERTS) == EXPERTS);
	int inflight = 0;
	for (int i = 0; i < TOPK; i++)
		inflight += ex[i].tier == EXPERT_TIER_INFLIGHT;
	REQUIRE(inflight > 0);   /* issued, not yet taken */
	int left = 1;
	for (int k = 0; k < 2000 && (left = expert_store_poll(s)) > 0; k++)
		usleep(1000);
	REQUIRE(left == 0);
	REQUIRE(expert_stats_experts_get(expert_store_stats(s), 1, ex, EXPERTS) == EXPERTS);
	for (int i = 0; i < TOPK; i++)
		REQUIRE(ex[i].tier == EXPERT_TIER_CACHED || ex[i].tier == EXPERT_TIER_PINNED);
	expert_stats_summary sum;
	expert_stats_snapshot(expert_store_stats(s), &sum);
	REQUIRE(sum.resident_inflight == 0);
	expert_store_free(s);
}

static void copy_tree(const char *from, const char *to)
{
	char cmd[1200];
	snprintf(cmd, sizeof cmd, "mkdir -p '%s' && cp -r '%s/experts' '%s/'", to, from, to);
	REQUIRE(system(cmd) == 0);
}

static void test_matrix(test_model *m, const char *mirror)
{
	const int64_t caches[] = { 0, 3 * REC, (int64_t)(LAYERS - 1) * EXPERTS * REC };
	for (int ci = 0; ci < 3; ci++)
		for (int pf = 0; pf < 2; pf++)
			for (int dio = 0; dio < 2; dio++) {
				expert_store *s = open_store(m, caches[ci], pf, dio, mirror);
				run_tokens(m, s, 20);
				expert_stats_summary sum;
				expert_stats_snapshot(expert_store_stats(s), &sum);
				REQUIRE(sum.misses > 0);
				if (ci == 2) /* everything fits: each expert read once */
					REQUIRE(sum.misses + sum.hits_prefetched <= (uint64_t)(LAYERS - 1) * EXPERTS);
				if (pf)
					REQUIRE(sum.prefetch_issued > 0);
				else
					REQUIRE(sum.prefetch_issued == 0);
				if (mirror)
					REQUIRE(sum.n_drives >= 2 && sum.drives[1].bytes > 0);
				expert_store_free(s);
			}
}

/* With cache 0 the scratch pool holds 2 x max_batch: two layers' sets
 * fit, a third does not (-ENOBUFS, nothing left pinned), and the held
 * records are never overwritten. */
static void test_in_use(test_model *m)
{
	expert_store *s = open_store(m, 0, 1, 0, NULL);
	int mb = expert_store_max_batch(s);
	REQUIRE(mb == TOPK);
	int a[2 * TOPK], b[2 * TOPK], c[2 * TOPK];
	const void *ra[2 * TOPK], *rb[2 * TOPK], *rc[2 * TOPK];
	for (int i = 0; i < mb; i++) {
		a[i] = i;
		b[i] = i + 4;
		c[i] = i + 8;
	}
	coli_err err;
	REQUIRE(expert_store_acquire(s, 1, a, mb, ra, &err) == 0);
	REQUIRE(expert_store_acquire(s, 2, b, mb, rb, &err) == 0);
	REQUIRE(expert_store_acquire(s, 3, c, mb, rc, &err) == -ENOBUFS);
	for (int i = 0; i < mb; i++) {
		REQUIRE(tm_check(m, 1, a[i], ra[i]));
		REQUIRE(tm_check(m, 2, b[i], rb[i]));
	}
	/* a prefetch now must not steal held records */
	expert_store_prefetch(s, 3, c, mb);
	for (int i = 0; i < mb; i++)
		REQUIRE(tm_check(m, 1, a[i], ra[i]));
	expert_store_release(s, 1);
	REQUIRE(expert_store_acquire(s, 3, c, mb, rc, &err) == 0);
	for (int i = 0; i < mb; i++) {
		REQUIRE(tm_check(m, 2, b[i], rb[i]));
		REQUIRE(tm_check(m, 3, c[i], rc[i]));
	}
	expert_store_release(s, 2);
	expert_store_release(s, 3);
	/* bad arguments */
	int bad = EXPERTS;
	REQUIRE(expert_store_acquire(s, 1, &bad, 1, ra, &err) == -EINVAL);
	REQUIRE(expert_store_acquire(s, 0, a, 1, ra, &err) == -EINVAL); /* dense layer */
	expert_store_free(s);
}

/* The engine's order (forward_moe.c): prefetch layer L+1, then acquire layer L in
 * groups, release L. With no cache and perfect predictions every prefetched
 * record must be used (precision 1): a prefetch may not evict another
 * prefetch still waiting for its acquire. */
static void test_engine_order(test_model *m)
{
	expert_store *s = open_store(m, 0, 1, 1, NULL);
	coli_err err;
	for (int t = 0; t < 30; t++)
		for (int l = 1; l < LAYERS; l++) {
			int ex[TOPK], nx[TOPK];
			const void *recs[TOPK];
			for (int j = 0; j < TOPK; j++)
				ex[j] = route(t, l, j);
			if (l + 1 < LAYERS) {
				for (int j = 0; j < TOPK; j++)
					nx[j] = route(t, l + 1, j);
				expert_store_prefetch(s, l + 1, nx, TOPK);
			}
			float w[TOPK] = { 0.5f, 0.5f };
			expert_store_note_routing(s, l, ex, w, TOPK);
			int group = expert_store_max_batch(s);
			for (int g = 0; g < TOPK; g += group) {
				int gn = TOPK - g < group ? TOPK - g : group;
				REQUIRE(expert_store_acquire(s, l, ex + g, gn, recs, &err) == 0);
				for (int j = 0; j < gn; j++)
					REQUIRE(tm_check(m, l, ex[g + j], recs[j]));
				expert_store_release(s, l);
			}
		}
	expert_stats_summary sum;
	expert_stats_snapshot(expert_store_stats(s), &sum);
	REQUIRE(sum.prefetch_valid && sum.prefetch_issued > 0);
	if (getenv("STORE_TEST_VERBOSE"))
		fprintf(stderr, "prefetch issued %llu used %llu hits_pref %llu misses %llu\n", (unsigned long long)sum.prefetch_issued, (unsigned long long)sum.prefetch_used, (unsigned long long)sum.hits_prefetched, (unsigned long long)sum.misses);
	REQUIRE(sum.prefetch_used == sum.prefetch_issued);
	REQUIRE(sum.prefetch_precision == 1.0);
	REQUIRE(sum.prefetch_recall > 0.3 && sum.prefetch_recall < 1.0);
	REQUIRE(sum.hits_prefetched >= sum.prefetch_used);
	REQUIRE(sum.experts_loaded_per_token > 0);
	REQUIRE(sum.tokens == 30);
	expert_store_free(s);
}

/* The engine's pipelined order: request a layer's set (its reads queued
 * first), prefetch the next layer, then acquire the records one at a time,
 * landed ones first. Same bytes, same budget; a requested read counts as
 * a miss, never as a prefetch hit; ready() agrees with acquire. */
static void test_request(test_model *m)
{
	const int64_t caches[] = { 0, 3 * REC, (int64_t)(LAYERS - 1) * EXPERTS * REC };
	for (int ci = 0; ci < 3; ci++)
		for (int pf = 0; pf < 2; pf++)
			for (int dio = 0; dio < 2; dio++) {
				expert_store *s = open_store(m, caches[ci], pf, dio, NULL);
				coli_err err;
				coli_err_clear(&err);
				uint64_t lookups = 0;
				for (int t = 0; t < 20; t++)
					for (int l = 1; l < LAYERS; l++) {
						int ex[TOPK], nx[TOPK];
						for (int j = 0; j < TOPK; j++) {
							ex[j] = route(t, l, j);
							nx[j] = route(l + 1 < LAYERS ? t : t + 1, l + 1 < LAYERS ? l + 1 : 1, j);
						}
						int nu = ex[0] == ex[1] ? 1 : 2;
						REQUIRE(expert_store_request(s, l, ex, nu) == 0);
						expert_store_prefetch(s, l + 1 < LAYERS ? l + 1 : 1, nx, TOPK);
						for (int done = 0; done < nu; done++) {
							int pick = done;
							for (int i = done; i < nu; i++)
								if (expert_store_ready(s, l, ex[i])) {
									pick = i;
									break;
								}
							int e = ex[pick];
							ex[pick] = ex[done];
							ex[done] = e;
							const void *rec;
							REQUIRE(expert_store_acquire(s, l, &e, 1, &rec, &err) == 0);
							REQUIRE(tm_check(m, l, e, rec));
							REQUIRE(expert_store_ready(s, l, e));
							lookups++;
						}
						check_budget(s);
						expert_store_release(s, l);
					}
				expert_stats_summary sum;
				expert_stats_snapshot(expert_store_stats(s), &sum);
				REQUIRE(sum.hits_pinned + sum.hits_cached + sum.hits_prefetched + sum.misses == lookups);
				REQUIRE(sum.busy_seconds > 0); /* reads were in flight a while */
				REQUIRE(sum.misses > 0);
				if (!pf)
					REQUIRE(sum.hits_prefetched == 0 && sum.prefetch_issued == 0);
				if (ci == 2)
					REQUIRE(sum.misses + sum.hits_prefetched <= (uint64_t)(LAYERS - 1) * EXPERTS);
				/* more than max_batch, or a layer without experts: refused */
				int many[4 * TOPK + 1] = { 0 };
				REQUIRE(expert_store_request(s, 1, many, 4 * TOPK + 1) < 0);
				REQUIRE(expert_store_request(s, 0, many, 1) < 0);
				REQUIRE(!expert_store_ready(s, 0, 0) && !expert_store_ready(s, 1, EXPERTS));
				expert_store_free(s);
			}
}

/* cache "auto": bounded by all expert bytes (this model is tiny), split
 * half pinned, half cached, plus what scratch tops the cache up with. */
static void test_auto_budget(test_model *m)
{
	g_pin = -1;
	expert_store *s = open_store(m, -1, 1, 0, NULL);
	g_pin = 0;
	expert_stats_summary sum;
	expert_stats_snapshot(expert_store_stats(s), &sum);
	int64_t all = (int64_t)(LAYERS - 1) * EXPERTS * REC;
	REQUIRE(sum.budget_pin + sum.budget_cache == all);
	REQUIRE(sum.budget_pin == all / 2);
	/* scratch only tops the unpinned cache up to 2 x max_batch records */
	int64_t want_scratch = 2 * TOPK * REC - sum.budget_cache;
	REQUIRE(sum.budget_scratch == (want_scratch > 0 ? want_scratch : 0));
	REQUIRE(sum.record_size == REC);
	run_tokens(m, s, 10);
	expert_store_free(s);
}

static void test_mirrors(test_model *m)
{
	char mir[600], cmd[1300];
	snprintf(mir, sizeof mir, "%s/mirror", m->dir);
	copy_tree(m->dir, mir);
	test_matrix(m, mir);

	/* weights 0,1: every stripe from the mirror, none from the primary */
	expert_store_opts o;
	expert_store_opts_default(&o);
	o.cache_bytes = 0;
	o.pin_bytes = 0;
	coli_err e;
	REQUIRE(expert_store_opts_parse_flag(&o, "--mirror", mir, &e) == 1);
	REQUIRE(expert_store_opts_parse_flag(&o, "--mirror-weights=0,1", NULL, &e) == 0);
	expert_store *s;
	REQUIRE(expert_store_open(&m->c, &o, &s, &e) == 0);
	run_tokens(m, s, 5);
	expert_stats_summary sum;
	expert_stats_snapshot(expert_store_stats(s), &sum);
	REQUIRE(sum.drives[0].bytes == 0 && sum.drives[1].bytes > 0);
	expert_store_free(s);

	/* a mirror shard of the wrong size is not used for that shard */
	snprintf(cmd, sizeof cmd, "truncate -s 4096 '%s/experts/shard-002.bin'", mir);
	REQUIRE(system(cmd) == 0);
	warnings = 0;
	s = open_store(m, 0, 1, 1, mir);
	REQUIRE(warnings == 1);
	run_tokens(m, s, 10);
	expert_store_free(s);
	copy_tree(m->dir, mir);

	/* mirror deleted mid-run: open files keep working, same bytes */
	s = open_store(m, 3 * REC, 1, 0, mir);
	run_tokens(m, s, 5);
	tm_rmrf(mir);
	run_tokens(m, s, 10);
	expert_store_free(s);

	/* mirror truncated mid-run (a vanished drive reads as EOF): falls back
	 * to the primary, disabled with one warning, same bytes */
	copy_tree(m->dir, mir);
	s = open_store(m, 0, 0, 0, mir);
	run_tokens(m, s, 3);
	for (int l = 1; l < LAYERS; l++) {
		snprintf(cmd, sizeof cmd, "truncate -s 0 '%s/experts/shard-%03d.bin'", mir, l);
		REQUIRE(system(cmd) == 0);
	}
	warnings = 0;
	run_tokens(m, s, 10);
	expert_stats_snapshot(expert_store_stats(s), &sum);
	REQUIRE(sum.drives[1].enabled == 0);
	REQUIRE(warnings == 1);
	expert_store_free(s);

	/* same size, wrong bytes: caught only with verify_mirrors (sha256) */
	copy_tree(m->dir, mir);
	char *sums[LAYERS] = { NULL };
	for (int l = 1; l < LAYERS; l++) {
		char hex[65];
		REQUIRE(coli_sha256_file(m->paths[l], hex, &e) == 0);
		sums[l] = strdup(hex);
	}
	m->c.expert_shard_sha256 = sums;
	snprintf(cmd, sizeof cmd, "%s/experts/shard-003.bin", mir);
	FILE *f = fopen(cmd, "r+b");
	REQUIRE(f && fseek(f, REC + 100, SEEK_SET) == 0 && fputc(0x5a, f) != EOF && fclose(f) == 0);
	expert_store_opts_default(&o);
	o.cache_bytes = 0;
	o.pin_bytes = 0;
	o.verify_mirrors = 1;
	REQUIRE(expert_store_opts_parse_flag(&o, "--mirror", mir, &e) == 1);
	REQUIRE(expert_store_opts_parse_flag(&o, "--mirror-weights", "0,1", &e) == 1);
	warnings = 0;
	REQUIRE(expert_store_open(&m->c, &o, &s, &e) == 0);
	REQUIRE(warnings == 1);
	run_tokens(m, s, 10); /* layer 3 from the primary, the rest mirrored */
	expert_stats_snapshot(expert_store_stats(s), &sum);
	REQUIRE(sum.drives[0].bytes > 0 && sum.drives[1].bytes > 0);
	expert_store_free(s);
	m->c.expert_shard_sha256 = NULL;
	for (int l = 0; l < LAYERS; l++)
		free(sums[l]);
	tm_rmrf(mir);

	/* a missing mirror directory is ignored with a warning */
	warnings = 0;
	s = open_store(m, 0, 1, 0, "/nonexistent/colitop-mirror");
	REQUIRE(warnings == 1);
	run_tokens(m, s, 3);
	expert_store_free(s);
	tm_rmrf(mir);
}

#ifdef COLI_FAULT_INJECTION
static void with_fault(test_model *m, const char *var, const char *val, const char *mirror, int expect_fail)
{
	setenv(var, val, 1);
	expert_store *s = open_store(m, 0, 0, 1, mirror);
	unsetenv(var);
	int ex[TOPK] = { 1, 2 };
	const void *recs[TOPK];
	coli_err err;
	coli_err_clear(&err);
	int rc = expert_store_acquire(s, 1, ex, TOPK, recs, &err);
	if (expect_fail) {
		REQUIRE(rc == -EIO);
		REQUIRE(strstr(err.msg, "shard-001.bin"));
		/* the store keeps working */
		REQUIRE(expert_store_acquire(s, 1, ex, TOPK, recs, &err) == 0);
	} else {
		REQUIRE(rc == 0);
	}
	for (int j = 0; j < TOPK; j++)
		REQUIRE(tm_check(m, 1, ex[j], recs[j]));
	expert_store_release(s, 1);
	run_tokens(m, s, 5);
	expert_store_free(s);
}

static void test_faults(test_model *m)
{
	char mir[600];
	snprintf(mir, sizeof mir, "%s/mirror", m->dir);
	copy_tree(m->dir, mir);
	with_fault(m, "COLI_FAULT_SHORT_READ", "1", NULL, 0);
	with_fault(m, "COLI_FAULT_SHORT_READ", "2", mir, 0);
	with_fault(m, "COLI_FAULT_READ_EAGAIN", "1", NULL, 0);
	with_fault(m, "COLI_FAULT_READ_EIO", "1", NULL, 1);
	/* primary fails, weights 1,0 keep every stripe on it: the mirror
	 * serves the retry, same bytes */
	copy_tree(m->dir, mir);
	g_weights = "1,0";
	warnings = 0;
	with_fault(m, "COLI_FAULT_READ_EIO", "1", mir, 0);
	REQUIRE(warnings == 1);
	g_weights = NULL;
	warnings = 0;
	with_fault(m, "COLI_FAULT_MIRROR_EIO", "1", mir, 0);
	REQUIRE(warnings == 1);

	/* O_DIRECT refused by the filesystem: buffered reads, same bytes */
	setenv("COLI_FAULT_NO_DIRECT", "1", 1);
	expert_store *s = open_store(m, 0, 1, 1, NULL);
	unsetenv("COLI_FAULT_NO_DIRECT");
	expert_stats_summary sum;
	expert_stats_snapshot(expert_store_stats(s), &sum);
	REQUIRE(sum.direct == 0);
	run_tokens(m, s, 5);
	expert_store_free(s);
	s = open_store(m, 0, 1, 1, NULL);
	expert_stats_snapshot(expert_store_stats(s), &sum);
	REQUIRE(sum.direct == 1); /* this filesystem takes O_DIRECT */
	expert_store_free(s);
	tm_rmrf(mir);
}
#endif

int main(void)
{
	coli_log_set_sink(sink, NULL);
	test_model m;
	tm_make(&m, LAYERS, EXPERTS, TOPK, REC);
	test_matrix(&m, NULL);
	test_in_use(&m);
	test_request(&m);
	test_auto_budget(&m);
	test_engine_order(&m); /* LRU and */
	test_engine_order(&m); /* LFU-decay */
	test_mirrors(&m);
	test_poll(&m);
#ifdef COLI_FAULT_INJECTION
	test_faults(&m);
#else
	/* the read-fault checks need a test build; CI must run them */
	if (getenv("CI") && !strcmp(getenv("CI"), "true")) {
		fprintf(stderr, "store_read: built without --enable-fault-injection (CI=true: failing)\n");
		return 1;
	}
	printf("store_read: read-fault checks not compiled (configure --enable-fault-injection)\n");
#endif
	tm_free(&m);
	return test_summary(__FILE__);
}
