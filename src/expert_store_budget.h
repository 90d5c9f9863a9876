/* expert_store_budget.h - the automatic expert-cache budget as a pure
 * function of the room's numbers, so each term can be tested and shown.
 *
 *   room    = cgroup limit - (usage - reclaimable page cache), the tightest
 *             level of the process's memory cgroup path; MemAvailable when
 *             smaller or when there is no limit
 *   free    = room - KV - reserve
 *   total   = the largest budget whose store fits in free, within 0..all
 *             expert bytes, where the store of a budget holds
 *             pinned + max(cache, scratch) bytes (expert_store_open.c: the
 *             scratch pool tops a cache below 2 x max_batch records up)
 *
 * The dense part is read into RAM before the store opens, so it is already
 * inside usage (and outside MemAvailable): it is shown, not subtracted a
 * second time (the old rule did, and came out at 0 B inside a 1.4 GB
 * cgroup). KV is what the caller will allocate for its context and slots
 * (the engine: --ctx x slots; `coli bench`: its prompt + gen, one
 * sequence). The scratch pool is counted only where the store adds it,
 * below 2 x max_batch records of cache: subtracting it from every budget
 * (the previous rule) left 2 x top-k records of the cgroup unused, ~340
 * MiB on a GLM-5 slice (bench/glm5_slice.sh step 3c measured it). The
 * reserve is the caller's step state (activations of its batch, scores
 * and spill rows of its context, int8 scratch), measured by allocating
 * one of that shape before the store opens (coli_model_open,
 * coli_state_scratch_bytes); where no caller declares one (coli doctor,
 * tools that size their own state) it is STORE_BUDGET_RESERVE. Pool
 * thread stacks and the allocator's arenas exist before the budget is
 * derived, so they are inside usage, not reserved again. Page cache:
 * the dense files' is dropped after loading inside a cgroup (it is
 * counted in usage otherwise, and only its inactive part as
 * reclaimable); expert reads use O_DIRECT where the filesystem allows
 * (auto), so they charge none. bench/glm5_slice.sh's "over
 * dense+budget" column measures what a run holds beyond dense + budget. */
#ifndef COLI_EXPERT_STORE_BUDGET_H
#define COLI_EXPERT_STORE_BUDGET_H

#include <stddef.h>
#include <stdint.h>

/* The reserve where no step state was measured (the previous fixed
 * margin; a GLM-5 slice's step state at a 64-row batch is ~40 MiB). */
#define STORE_BUDGET_RESERVE (64LL * 1024 * 1024)

struct coli_config;

/* The engine's COLI_MAX_PARALLEL (engine.h), which this layer does not
 * include. */
#define COLI_KV_PLAN_MAX_SLOTS 256

/* KV the engine allocates: its context (ctx_opt, 0 = 4096, capped by the
 * model's max_position_embeddings), rows kept in RAM per slot (kv_ram_opt,
 * 0 = the context) and slots (parallel, 0 = as many as fit in 1 GiB of
 * KV, 1..4; negative = the most; at most COLI_KV_PLAN_MAX_SLOTS). Fills what is non-NULL; returns the bytes of all
 * slots' KV rows. The engine sizes itself with this same function. */
int64_t coli_kv_plan(const struct coli_config *c, int ctx_opt, int kv_ram_opt, int parallel, int *ctx,
		     int *kv_ram, int *slots);

typedef struct store_budget_terms {
	/* inputs */
	int64_t limit;         /* tightest cgroup memory limit; -1 = none */
	int64_t usage;         /* that cgroup's usage now (dense included) */
	int64_t reclaimable;   /* of it, inactive page cache (memory.stat) */
	int64_t mem_available; /* MemAvailable; -1 = unknown */
	int64_t dense;         /* dense bytes as loaded (inside usage) */
	int64_t kv;            /* KV bytes for the configured ctx x slots */
	int64_t reserve;       /* step state scratch (measured) or the default */
	int reserve_measured;  /* 1: reserve is a measured step state */
	int64_t dense_dropped; /* dense page cache dropped after loading */
	int direct;            /* expert reads: 1 O_DIRECT, 0 buffered, -1 auto */
	int64_t record;        /* bytes of one expert record (> 0) */
	int batch;             /* the store's max_batch (records per call) */
	int64_t pin;           /* --pin-budget; -1 = automatic */
	int64_t all;           /* all routed expert bytes */
	/* outputs */
	int64_t room;
	int64_t total;         /* the budget (pinned + cached) */
	int64_t store;         /* RAM the store holds for it, scratch included */
} store_budget_terms;

/* Fill t->room, t->total and t->store from the inputs. -ENOENT when
 * neither a limit nor MemAvailable is known. */
int store_budget_derive(store_budget_terms *t);

/* The pinned part of a budget of total bytes: pin (--pin-budget) when
 * >= 0, else the automatic rule of store_budget_resolve (half of total
 * below 4 x batch records or when total holds all; none between); never
 * more than all. */
int64_t store_budget_pin(int64_t total, int64_t pin, int64_t all, int64_t record, int batch);

/* RAM the store holds for a budget of total bytes: pinned + max(cache,
 * 2 x batch records), in whole records, as expert_store_open sizes it. */
int64_t store_budget_store_bytes(int64_t total, int64_t pin, int64_t all, int64_t record, int batch);

/* The terms measured now for container c under options o (/proc/meminfo,
 * /proc/self/cgroup, /sys/fs/cgroup), derived. What the store does at open
 * with --expert-cache auto, and what `coli doctor` shows. */
struct coli_container;
struct expert_store_opts;
int store_budget_measure(const struct coli_container *c, const struct expert_store_opts *o,
			 store_budget_terms *t);

/* The room (above) of the process now, before anything is placed; -1
 * when neither MemAvailable nor a cgroup limit can be read. */
int64_t store_budget_room_now(void);

/* One line naming every term: "budget 512 MiB = cgroup limit 1.33 GiB -
 * (usage ... - reclaimable cache ...) - KV ... - margin ... (store ...
 * with its scratch pool; dense ... already in usage; experts total ...)".
 * snprintf's return. */
int store_budget_explain(const store_budget_terms *t, char *buf, size_t n);

#endif
