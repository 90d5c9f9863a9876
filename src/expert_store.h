/* expert_store.h - routed experts: pinned / cached in RAM, or read from disk.
 *
 * Owner: the engine thread calls every function here except the statistics
 * readers (expert_store_stats_*), which any thread may call.
 *
 * Placement never changes results: an expert's bytes are identical whether
 * they came from RAM, the primary drive or a mirror. */
#ifndef COLI_EXPERT_STORE_H
#define COLI_EXPERT_STORE_H

#include <stddef.h>
#include <stdint.h>

#include "coli_err.h"
#include "container.h"

typedef struct expert_store expert_store;

typedef struct expert_store_opts {
	int64_t cache_bytes;     /* RAM budget for cached experts; -1 = automatic */
	int64_t pin_bytes;       /* budget for the pinned hot set; -1 = automatic */
	int prefetch;            /* 1 = read predicted next-layer experts early */
	int direct;              /* 1 = O_DIRECT, 0 = buffered, -1 = auto */
	const char *const *mirrors; /* NULL-terminated list of mirror dirs */
	const char *heat_dir;    /* CACHE_DIR/hot-experts; NULL = no persistence */
	int queue_depth;         /* io_uring depth; 0 = default */
} expert_store_opts;

void expert_store_opts_default(expert_store_opts *o);

int expert_store_open(const coli_container *c, const expert_store_opts *o,
		      expert_store **out, coli_err *err);
void expert_store_free(expert_store *s);

/* Make experts[0..n) of `layer` resident and return a pointer to each
 * record in recs[i] (valid until expert_store_release for that layer).
 * Issues all missing reads at once (one io_uring batch) and waits. */
int expert_store_acquire(expert_store *s, int layer, const int *experts, int n,
			 const void **recs, coli_err *err);
void expert_store_release(expert_store *s, int layer);

/* Hint: these experts of `layer` are likely needed next. Non-blocking;
 * wrong guesses cost bandwidth only. */
void expert_store_prefetch(expert_store *s, int layer, const int *experts, int n);

/* Record routing of one token at a layer (for heat, telemetry). */
void expert_store_note_routing(expert_store *s, int layer, const int *experts,
			       const float *weights, int n);

#endif
