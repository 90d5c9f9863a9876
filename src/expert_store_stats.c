/* expert_store_stats.c - see expert_store_stats.h.
 *
 * All fields are atomics written with relaxed order by the single writer;
 * the per-layer routing record uses a seqlock so a reader never sees the
 * experts of one token with the weights of another. Floats are stored as
 * their bit patterns in atomic 32/64-bit words. */
#include "config.h"

#include "expert_store_stats.h"

#include <errno.h>
#include <stdio.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "util_seqlock.h"
#include "util_bits.h"

#define NBUCKETS 16 /* > 10 s window + the current second */

typedef struct bucket {
	_Atomic int64_t sec;
	_Atomic uint64_t a, b;
} bucket;

typedef struct layer_rec {
	coli_seqlock lock;
	_Atomic uint64_t token;
	_Atomic int n;
	_Atomic int experts[EXPERT_STATS_MAX_TOPK];
	_Atomic uint32_t weights[EXPERT_STATS_MAX_TOPK];
	_Atomic uint64_t hits, misses;
	/* DSA indexer: keys the layer's selection kept for the latest row,
	 * out of its context (one value each, relaxed: the pair may straddle
	 * one update) */
	_Atomic int index_kept, index_context;
} layer_rec;

typedef struct expert_rec {
	_Atomic uint8_t tier;
	_Atomic uint32_t heat;
	_Atomic uint64_t hits, misses;
} expert_rec;

typedef struct drive_rec {
	char name[128];        /* written before readers see n_drives */
	_Atomic int enabled;
	_Atomic uint64_t bytes, errors;
	bucket sec[NBUCKETS];  /* a = bytes */
} drive_rec;

struct expert_stats {
	int n_layers, n_experts, top_k, n_drives;
	_Atomic uint64_t tokens;
	_Atomic uint64_t hits_pinned, hits_cached, hits_prefetched, misses;
	_Atomic uint64_t prefetch_issued, prefetch_used, used_total, used_prefetched;
	_Atomic uint64_t rows_ram, rows_total;
	_Atomic uint64_t loaded;
	_Atomic uint64_t wait_ns;
	_Atomic uint64_t busy_ns;
	_Atomic uint64_t checksum_errors, checksum_records;
	_Atomic int64_t res_pinned, res_cached, res_inflight;
	_Atomic int64_t budget_pin, budget_cache, budget_scratch, record_size;
	_Atomic int direct;
	bucket hitsec[NBUCKETS]; /* a = hits, b = misses */
	drive_rec drives[EXPERT_STATS_MAX_DRIVES];
	layer_rec *layers;       /* [n_layers] */
	expert_rec *experts;     /* [n_layers * n_experts] */
};

#define RLX memory_order_relaxed

static int64_t now_sec(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec;
}

static void bucket_add(bucket *bk, int64_t sec, uint64_t a, uint64_t b)
{
	bucket *x = &bk[sec % NBUCKETS];
	if (atomic_load_explicit(&x->sec, RLX) != sec) {
		/* A reader may briefly see the old second with zeroed counts:
		 * it under-reports one bucket, which is fine for telemetry. */
		atomic_store_explicit(&x->a, 0, RLX);
		atomic_store_explicit(&x->b, 0, RLX);
		atomic_store_explicit(&x->sec, sec, memory_order_release);
	}
	atomic_fetch_add_explicit(&x->a, a, RLX);
	atomic_fetch_add_explicit(&x->b, b, RLX);
}

/* Sum complete seconds [now - span, now - 1]. */
static void bucket_sum(const bucket *bk, int64_t now, int span, uint64_t *a, uint64_t *b)
{
	*a = *b = 0;
	for (int64_t s = now - span; s < now; s++) {
		if (s < 0)
			continue;
		const bucket *x = &bk[s % NBUCKETS];
		if (atomic_load_explicit(&x->sec, memory_order_acquire) != s)
			continue;
		*a += atomic_load_explicit(&x->a, RLX);
		*b += atomic_load_explicit(&x->b, RLX);
	}
}

