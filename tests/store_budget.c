/* store_budget.c - the automatic expert-cache budget as a pure function of
 * the room's numbers (store_budget_derive), its one-line explanation, and
 * the cgroup v1/v2 files read from fixture trees (size_cgroup_memory), so
 * make check needs no real cgroup; the KV the engine plans for a GLM-5.2
 * shape (coli_kv_plan: DSA index keys for the full indexer layers only). */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kv_cache_dir.h"
#include "expert_store_budget.h"
#include "model_config.h"
#include "util_size_parse.h"
#include "store_test.h"

#define MiB (1024LL * 1024)
#define GiB (1024LL * MiB)

#define REC (20 * MiB) /* one record; batch 8: the scratch pool is 16 */

static store_budget_terms terms(int64_t limit, int64_t usage, int64_t reclaim, int64_t avail, int64_t kv,
				int64_t reserve)
{
	store_budget_terms t = { .limit = limit, .usage = usage, .reclaimable = reclaim,
				 .mem_available = avail, .dense = 440 * MiB, .kv = kv, .reserve = reserve, .direct = -1,
				 .record = REC, .batch = 8, .pin = -1, .all = 400 * REC };
	return t;
}

static void test_derive(void)
{
	/* the case: a 1.425 GB cgroup, 509 MiB used of which 60 MiB
	 * is page cache from reading the dense part; the dense 440 MiB is in
	 * usage and is not subtracted again; above 4 x 8 records nothing is
	 * pinned and no scratch pool is added, so the whole rest is budget
	 * (the previous rule also took 16 records of scratch off: 320 MiB) */
	int64_t lim = 1425000000LL;
	int64_t free_ = lim - (509 - 60) * MiB - 27 * MiB - 64 * MiB;
	store_budget_terms t = terms(lim, 509 * MiB, 60 * MiB, 30 * GiB, 27 * MiB, 64 * MiB);
	REQUIRE(store_budget_derive(&t) == 0);
	REQUIRE(t.room == lim - (509 - 60) * MiB);
	REQUIRE(t.total == free_ / REC * REC && t.store == t.total && t.total / REC == 40);
	char line[1024];
	store_budget_explain(&t, line, sizeof line);
	REQUIRE(strstr(line, "budget 800.0 MiB = cgroup limit") && strstr(line, "usage 509.0 MiB") &&
	      strstr(line, "reclaimable cache 60.0 MiB") && strstr(line, "KV 27.0 MiB") &&
	      strstr(line, "reserve 64.0 MiB") && strstr(line, "store 800.0 MiB") &&
	      strstr(line, "reserve: default, no step state measured") &&
	      strstr(line, "dense 440.0 MiB already in usage;") && strstr(line, "expert reads O_DIRECT"));
	/* a measured step state replaces the default reserve, record for
	 * record; the line says how each term was had: the reserve measured,
	 * the dense part's page cache dropped, buffered expert reads */
	t = terms(lim, 509 * MiB, 60 * MiB, 30 * GiB, 27 * MiB, 37 * MiB);
	t.reserve_measured = 1;
	t.dense_dropped = 440 * MiB;
	t.direct = 0;
	REQUIRE(store_budget_derive(&t) == 0);
	REQUIRE(t.total == (lim - (509 - 60) * MiB - 27 * MiB - 37 * MiB) / REC * REC && t.total / REC == 42);
	store_budget_explain(&t, line, sizeof line);
	REQUIRE(strstr(line, "- KV 27.0 MiB - reserve 37.0 MiB, in whole records") &&
		strstr(line, "reserve: the step state's scratch, measured") &&
		strstr(line, "its page cache dropped: 440.0 MiB") &&
		strstr(line, "expert reads buffered (page cache, reclaimable)"));
	/* MemAvailable below the cgroup's room sets the room */
	t = terms(16 * GiB, 1 * GiB, 0, 2 * GiB, 1 * GiB, 64 * MiB);
	REQUIRE(store_budget_derive(&t) == 0 && t.room == 2 * GiB && t.total == (1 * GiB - 64 * MiB) / REC * REC);
	store_budget_explain(&t, line, sizeof line);
	REQUIRE(strstr(line, "MemAvailable 2.00 GiB") && !strstr(line, "cgroup"));
	/* no cgroup limit, no margin: exactly the room in records */
	t = terms(-1, 0, 0, 40 * REC, 0, 0);
	REQUIRE(store_budget_derive(&t) == 0 && t.total == 40 * REC && t.store == 40 * REC);
	/* below 4 x batch records half is pinned and the cache half is topped
	 * up to 16 records: the store holds total/2 + 16 records (whole
	 * slots of each half), so 24 records of room give a budget of 17
	 * (8 pinned + 8 cached slots, the cache topped up to 16), not 24
	 * (which would hold 12 + 16 = 28) */
	t = terms(-1, 0, 0, 24 * REC, 0, 0);
	REQUIRE(store_budget_derive(&t) == 0 && t.total == 17 * REC && t.store == 24 * REC);
	t = terms(-1, 0, 0, 31 * REC, 0, 0); /* 31 -> 15 + 16 slots = 31 */
	REQUIRE(store_budget_derive(&t) == 0 && t.total == 31 * REC && t.store == 31 * REC);
	/* 32 records and above: no pin, no scratch: all of it */
	t = terms(-1, 0, 0, 32 * REC + REC / 2, 0, 0);
	REQUIRE(store_budget_derive(&t) == 0 && t.total == 32 * REC && t.store == 32 * REC);
	/* less room than the scratch pool: no budget (the store still holds
	 * its 16 records; nothing smaller can run) */
	t = terms(-1, 0, 0, 10 * REC, 0, 0);
	REQUIRE(store_budget_derive(&t) == 0 && t.total == 0 && t.store == 16 * REC);
	/* a fixed --pin-budget is held on top of the cache */
	t = terms(-1, 0, 0, 100 * REC, 0, 0);
	t.pin = 50 * REC;
	REQUIRE(store_budget_derive(&t) == 0 && t.total == 100 * REC && t.store == 100 * REC);
	t.pin = 84 * REC; /* 84 pinned + 16 cached: the floor, no more */
	REQUIRE(store_budget_derive(&t) == 0 && t.total == 100 * REC && t.store == 100 * REC);
	t.pin = 90 * REC; /* 90 + the 16-record floor cannot fit: 0 (the store still holds the pin) */
	REQUIRE(store_budget_derive(&t) == 0 && t.total == 0 && t.store == 106 * REC);
	/* never more than all experts (all held: half pinned, half cached) */
	t = terms(-1, 0, 0, 64 * GiB, 0, 0);
	REQUIRE(store_budget_derive(&t) == 0 && t.total == 400 * REC && t.store == 400 * REC);
	t = terms(1 * GiB, 2 * GiB, 0, -1, 0, 0);
	REQUIRE(store_budget_derive(&t) == 0 && t.room == 0 && t.total == 0);
	t = terms(1 * GiB, 100 * MiB, 0, -1, 1 * GiB, 0);
	REQUIRE(store_budget_derive(&t) == 0 && t.total == 0);
	/* reclaimable larger than usage (racy reads) counts as nothing used */
	t = terms(1 * GiB, 10 * MiB, 20 * MiB, -1, 0, 0);
	REQUIRE(store_budget_derive(&t) == 0 && t.room == 1 * GiB);
	/* nothing known */
	t = terms(-1, 0, 0, -1, 0, 0);
	REQUIRE(store_budget_derive(&t) == -ENOENT);
	/* the pin rule and the store's size, as expert_store_open has them */
	REQUIRE(store_budget_pin(20 * REC, -1, 400 * REC, REC, 8) == 10 * REC);
	REQUIRE(store_budget_pin(32 * REC, -1, 400 * REC, REC, 8) == 0);
	REQUIRE(store_budget_pin(400 * REC, -1, 400 * REC, REC, 8) == 200 * REC);
	REQUIRE(store_budget_pin(500 * REC, 450 * REC, 400 * REC, REC, 8) == 400 * REC);
	REQUIRE(store_budget_store_bytes(0, -1, 400 * REC, REC, 8) == 16 * REC);
	REQUIRE(store_budget_store_bytes(20 * REC, -1, 400 * REC, REC, 8) == 26 * REC);
}

