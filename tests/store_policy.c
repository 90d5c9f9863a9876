/* store_policy.c - trace replay: Belady's optimal policy is an upper bound
 * for every online policy at every capacity; the replay matches the live
 * store's policy code; lfu-next beats LRU and LFU-decay where the layer
 * order decides; traces load from the text format.
 *
 * `store_policy -v [tokens]` prints the measurement behind the default
 * policy choice (see expert_store_policy.c). */
#include "config.h"

#include "expert_store.h"
#include "expert_store_int.h"
#include "store_test.h"

static double rate(const expert_trace *t, int policy, int64_t cap, double hl)
{
	expert_replay_result r;
	coli_err e;
	REQUIRE(store_replay_hl(t, policy, cap, hl, &r, &e) == 0);
	REQUIRE(r.accesses > 0 && r.hits <= r.accesses);
	return r.hit_rate;
}

static void measure(int tokens)
{
	const double zipf[] = { 0.8, 1.0, 1.2 };
	const double loc[] = { 0.1, 0.3, 0.6 };
	const double caps[] = { 0.03, 0.05, 0.1, 0.25, 0.4, 0.6 };
	const double hls[] = { 4, 8, 16, 64 };
	printf("(16 layers x 64 experts, top-4: one token touches 64 records = 6.25%% of all)\n");
	printf("zipf loc  cap   belady    lru    lfu4   lfu8  lfu16  lfu64  next4  next8\n");
	for (int zi = 0; zi < 3; zi++)
		for (int li = 0; li < 3; li++) {
			expert_trace t;
			coli_err e;
			REQUIRE(expert_trace_synth(&t, 16, 64, 4, tokens, zipf[zi], loc[li], 42, &e) == 0);
			for (int ci = 0; ci < 6; ci++) {
				int64_t cap = (int64_t)(caps[ci] * 16 * 64);
				printf("%4.1f %3.1f %4.0f%%  %6.3f %6.3f", zipf[zi], loc[li], caps[ci] * 100,
				       rate(&t, EXPERT_POLICY_BELADY, cap, 64), rate(&t, EXPERT_POLICY_LRU, cap, 64));
				for (int h = 0; h < 4; h++)
					printf(" %6.3f", rate(&t, EXPERT_POLICY_LFU_DECAY, cap, hls[h]));
				printf(" %6.3f %6.3f\n", rate(&t, EXPERT_POLICY_LFU_NEXT, cap, 4),
				       rate(&t, EXPERT_POLICY_LFU_NEXT, cap, 8));
			}
			expert_trace_free(&t);
		}
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "-v")) {
		measure(argc > 2 ? atoi(argv[2]) : 4000);
		return 0;
	}
	expert_trace t;
	coli_err e;
	REQUIRE(expert_trace_synth(&t, 6, 32, 4, 400, 1.0, 0.4, 7, &e) == 0);
	/* every row holds top_k distinct experts in range */
	for (int i = 0; i < t.n_tokens * t.n_layers; i++)
		for (int j = 0; j < t.top_k; j++) {
			int x = t.ids[i * t.top_k + j];
			REQUIRE(x >= 0 && x < t.n_experts);
			for (int k = 0; k < j; k++)
				REQUIRE(t.ids[i * t.top_k + k] != x);
		}
	const int64_t caps[] = { 0, 1, 4, 16, 48, 96, 150, 192, 1000 };
	for (size_t c = 0; c < sizeof caps / sizeof caps[0]; c++) {
		double b = rate(&t, EXPERT_POLICY_BELADY, caps[c], 64);
		for (int p = 0; p < EXPERT_POLICY_COUNT; p++) {
			if (p == EXPERT_POLICY_BELADY)
				continue;
			expert_replay_result r;
			REQUIRE(expert_store_replay_trace(&t, p, caps[c], &r, &e) == 0);
			REQUIRE(r.hit_rate <= b + 1e-12);
			if (caps[c] == 0)
				REQUIRE(r.hits == 0);
		}
		if (caps[c] >= 6 * 32) /* everything fits: only cold misses */
			REQUIRE(b == rate(&t, EXPERT_POLICY_LRU, caps[c], 64));
	}
	/* Why LFU-decay is the default: a cache smaller than one token's
	 * working set (6 layers x top-4 = 24 records) gives LRU no hit at all,
	 * LFU-decay keeps the often-routed experts. */
	REQUIRE(rate(&t, EXPERT_POLICY_LRU, 16, 16) == 0.0);
	REQUIRE(rate(&t, EXPERT_POLICY_LFU_DECAY, 16, 16) > 0.1);
	REQUIRE(rate(&t, EXPERT_POLICY_LFU_NEXT, 16, 0) > 0.1);

	/* The default and what a flag value resolves to. */
	REQUIRE(store_policy_resolve(-1) == EXPERT_POLICY_LFU_NEXT);
	REQUIRE(store_policy_resolve(EXPERT_POLICY_BELADY) == EXPERT_POLICY_LFU_NEXT);
	REQUIRE(store_policy_resolve(EXPERT_POLICY_LRU) == EXPERT_POLICY_LRU);
	REQUIRE(store_policy_resolve(EXPERT_POLICY_LFU_DECAY) == EXPERT_POLICY_LFU_DECAY);
	REQUIRE(!strcmp(expert_policy_name(store_policy_resolve(-1)), "lfu-next"));
	expert_store_opts o;
	expert_store_opts_default(&o);
	REQUIRE(expert_store_opts_parse_flag(&o, "--cache-policy", "lfu-next", &e) == 1 &&
	      o.policy == EXPERT_POLICY_LFU_NEXT);
	REQUIRE(expert_store_opts_parse_flag(&o, "--cache-policy=belady", NULL, &e) == -EINVAL);

	/* Why lfu-next: 3 MoE layers (after a dense one), each routing the
	 * same 2 experts every token: 6 records visited in a cycle, room for
	 * 4. LRU and LFU-decay (equal counts, so the oldest goes) evict the
	 * record needed next and never hit; lfu-next evicts those of the layer
	 * visited longest from now and hits on half the accesses (Belady:
	 * 0.6; the test also runs 4 MoE-layer-free rows of a dense layer). */
	expert_trace c;
	REQUIRE(expert_trace_synth(&c, 4, 8, 2, 200, 1.0, 0.0, 3, &e) == 0);
	for (int tok = 0; tok < c.n_tokens; tok++)
		for (int l = 0; l < 4; l++)
			for (int j = 0; j < 2; j++)
				c.ids[(tok * 4 + l) * 2 + j] = l ? j + 2 * l : -1;
	double c_lru = rate(&c, EXPERT_POLICY_LRU, 4, 0), c_lfu = rate(&c, EXPERT_POLICY_LFU_DECAY, 4, 0);
	double c_next = rate(&c, EXPERT_POLICY_LFU_NEXT, 4, 0), c_bel = rate(&c, EXPERT_POLICY_BELADY, 4, 0);
	REQUIRE(c_lru < 0.05 && c_lfu < 0.05);
	REQUIRE(c_next > 0.45 && c_next <= c_bel + 1e-12);
	expert_trace_free(&c);

	/* Automatic pin budget: half below 4 x top-k records (the scratch
	 * pool tops the unpinned half up, so pinning is extra room) and when
	 * everything fits; none in between, where a fixed set takes room from
	 * the cache. 3 MoE layers x 16 experts, top-4, records of 4 KiB. */
	{
		coli_container ct;
		memset(&ct, 0, sizeof ct);
		char *paths[4] = { NULL, "1", "2", "3" };
		ct.config.num_hidden_layers = 4;
		ct.config.n_routed_experts = 16;
		ct.config.num_experts_per_tok = 4;
		ct.expert_record_size = 4096;
		ct.expert_shard_paths = paths;
		const int64_t R = 4096;
		expert_store_opts_default(&o);
		int64_t pin, cache;
		o.cache_bytes = 8 * R;
		REQUIRE(store_budget_resolve(&ct, &o, &pin, &cache) == 0 && pin == 4 * R && cache == 4 * R);
		o.cache_bytes = 15 * R;
		REQUIRE(store_budget_resolve(&ct, &o, &pin, &cache) == 0 && pin == 15 * R / 2);
		o.cache_bytes = 16 * R;
		REQUIRE(store_budget_resolve(&ct, &o, &pin, &cache) == 0 && pin == 0 && cache == 16 * R);
		o.cache_bytes = 47 * R;
		REQUIRE(store_budget_resolve(&ct, &o, &pin, &cache) == 0 && pin == 0);
		o.cache_bytes = 48 * R; /* everything */
		REQUIRE(store_budget_resolve(&ct, &o, &pin, &cache) == 0 && pin == 24 * R && cache == 24 * R);
		o.max_batch = 2; /* 4 x max_batch = 8 records */
		o.cache_bytes = 8 * R;
		REQUIRE(store_budget_resolve(&ct, &o, &pin, &cache) == 0 && pin == 0);
		o.max_batch = 0;
		o.pin_bytes = 3 * R; /* given: kept */
		o.cache_bytes = 16 * R;
		REQUIRE(store_budget_resolve(&ct, &o, &pin, &cache) == 0 && pin == 3 * R && cache == 13 * R);
	}

	/* LRU by hand: capacity 2 on one layer, sequence 0 1 0 2 1 */
	expert_trace h;
	REQUIRE(expert_trace_synth(&h, 1, 4, 1, 5, 1.0, 0.0, 1, &e) == 0);
	const int seq[] = { 0, 1, 0, 2, 1 };
	for (int i = 0; i < 5; i++)
		h.ids[i] = seq[i];
	expert_replay_result r;
	REQUIRE(expert_store_replay_trace(&h, EXPERT_POLICY_LRU, 2, &r, &e) == 0);
	REQUIRE(r.hits == 1); /* 0 hits; 2 evicts 1; 1 misses */
	REQUIRE(expert_store_replay_trace(&h, EXPERT_POLICY_BELADY, 2, &r, &e) == 0);
	REQUIRE(r.hits == 2); /* Belady evicts 0 (never used again) for 2 */
	expert_trace_free(&h);

	/* text trace round trip */
	char dir[] = "/tmp/store-policy-XXXXXX";
	REQUIRE(mkdtemp(dir));
	char path[64];
	snprintf(path, sizeof path, "%s/trace.txt", dir);
	FILE *f = fopen(path, "w");
	REQUIRE(f);
	fprintf(f, "1:3,5;2:0,7\n1:3,4;2:7,1\n");
	REQUIRE(fclose(f) == 0);
	expert_trace lt;
	REQUIRE(expert_trace_load(&lt, path, 3, 8, 2, &e) == 0);
	REQUIRE(lt.n_tokens == 2 && lt.ids[(0 * 3 + 1) * 2 + 1] == 5 && lt.ids[(1 * 3 + 2) * 2 + 0] == 7);
	REQUIRE(lt.ids[0] == -1); /* layer 0 unused */
	REQUIRE(expert_store_replay_trace(&lt, EXPERT_POLICY_LRU, 8, &r, &e) == 0);
	REQUIRE(r.accesses == 8 && r.hits == 2);
	expert_trace_free(&lt);
	f = fopen(path, "w");
	REQUIRE(f);
	fprintf(f, "1:3,99\n");
	REQUIRE(fclose(f) == 0);
	REQUIRE(expert_trace_load(&lt, path, 3, 8, 2, &e) == -EINVAL);
	tm_rmrf(dir);
	expert_trace_free(&t);
	return test_summary(__FILE__);
}