expert_stats *expert_stats_new(int n_layers, int n_experts, int top_k, int n_drives)
{
	if (n_layers <= 0 || n_experts <= 0 || n_drives < 0)
		return NULL;
	expert_stats *st = calloc(1, sizeof *st);
	if (!st)
		return NULL;
	st->layers = calloc((size_t)n_layers, sizeof *st->layers);
	st->experts = calloc((size_t)n_layers * (size_t)n_experts, sizeof *st->experts);
	if (!st->layers || !st->experts) {
		expert_stats_free(st);
		return NULL;
	}
	st->n_layers = n_layers;
	st->n_experts = n_experts;
	st->top_k = top_k;
	st->n_drives = n_drives > EXPERT_STATS_MAX_DRIVES ? EXPERT_STATS_MAX_DRIVES : n_drives;
	for (int i = 0; i < NBUCKETS; i++)
		atomic_store(&st->hitsec[i].sec, -1);
	for (int d = 0; d < EXPERT_STATS_MAX_DRIVES; d++)
		for (int i = 0; i < NBUCKETS; i++)
			atomic_store(&st->drives[d].sec[i].sec, -1);
	return st;
}

void expert_stats_free(expert_stats *st)
{
	if (!st)
		return;
	free(st->layers);
	free(st->experts);
	free(st);
}

void expert_stats_set_drive(expert_stats *st, int d, const char *name, int enabled)
{
	if (!st || d < 0 || d >= st->n_drives)
		return;
	if (name) {
		/* Names are set at open, before any reader has the pointer. */
		snprintf(st->drives[d].name, sizeof st->drives[d].name, "%s", name);
	}
	atomic_store_explicit(&st->drives[d].enabled, enabled, RLX);
}

void expert_stats_set_budgets(expert_stats *st, int64_t record_size, int64_t pin,
			      int64_t cache, int64_t scratch, int direct)
{
	atomic_store_explicit(&st->record_size, record_size, RLX);
	atomic_store_explicit(&st->budget_pin, pin, RLX);
	atomic_store_explicit(&st->budget_cache, cache, RLX);
	atomic_store_explicit(&st->budget_scratch, scratch, RLX);
	atomic_store_explicit(&st->direct, direct, RLX);
}

void expert_stats_set_resident(expert_stats *st, int64_t pinned, int64_t cached, int64_t inflight)
{
	atomic_store_explicit(&st->res_pinned, pinned, RLX);
	atomic_store_explicit(&st->res_cached, cached, RLX);
	atomic_store_explicit(&st->res_inflight, inflight, RLX);
}

static expert_rec *erec(expert_stats *st, int layer, int expert)
{
	if (layer < 0 || layer >= st->n_layers || expert < 0 || expert >= st->n_experts)
		return NULL;
	return &st->experts[(size_t)layer * (size_t)st->n_experts + (size_t)expert];
}

void expert_stats_set_tier(expert_stats *st, int layer, int expert, int tier)
{
	expert_rec *r = erec(st, layer, expert);
	if (r)
		atomic_store_explicit(&r->tier, (uint8_t)tier, RLX);
}

void expert_stats_set_heat(expert_stats *st, int layer, int expert, float heat)
{
	expert_rec *r = erec(st, layer, expert);
	if (r)
		atomic_store_explicit(&r->heat, coli_f32_bits(heat), RLX);
}

void expert_stats_note_lookup(expert_stats *st, int layer, int expert, int kind)
{
	expert_rec *r = erec(st, layer, expert);
	int hit = kind != EXPERT_MISS;
	if (r)
		atomic_fetch_add_explicit(hit ? &r->hits : &r->misses, 1, RLX);
	if (layer >= 0 && layer < st->n_layers)
		atomic_fetch_add_explicit(hit ? &st->layers[layer].hits : &st->layers[layer].misses, 1, RLX);
	switch (kind) {
	case EXPERT_HIT_PINNED: atomic_fetch_add_explicit(&st->hits_pinned, 1, RLX); break;
	case EXPERT_HIT_CACHED: atomic_fetch_add_explicit(&st->hits_cached, 1, RLX); break;
	case EXPERT_HIT_PREFETCHED: atomic_fetch_add_explicit(&st->hits_prefetched, 1, RLX); break;
	default: atomic_fetch_add_explicit(&st->misses, 1, RLX); break;
	}
	bucket_add(st->hitsec, now_sec(), hit ? 1 : 0, hit ? 0 : 1);
}

void expert_stats_note_prefetch(expert_stats *st, uint64_t issued, uint64_t used)
{
	atomic_fetch_add_explicit(&st->prefetch_issued, issued, RLX);
	atomic_fetch_add_explicit(&st->prefetch_used, used, RLX);
}

void expert_stats_note_use(expert_stats *st, int was_prefetched)
{
	atomic_fetch_add_explicit(&st->used_total, 1, RLX);
	if (was_prefetched)
		atomic_fetch_add_explicit(&st->used_prefetched, 1, RLX);
}