static void put(const char *dir, const char *name, const char *text)
{
	char p[4200];
	coli_err e = { 0 };
	REQUIRE(kv_mkdirs(dir, &e) == 0);
	snprintf(p, sizeof p, "%s/%s", dir, name);
	FILE *f = fopen(p, "w");
	REQUIRE(f && fputs(text, f) >= 0 && fclose(f) == 0);
}

static void test_cgroup_files(const char *tmp)
{
	char root[4096], d[4200];
	size_cgroup_mem m;
	REQUIRE(size_cgroup_stat("anon 5\nfile 9\ninactive_file 4096\n", "inactive_file") == 4096);
	REQUIRE(size_cgroup_stat("total_inactive_file 7\ninactive_file 3\n", "inactive_file") == 3);
	REQUIRE(size_cgroup_stat("anon 5\n", "inactive_file") == -1);

	/* v2: a limit on the parent, a tighter room on the leaf */
	snprintf(root, sizeof root, "%s/v2", tmp);
	snprintf(d, sizeof d, "%s/box", root);
	put(d, "memory.max", "2147483648\n");
	put(d, "memory.current", "1073741824\n");
	put(d, "memory.stat", "anon 900\ninactive_file 536870912\n");
	snprintf(d, sizeof d, "%s/box/job", root);
	put(d, "memory.max", "1425000000\n");
	put(d, "memory.current", "533725184\n");
	put(d, "memory.stat", "anon 1\nactive_file 5\ninactive_file 62914560\n");
	REQUIRE(size_cgroup_memory(root, "0::/box/job\n", &m) == 0);
	REQUIRE(m.version == 2 && m.limit == 1425000000LL && m.usage == 533725184LL && m.reclaimable == 62914560LL);
	/* "max" on the leaf: the parent's limit applies */
	put(d, "memory.max", "max\n");
	REQUIRE(size_cgroup_memory(root, "0::/box/job\n", &m) == 0);
	REQUIRE(m.limit == 2 * GiB && m.usage == 1 * GiB && m.reclaimable == 512 * MiB);

	/* v1: memory controller among others, usage_in_bytes, total_inactive_file */
	snprintf(root, sizeof root, "%s/v1", tmp);
	snprintf(d, sizeof d, "%s/memory/lxc/c1", root);
	put(d, "memory.limit_in_bytes", "1073741824\n");
	put(d, "memory.usage_in_bytes", "104857600\n");
	put(d, "memory.stat", "cache 10\ninactive_file 1\ntotal_inactive_file 10485760\n");
	snprintf(d, sizeof d, "%s/memory", root);
	put(d, "memory.limit_in_bytes", "9223372036854771712\n");
	REQUIRE(size_cgroup_memory(root, "12:pids:/x\n4:cpu,memory:/lxc/c1\n", &m) == 0);
	REQUIRE(m.version == 1 && m.limit == 1 * GiB && m.usage == 100 * MiB && m.reclaimable == 10 * MiB);

	/* no limit anywhere */
	snprintf(root, sizeof root, "%s/none", tmp);
	snprintf(d, sizeof d, "%s/a", root);
	put(d, "memory.max", "max\n");
	REQUIRE(size_cgroup_memory(root, "0::/a\n", &m) == -ENOENT && m.limit == -1);
}

