/* expert_store_budget.h - the automatic expert-cache budget as a pure
 * function of the room's numbers, so each term can be tested and shown.
 *
 *   room    = cgroup limit - (usage - reclaimable page cache), the tightest
 *             level of the process's memory cgroup path; MemAvailable when
 *             smaller or when there is no limit
 *   total   = room - KV - reserve, within 0..all expert bytes
 *
 * The dense part is read into RAM before the store opens, so it is already
 * inside usage (and outside MemAvailable): it is shown, not subtracted a
 * second time (the old rule did, and came out at 0 B inside a 1.4 GB
 * cgroup). KV is what the engine will allocate for its context and slots;
 * the reserve is the store's scratch pool (allocated beside the budget)
 * plus a fixed margin for allocator slack, thread stacks and I/O rings. */
#ifndef COLI_EXPERT_STORE_BUDGET_H
#define COLI_EXPERT_STORE_BUDGET_H

#include <stddef.h>
#include <stdint.h>

/* Allocator slack, thread stacks, io_uring rings, logits: the part of the
 * reserve not sized from the model. */
#define STORE_BUDGET_MARGIN (64LL * 1024 * 1024)

struct coli_config;

/* KV the engine allocates: its context (ctx_opt, 0 = 4096, capped by the
 * model's max_position_embeddings), rows kept in RAM per slot (kv_ram_opt,
 * 0 = the context) and slots (parallel, 0 = as many as fit in 1 GiB of
 * KV, 1..4; at most 16). Fills what is non-NULL; returns the bytes of all
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
	int64_t reserve;       /* scratch pool + STORE_BUDGET_MARGIN */
	int64_t all;           /* all routed expert bytes */
	/* outputs */
	int64_t room;
	int64_t total;
} store_budget_terms;

/* Fill t->room and t->total from the inputs. -ENOENT when neither a limit
 * nor MemAvailable is known. */
int store_budget_derive(store_budget_terms *t);

/* The terms measured now for container c under options o (/proc/meminfo,
 * /proc/self/cgroup, /sys/fs/cgroup), derived. What the store does at open
 * with --expert-cache auto, and what `coli doctor` shows. */
struct coli_container;
struct expert_store_opts;
int store_budget_measure(const struct coli_container *c, const struct expert_store_opts *o,
			 store_budget_terms *t);

/* One line naming every term: "budget 512 MiB = limit 1.33 GiB - (usage
 * ... - reclaimable ...) - KV ... - reserve ... (dense ... already in
 * usage; experts total ...)". snprintf's return. */
int store_budget_explain(const store_budget_terms *t, char *buf, size_t n);

#endif