void expert_stats_note_rows(expert_stats *st, int ram_rows, int rows)
{
	atomic_fetch_add_explicit(&st->rows_ram, (uint64_t)ram_rows, RLX);
	atomic_fetch_add_explicit(&st->rows_total, (uint64_t)rows, RLX);
}

void expert_stats_note_read(expert_stats *st, int d, uint64_t bytes)
{
	if (d < 0 || d >= st->n_drives)
		return;
	atomic_fetch_add_explicit(&st->drives[d].bytes, bytes, RLX);
	bucket_add(st->drives[d].sec, now_sec(), bytes, 0);
}

void expert_stats_note_drive_error(expert_stats *st, int d)
{
	if (d >= 0 && d < st->n_drives)
		atomic_fetch_add_explicit(&st->drives[d].errors, 1, RLX);
}

void expert_stats_note_checksum(expert_stats *st, int ok)
{
	atomic_fetch_add_explicit(&st->checksum_records, 1, RLX);
	if (!ok)
		atomic_fetch_add_explicit(&st->checksum_errors, 1, RLX);
}

void expert_stats_note_loaded(expert_stats *st, uint64_t records)
{
	atomic_fetch_add_explicit(&st->loaded, records, RLX);
}

void expert_stats_note_wait(expert_stats *st, double seconds)
{
	if (seconds > 0)
		atomic_fetch_add_explicit(&st->wait_ns, (uint64_t)(seconds * 1e9), RLX);
}

void expert_stats_note_busy(expert_stats *st, double seconds)
{
	if (seconds > 0)
		atomic_fetch_add_explicit(&st->busy_ns, (uint64_t)(seconds * 1e9), RLX);
}

void expert_stats_note_routing(expert_stats *st, int layer, const int *experts,
			       const float *weights, int n, int first_moe_layer)
{
	if (layer < 0 || layer >= st->n_layers)
		return;
	if (layer == first_moe_layer)
		atomic_fetch_add_explicit(&st->tokens, 1, RLX);
	if (n > EXPERT_STATS_MAX_TOPK)
		n = EXPERT_STATS_MAX_TOPK;
	layer_rec *l = &st->layers[layer];
	uint32_t s = coli_seqlock_write_begin(&l->lock);
	coli_seqlock_store(&l->token, atomic_load_explicit(&st->tokens, RLX));
	coli_seqlock_store(&l->n, n);
	for (int i = 0; i < n; i++) {
		coli_seqlock_store(&l->experts[i], experts[i]);
		coli_seqlock_store(&l->weights[i], coli_f32_bits(weights ? weights[i] : 0.0f));
	}
	coli_seqlock_write_end(&l->lock, s);
}

void expert_stats_note_index(expert_stats *st, int layer, int kept, int context)
{
	if (layer < 0 || layer >= st->n_layers)
		return;
	atomic_store_explicit(&st->layers[layer].index_kept, kept, RLX);
	atomic_store_explicit(&st->layers[layer].index_context, context, RLX);
}

static double ratio(uint64_t a, uint64_t b)
{
	return b ? (double)a / (double)b : 0.0;
}

