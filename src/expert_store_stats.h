/* expert_store_stats.h - live telemetry of the expert store, for the TUI and
 * /metrics.
 *
 * Threads: the engine thread (through the expert store) is the only writer.
 * Any thread may read, without locks: counters are _Atomic with relaxed
 * order (each value is exact, a set of values may straddle one update), and
 * the multi-field per-layer "latest token" record is read through a
 * seqlock (readers retry while a write is in progress).
 *
 * Rolling figures (1 s / 10 s bandwidth, 10 s hit rate) come from per-second
 * buckets stamped with their second; readers sum the complete seconds, so a
 * quiet engine reads as 0 rather than a stale rate. Each metric has a valid
 * bit where "no data yet" differs from 0 (show "n/a", never a fake 0). */
#ifndef COLI_EXPERT_STATS_H
#define COLI_EXPERT_STATS_H

#include <stdint.h>

typedef struct expert_stats expert_stats;

enum expert_tier {
	EXPERT_TIER_DISK = 0,
	EXPERT_TIER_CACHED = 1,
	EXPERT_TIER_PINNED = 2,
	EXPERT_TIER_INFLIGHT = 3,
};

#define EXPERT_STATS_MAX_DRIVES 8
#define EXPERT_STATS_MAX_TOPK 16

typedef struct expert_stats_drive {
	char name[128];          /* "primary" or the mirror directory */
	int enabled;             /* 0 once disabled after an error */
	uint64_t bytes;          /* cumulative bytes read */
	uint64_t errors;
	double bw_1s, bw_10s;    /* bytes/s over the last complete 1 s / 10 s */
} expert_stats_drive;

typedef struct expert_stats_summary {
	int n_layers, n_experts, top_k;
	uint64_t tokens;               /* routings noted on the first MoE layer */
	/* lookups by acquire: hits split by where the record was */
	uint64_t hits_pinned, hits_cached, hits_prefetched, misses;
	double hit_rate;               /* cumulative; valid when hit_rate_valid */
	int hit_rate_valid;
	double hit_rate_10s;           /* last 10 complete seconds */
	int hit_rate_10s_valid;
	double experts_loaded_per_token; /* disk reads (demand + prefetch) / token */
	/* lookups weighted by the rows that used the record: with many
	 * sequences a step's record serves many rows, so this is the share
	 * of expert uses served from RAM (pinned or cached) */
	uint64_t rows_ram, rows_total;
	double row_hit_rate;           /* valid when rows_total */
	/* prefetch quality */
	uint64_t prefetch_issued, prefetch_used;   /* precision = used / issued */
	uint64_t used_total, used_prefetched;      /* recall = prefetched / used */
	double prefetch_precision, prefetch_recall;
	int prefetch_valid;
	/* residency and budgets, bytes */
	int64_t resident_pinned, resident_cached, resident_inflight;
	int64_t budget_pin, budget_cache, budget_scratch;
	int64_t record_size;
	int direct;                    /* 1 O_DIRECT, 0 buffered */
	double wait_seconds;           /* engine time blocked on disk */
	double busy_seconds;           /* time with at least one read in flight:
	                                * bytes_read / busy_seconds is the rate
	                                * the drive gave us while we used it */
	uint64_t bytes_read;           /* all drives */
	int n_drives;
	expert_stats_drive drives[EXPERT_STATS_MAX_DRIVES];
	/* CRC-32C of records read from disk (format version 2): records
	 * verified, and those that failed (not cached, read again next use) */
	uint64_t checksum_records, checksum_errors;
} expert_stats_summary;

typedef struct expert_stats_layer {
	uint64_t token;                /* which token the routing belongs to */
	int n;                         /* routed experts of the latest token */
	int experts[EXPERT_STATS_MAX_TOPK];
	float weights[EXPERT_STATS_MAX_TOPK];
	uint64_t hits, misses;         /* cumulative for this layer */
	double hit_rate;               /* valid when hits + misses > 0 */
	/* DSA indexer: keys the latest row attended to, out of its context
	 * (valid when index_context > 0; kept == context up to index_topk) */
	int index_kept, index_context;
} expert_stats_layer;

typedef struct expert_stats_expert {
	int tier;                      /* enum expert_tier */
	float heat;                    /* decayed routing count */
	uint64_t hits, misses;
} expert_stats_expert;

/* Readers (any thread). */
void expert_stats_snapshot(const expert_stats *st, expert_stats_summary *out);
/* Returns 0, or -EINVAL for a bad layer. */
int expert_stats_layer_get(const expert_stats *st, int layer, expert_stats_layer *out);
/* Fill out[0..n_experts) for one layer; returns the count or -EINVAL. */
int expert_stats_experts_get(const expert_stats *st, int layer, expert_stats_expert *out, int cap);

/* Writer side (the expert store, engine thread). */
expert_stats *expert_stats_new(int n_layers, int n_experts, int top_k, int n_drives);
void expert_stats_free(expert_stats *st);
void expert_stats_set_drive(expert_stats *st, int drive, const char *name, int enabled);
void expert_stats_set_budgets(expert_stats *st, int64_t record_size, int64_t pin,
			      int64_t cache, int64_t scratch, int direct);
void expert_stats_set_resident(expert_stats *st, int64_t pinned, int64_t cached, int64_t inflight);
void expert_stats_set_tier(expert_stats *st, int layer, int expert, int tier);
void expert_stats_set_heat(expert_stats *st, int layer, int expert, float heat);
enum expert_hit_kind { EXPERT_HIT_PINNED, EXPERT_HIT_CACHED, EXPERT_HIT_PREFETCHED, EXPERT_MISS };
void expert_stats_note_lookup(expert_stats *st, int layer, int expert, int kind);
void expert_stats_note_prefetch(expert_stats *st, uint64_t issued, uint64_t used);
void expert_stats_note_use(expert_stats *st, int was_prefetched);
/* An acquired record used by `rows` rows of the step, `ram_rows` of them
 * (all or none) served from RAM. */
void expert_stats_note_rows(expert_stats *st, int ram_rows, int rows);
void expert_stats_note_read(expert_stats *st, int drive, uint64_t bytes);
void expert_stats_note_drive_error(expert_stats *st, int drive);
void expert_stats_note_loaded(expert_stats *st, uint64_t records);
/* One record read from disk checked against its CRC-32C (ok = 1: matched). */
void expert_stats_note_checksum(expert_stats *st, int ok);
void expert_stats_note_wait(expert_stats *st, double seconds);
void expert_stats_note_busy(expert_stats *st, double seconds);
void expert_stats_note_routing(expert_stats *st, int layer, const int *experts,
			       const float *weights, int n, int first_moe_layer);
void expert_stats_note_index(expert_stats *st, int layer, int kept, int context);

#endif
