/* expert_store.h - routed experts: pinned / cached in RAM, or read from disk.
 *
 * Owner: the engine thread calls every function here; the telemetry block
 * returned by expert_store_stats() is read by any thread (expert_store_stats.h).
 * The options struct is only read during expert_store_open.
 *
 * Placement never changes results: an expert's bytes are identical whether
 * they came from RAM, the primary drive or a mirror. */
#ifndef COLI_EXPERT_STORE_H
#define COLI_EXPERT_STORE_H

#include <stddef.h>
#include <stdint.h>

#include "coli_err.h"
#include "model_container.h"

typedef struct expert_store expert_store;
typedef struct expert_stats expert_stats;

#define EXPERT_STORE_MAX_MIRRORS 7

/* Eviction policies. The default (opts.policy = -1: lfu-next, LFU-decay
 * plus the distance to the next visit of the record's layer) was chosen by
 * the measurements described in expert_store_policy.c. BELADY needs the
 * future and exists only for expert_store_replay_trace. */
enum expert_policy {
	EXPERT_POLICY_LRU = 0,
	EXPERT_POLICY_LFU_DECAY = 1,
	EXPERT_POLICY_BELADY = 2,
	EXPERT_POLICY_LFU_NEXT = 3,
	EXPERT_POLICY_COUNT
};
#define EXPERT_POLICY_DEFAULT EXPERT_POLICY_LFU_NEXT

typedef struct expert_store_opts {
	int64_t cache_bytes;     /* RAM budget for cached experts; -1 = automatic */
	int64_t pin_bytes;       /* budget for the pinned hot set; -1 = automatic */
	int prefetch;            /* 1 = read predicted next-layer experts early,
	                          * paused while they cost more than they give
	                          * (expert_store.c, "prefetch gate"); 2 = always;
	                          * 0 = never */
	int direct;              /* 1 = O_DIRECT, 0 = buffered, -1 = auto */
	const char *const *mirrors; /* NULL-terminated list of mirror dirs */
	const char *heat_dir;    /* CACHE_DIR/hot-experts; NULL = no persistence */
	int queue_depth;         /* io_uring depth; 0 = default */
	/* --- added after the first contract; zeroed/defaulted by
	 * expert_store_opts_default, so older callers keep working. --- */
	int policy;              /* enum expert_policy; -1 = default (measured) */
	int max_batch;           /* experts per acquire call; 0 = top_k
	                          * (2 x top_k before expert_store_request) */
	int64_t kv_bytes;        /* KV subtracted by the automatic cache
	                          * budget; -1 = coli_kv_plan of the three
	                          * below (what the engine will allocate) */
	int64_t kv_cap;          /* at most this KV is subtracted (the engine's
	                          * KV budget cap, engine_kv.c); 0 = no cap */
	int kv_ctx, kv_ram, kv_parallel; /* the engine's --ctx, --kv-ram,
	                          * --parallel (0 = their defaults) */
	int state_batch;         /* rows per forward call of the caller's step
	                          * state (coli_state_new's max_batch, its
	                          * max_ctx the KV plan's context); 0 = none
	                          * declared: the budget keeps a default reserve */
	int64_t state_bytes;     /* that state's scratch, measured by
	                          * coli_model_open (coli_state_scratch_bytes);
	                          * -1 = not measured */
	int64_t dense_dropped;   /* dense page cache dropped after loading
	                          * (set by coli_model_open; shown) */
	int verify_mirrors;      /* 1 = sha256 every mirror shard at open (slow) */
	int no_checksums;        /* 1 = do not check records read from disk
	                          * against the manifest's CRC-32C
	                          * (--no-verify-checksums; benchmarks) */
	double mirror_weights[1 + EXPERT_STORE_MAX_MIRRORS]; /* [0] primary, then
	                          * each mirror; 0 = equal shares */
	/* storage for flags parsed by expert_store_opts_parse_flag / _env */
	const char *mirror_list[EXPERT_STORE_MAX_MIRRORS + 1];
	char mirror_env[1024];
} expert_store_opts;

void expert_store_opts_default(expert_store_opts *o);

int expert_store_open(const coli_container *c, const expert_store_opts *o,
		      expert_store **out, coli_err *err);
void expert_store_free(expert_store *s);

/* Budgets and batching.
 *
 * RAM = pin + cache + scratch records, allocated once at open (virtual
 * memory; pages are touched only when a record is read into them). The
 * scratch pool tops the cache up to 2 x max_batch records (none when the
 * cache is at least that large) so that, whatever the cache size (even 0),
 * the engine can hold one layer's set while the next layer's set is
 * prefetched. Requests larger than expert_store_max_batch() are the
 * caller's to split: acquire a group, compute, release, acquire the next.
 * acquire fails with -ENOBUFS (nothing left pinned) when the request cannot
 * fit beside what is already held.
 *
 * expert_store_max_batch: the largest n that one expert_store_acquire is
 * guaranteed to accept while at most one other layer's set is held (the
 * engine acquires a prefill's experts in groups of this size); at least 1,
 * even with cache 0, via the scratch records. */
int expert_store_max_batch(const expert_store *s);

/* Make experts[0..n) of `layer` resident and return a pointer to each
 * record in recs[i] (valid until expert_store_release for that layer).
 * Issues all missing reads at once (one io_uring batch) and waits. */
int expert_store_acquire(expert_store *s, int layer, const int *experts, int n,
			 const void **recs, coli_err *err);
void expert_store_release(expert_store *s, int layer);