void expert_stats_snapshot(const expert_stats *cst, expert_stats_summary *o)
{
	/* Readers never modify; the casts only drop const for atomic loads. */
	expert_stats *st = (expert_stats *)cst;
	memset(o, 0, sizeof *o);
	if (!st)
		return;
	o->n_layers = st->n_layers;
	o->n_experts = st->n_experts;
	o->top_k = st->top_k;
	o->tokens = atomic_load_explicit(&st->tokens, RLX);
	o->hits_pinned = atomic_load_explicit(&st->hits_pinned, RLX);
	o->hits_cached = atomic_load_explicit(&st->hits_cached, RLX);
	o->hits_prefetched = atomic_load_explicit(&st->hits_prefetched, RLX);
	o->misses = atomic_load_explicit(&st->misses, RLX);
	uint64_t hits = o->hits_pinned + o->hits_cached + o->hits_prefetched;
	o->hit_rate_valid = hits + o->misses > 0;
	o->hit_rate = ratio(hits, hits + o->misses);
	int64_t now = now_sec();
	uint64_t h10, m10;
	bucket_sum(st->hitsec, now, 10, &h10, &m10);
	o->hit_rate_10s_valid = h10 + m10 > 0;
	o->hit_rate_10s = ratio(h10, h10 + m10);
	o->experts_loaded_per_token = ratio(atomic_load_explicit(&st->loaded, RLX), o->tokens);
	o->prefetch_issued = atomic_load_explicit(&st->prefetch_issued, RLX);
	o->prefetch_used = atomic_load_explicit(&st->prefetch_used, RLX);
	o->used_total = atomic_load_explicit(&st->used_total, RLX);
	o->rows_ram = atomic_load_explicit(&st->rows_ram, RLX);
	o->rows_total = atomic_load_explicit(&st->rows_total, RLX);
	o->row_hit_rate = ratio(o->rows_ram, o->rows_total);
	o->used_prefetched = atomic_load_explicit(&st->used_prefetched, RLX);
	o->prefetch_valid = o->prefetch_issued > 0;
	o->prefetch_precision = ratio(o->prefetch_used, o->prefetch_issued);
	o->prefetch_recall = ratio(o->used_prefetched, o->used_total);
	o->resident_pinned = atomic_load_explicit(&st->res_pinned, RLX);
	o->resident_cached = atomic_load_explicit(&st->res_cached, RLX);
	o->resident_inflight = atomic_load_explicit(&st->res_inflight, RLX);
	o->budget_pin = atomic_load_explicit(&st->budget_pin, RLX);
	o->budget_cache = atomic_load_explicit(&st->budget_cache, RLX);
	o->budget_scratch = atomic_load_explicit(&st->budget_scratch, RLX);
	o->record_size = atomic_load_explicit(&st->record_size, RLX);
	o->direct = atomic_load_explicit(&st->direct, RLX);
	o->wait_seconds = (double)atomic_load_explicit(&st->wait_ns, RLX) / 1e9;
	o->busy_seconds = (double)atomic_load_explicit(&st->busy_ns, RLX) / 1e9;
	o->checksum_errors = atomic_load_explicit(&st->checksum_errors, RLX);
	o->checksum_records = atomic_load_explicit(&st->checksum_records, RLX);
	o->n_drives = st->n_drives;
	for (int d = 0; d < st->n_drives; d++) {
		drive_rec *dr = &st->drives[d];
		expert_stats_drive *od = &o->drives[d];
		memcpy(od->name, dr->name, sizeof od->name);
		od->enabled = atomic_load_explicit(&dr->enabled, RLX);
		od->bytes = atomic_load_explicit(&dr->bytes, RLX);
		od->errors = atomic_load_explicit(&dr->errors, RLX);
		uint64_t a, b;
		bucket_sum(dr->sec, now, 1, &a, &b);
		od->bw_1s = (double)a;
		bucket_sum(dr->sec, now, 10, &a, &b);
		od->bw_10s = (double)a / 10.0;
		o->bytes_read += od->bytes;
	}
}

int expert_stats_layer_get(const expert_stats *cst, int layer, expert_stats_layer *out)
{
	expert_stats *st = (expert_stats *)cst;
	if (!st || layer < 0 || layer >= st->n_layers)
		return -EINVAL;
	layer_rec *l = &st->layers[layer];
	uint32_t s;
	do {
		s = coli_seqlock_read_begin(&l->lock);
		out->token = coli_seqlock_load(&l->token);
		int n = coli_seqlock_load(&l->n);
		out->n = n < 0 ? 0 : n > EXPERT_STATS_MAX_TOPK ? EXPERT_STATS_MAX_TOPK : n;
		for (int i = 0; i < out->n; i++) {
			out->experts[i] = coli_seqlock_load(&l->experts[i]);
			out->weights[i] = coli_bits_f32(coli_seqlock_load(&l->weights[i]));
		}
	} while (coli_seqlock_read_retry(&l->lock, s));
	out->hits = atomic_load_explicit(&l->hits, RLX);
	out->misses = atomic_load_explicit(&l->misses, RLX);
	out->index_kept = atomic_load_explicit(&l->index_kept, RLX);
	out->index_context = atomic_load_explicit(&l->index_context, RLX);
	out->hit_rate = ratio(out->hits, out->hits + out->misses);
	return 0;
}

int expert_stats_experts_get(const expert_stats *cst, int layer, expert_stats_expert *out, int cap)
{
	expert_stats *st = (expert_stats *)cst;
	if (!st || layer < 0 || layer >= st->n_layers)
		return -EINVAL;
	int n = cap < st->n_experts ? cap : st->n_experts;
	for (int e = 0; e < n; e++) {
		expert_rec *r = &st->experts[(size_t)layer * (size_t)st->n_experts + (size_t)e];
		out[e].tier = atomic_load_explicit(&r->tier, RLX);
		out[e].heat = coli_bits_f32(atomic_load_explicit(&r->heat, RLX));
		out[e].hits = atomic_load_explicit(&r->hits, RLX);
		out[e].misses = atomic_load_explicit(&r->misses, RLX);
	}
	return n;
}