/* GLM-5.2: 78 layers of 512 + 64 numbers, 21 of them (here every third
 * from layer 0 until there are 21) with a 128-number index key: 190,464
 * bytes a token, not the 219,648 of a key in every layer. */
static void test_kv_plan(void)
{
	static coli_config c;
	c.num_hidden_layers = 78;
	c.kv_lora_rank = 512;
	c.qk_rope_head_dim = 64;
	c.index_topk = 2048;
	c.index_head_dim = 128;
	c.max_position_embeddings = 202752;
	int n = 0;
	for (int l = 0; l < 78; l++) {
		c.index_types[l] = n < 21 && l % 3 == 0 ? 'F' : 'S';
		n += c.index_types[l] == 'F';
	}
	REQUIRE(coli_config_index_layers(&c) == 21);
	REQUIRE(coli_config_kv_token_numbers(&c) * 4 == 190464);
	int ctx, kv_ram, slots;
	REQUIRE(coli_kv_plan(&c, 8192, 0, 1, &ctx, &kv_ram, &slots) == 8192LL * 190464 && slots == 1);
	c.index_topk = 0; /* no indexer: no keys */
	REQUIRE(coli_config_index_layers(&c) == 0 && coli_config_kv_token_numbers(&c) * 4 == 179712);
}

int main(void)
{
	char tmp[] = "/tmp/store_budget.XXXXXX";
	REQUIRE(mkdtemp(tmp));
	test_derive();
	test_cgroup_files(tmp);
	test_kv_plan();
	char cmd[128];
	snprintf(cmd, sizeof cmd, "rm -rf %s", tmp);
	REQUIRE(system(cmd) == 0);
	return test_summary(__FILE__);
}