/* Start a visit to `layer` (decode and prefill groups): queue the reads of
 * those of experts[0..n) that are not resident, ahead of any prefetch
 * issued afterwards, and hold all n until expert_store_release(layer),
 * without waiting. The acquires of `layer` that follow, up to that release,
 * belong to the same visit (one policy tick), so the engine may acquire
 * the records one at a time and compute each as soon as it has landed
 * while the others are still being read. n <= expert_store_max_batch().
 * Counters are those of acquire (a requested read is a miss). Returns 0 or
 * a negative errno; on error the following acquire reads what is missing. */
int expert_store_request(expert_store *s, int layer, const int *experts, int n);
/* 1 when (layer, expert) is resident and its read complete (acquire would
 * not wait), else 0. Reaps finished reads; never blocks. */
int expert_store_ready(expert_store *s, int layer, int expert);

/* Hint: these experts of `layer` are likely needed next. Non-blocking;
 * wrong guesses cost bandwidth only. */
void expert_store_prefetch(expert_store *s, int layer, const int *experts, int n);

/* Record routing of one token at a layer (for heat, telemetry). */
/* The DSA indexer's kept/context key counts of a layer's latest row, for
 * the statistics (engine thread). */
void expert_store_note_index(expert_store *s, int layer, int kept, int context);
/* The experts[0..n) a layer's step needs and rows[e], the rows of the
 * step routed to expert e (indexed by expert id), before its requests:
 * each use then counts its rows in the cache policy, and a step needing
 * more than max_batch records streams the records colder than the
 * cached ones through instead of replacing the cache with them. */
void expert_store_note_rows(expert_store *s, int layer, const int *experts, const int *rows, int n);
void expert_store_note_routing(expert_store *s, int layer, const int *experts,
			       const float *weights, int n);

/* Read a heat.bin (format in expert_store_heat.c) saved for container c:
 * heat[layer * n_routed_experts + e] (num_hidden_layers x n_routed_experts
 * floats), the decayed routing counts as of the save, and *tokens (may be
 * NULL) the tokens noted then. 0, -ENOENT when absent, or -EINVAL with
 * err naming the file and the fault (another model, shape, version, a
 * bad checksum). For `coli atlas`; the store loads its own at open. */
int expert_heat_read(const char *path, const coli_container *c, float *heat, uint64_t *tokens,
		     coli_err *err);

/* Telemetry block (expert_store_stats.h); lives as long as the store. */
const expert_stats *expert_store_stats(const expert_store *s);

/* Take the reads that have completed (never waits) so their experts leave
 * the in-flight tier; returns how many reads are still in flight. The
 * engine thread calls it while idle: completions are otherwise taken only
 * by the next acquire or prefetch, and reads issued just before the engine
 * went idle (the warm start at open, prefetches of a last step) would show
 * as in flight for as long as it stays idle. Owner thread only. */
int expert_store_poll(expert_store *s);

/* Shared option parsing so every command spells the store's flags the same
 * way (see man/engine-options.inc):
 *   --expert-cache SIZE   (COLI_EXPERT_CACHE)   util_size_parse.h syntax, "auto"
 *   --pin-budget SIZE     (COLI_PIN_BUDGET)
 *   --prefetch / --no-prefetch (COLI_PREFETCH=0|1)
 *   --direct / --no-direct     (COLI_DIRECT=0|1|auto)
 *   --mirror DIR          (COLI_MODEL_MIRROR, colon-separated), repeatable
 *   --mirror-weights W0,W1,...  primary first (COLI_MIRROR_WEIGHTS)
 *   --verify-mirrors      sha256 each mirror shard at open (slow)
 *   --no-verify-checksums / --verify-checksums (COLI_VERIFY_CHECKSUMS=0|1)
 *                         CRC-32C of records read and tensors loaded
 *   --cache-policy lru|lfu-decay (COLI_CACHE_POLICY)
 * `flag` may be given as "--name" or "--name=value". Returns the number of
 * argv words consumed from `value` (0 or 1), -ENOENT when the flag is not a
 * store flag, or -EINVAL with err naming the flag. */
int expert_store_opts_parse_flag(expert_store_opts *o, const char *flag,
				 const char *value, coli_err *err);
/* Read the environment twins (flags given afterwards override them). */
int expert_store_opts_from_env(expert_store_opts *o, coli_err *err);

/* Policy simulation (trace replay), used by tests and `coli bench`.
 * A trace is the routed experts of each token at each layer:
 * ids[(t * n_layers + l) * top_k + j], -1 for "none" (dense layers). */
typedef struct expert_trace {
	int n_layers, n_experts, top_k, n_tokens;
	int32_t *ids;
} expert_trace;

/* Synthetic routing: per layer a Zipf(zipf_s) popularity over a random
 * permutation of experts that drifts slowly, and with probability
 * `locality` an expert of the previous token is routed again. */
int expert_trace_synth(expert_trace *t, int n_layers, int n_experts, int top_k,
		       int n_tokens, double zipf_s, double locality, uint64_t seed,
		       coli_err *err);
void expert_trace_free(expert_trace *t);
/* Load a text trace, one token per line: "l:e,e,e;l:e,e,..." (layer, then
 * its routed experts; layers absent from a line stay -1). */
int expert_trace_load(expert_trace *t, const char *path, int n_layers,
		      int n_experts, int top_k, coli_err *err);

typedef struct expert_replay_result {
	uint64_t accesses, hits;
	double hit_rate;
} expert_replay_result;

/* Replay `t` through `policy` with room for `capacity` records; every
 * policy runs the same victim-selection code as the live store. */
int expert_store_replay_trace(const expert_trace *t, int policy, int64_t capacity,
			      expert_replay_result *out, coli_err *err);
const char *expert_policy_name(int policy);

#endif
