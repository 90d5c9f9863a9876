/* expert_store_int.h - internals shared by the expert_store*.c files.
 *
 *   expert_store.c         acquire/release/prefetch, slots, prefetch gate
 *   expert_store_open.c    open/free: the arena and its tables
 *   expert_store_hot.c     applying the hot set, warm start, re-choosing
 *   expert_store_io.c      io_uring reader, O_DIRECT probe, mirrors, faults
 *   expert_store_policy.c  eviction scores, trace synthesis and replay
 *   expert_store_heat.c    decayed routing heat, heat.bin, pinned set
 *   expert_store_opts.c    defaults, flag/env parsing, automatic budget
 *
 * Everything here belongs to the engine thread. */
#ifndef COLI_EXPERT_STORE_INT_H
#define COLI_EXPERT_STORE_INT_H

#include <errno.h>
#include <liburing.h>
#include <pthread.h>
#include <stdint.h>

#include "expert_store_stats.h"
#include "expert_store.h"
#include "expert_store_budget.h"

enum slot_state { SLOT_FREE = 0, SLOT_LOADING, SLOT_READY };

/* One record-sized buffer of the arena. */
typedef struct store_slot {
	uint8_t *buf;         /* 4096-aligned, record_size bytes */
	int layer, expert;    /* -1 when free */
	int state;            /* enum slot_state */
	int pins;             /* acquire references, dropped by release(layer) */
	int hot;              /* member of the pinned hot set: never evicted */
	int prefetched;       /* read by prefetch and not yet acquired */
	int predicted;        /* resident when predicted for its layer's next
	                       * visit (pf_visit): held back like an awaited
	                       * prefetch until that visit */
	int demand;           /* read queued by expert_store_request, not yet
	                       * acquired: counted as a miss by that acquire */
	uint32_t pf_visit;    /* layer_visit[layer] when prefetched */
	int pending;          /* stripe reads still in flight */
	int error;            /* negative errno of a failed read, else 0 */
	uint32_t from;        /* bit d: a stripe of the latest read came from
	                       * drive d (a mirror's bad record is read again
	                       * from the primary, expert_store_verify.c) */
	int transient;        /* streamed through by a step wider than the
	                       * cache (expert_store_note_rows): the first
	                       * victim, unless used again while resident */
	uint64_t last_use;    /* policy: tick of the latest acquire */
	double key;           /* policy: eviction key, smallest goes first */
} store_slot;

/* opts.policy (-1 = default; BELADY, replay only, = default) to a kind. */
int store_policy_resolve(int requested);

/* Policy state shared by the live store and the trace replay. */
typedef struct store_policy {
	int kind;             /* enum expert_policy */
	double log_decay;     /* per tick, for LFU-decay (< 0) */
	/* LFU-decay use history per (layer, expert), kept across evictions:
	 * without it a newcomer (count 1) is always the next victim and a
	 * once-evicted hot expert could never come back. */
	double *freq;         /* [n_ids] decayed count as of last[] */
	uint64_t *last;       /* [n_ids] tick of the latest use */
	int n_moe;            /* MoE layers: visits (ticks) per token */
	double visit_discount; /* LFU-next: key penalty per visit until the
	                        * record's layer comes next (0: none) */
} store_policy;

int store_policy_init(store_policy *p, int kind, int n_moe_layers, size_t n_ids,
		      double half_life_tokens);
void store_policy_free(store_policy *p);
/* Account `weight` uses of record `id` (layer * n_experts + e), held in
 * `sl`: the rows of the step that used it (1 for one sequence). */
void store_policy_touch(store_policy *p, store_slot *sl, size_t id, uint64_t now, double weight);
/* The key record `id` would have after `weight` uses now, unchanged
 * (weight 0: its standing from earlier uses; -inf when never used). */
double store_policy_prospect(const store_policy *p, size_t id, uint64_t now, double weight);

/* Key of record `id` loaded without being used (a prefetch): its standing
 * from earlier uses, no use counted, so a wrong guess does not push out a
 * record that was really used (awaited prefetches are protected anyway). */
void store_policy_peek(const store_policy *p, store_slot *sl, size_t id, uint64_t now);
/* A record read ahead of any use, for its learned heat: the decayed count
 * starts at `count` (capped), as if that many recent uses. */
void store_policy_seed(store_policy *p, store_slot *sl, size_t id, double count, uint64_t now);

/* Eviction key of `sl` while layer `cur_layer` is visited (-1: none):
 * the smallest goes first. */
double store_policy_victim_key(const store_policy *p, const store_slot *sl, int cur_layer);

/* Replay with an explicit LFU half-life (tokens; 0 = the policy's
 * default), for measuring. */
int store_replay_hl(const expert_trace *t, int policy, int64_t capacity, double half_life,
		    expert_replay_result *out, coli_err *err);

/* One drive: the primary model directory or a mirror. */
typedef struct store_drive {
	char *dir;            /* directory holding experts/ */
	int *fd_direct;       /* [n_layers], -1 when absent */
	int *fd_buffered;     /* [n_layers], -1 when absent */
	double weight;        /* share of stripes */
	int enabled;          /* 0 after an error (mirrors only) */
	int direct;           /* O_DIRECT accepted on this drive */
	/* [layer * n_experts + e] 1 when the drive holds that record: a
	 * partial mirror's plan (expert_store_mirror.h), or made from the
	 * open shards when a full mirror's record first fails its CRC-32C;
	 * NULL = every record of the shards that are open */
	uint8_t *has;
	int bad_warned;       /* a damaged record on this mirror was reported */
} store_drive;

/* One stripe read in flight. */
typedef struct store_io {
	int slot, drive, layer;
	int direct;           /* using fd_direct */
	uint64_t off;         /* file offset of the stripe */
	uint32_t len, done;   /* stripe length, bytes already read */
	uint32_t buf_off;     /* stripe offset inside the record */
	uint32_t tried;       /* bit d: drive d already failed this stripe */
	int fd;               /* the file descriptor it was issued on */
	int next_free;
} store_io;

struct expert_store {
	const coli_container *c;
	expert_store_opts o;
	int n_layers, n_experts, top_k, first_moe;
	size_t rec;                 /* record size */
	int max_batch;
	int n_slots, pin_slots, cache_slots, scratch_slots;
	uint8_t *arena;
	size_t arena_bytes;
	store_slot *slots;
	int32_t *map;               /* [layer * n_experts + e] -> slot, -1 */
	uint8_t *hot_set;           /* [layer * n_experts + e] wanted pinned */
	int n_hot;
	int32_t *warm_ids;          /* warm start: hottest records still to read */
	int n_warm, warm_next;
	store_policy policy;
	uint64_t tick;              /* one per acquire call */
	uint32_t *layer_visit;      /* [n_layers] visits: acquires moving to a layer */
	int cur_layer;              /* layer of the latest acquire, -1 */
	int visit_layer;            /* layer of an open request visit, -1 */
	/* the step's rows per expert of the layer being visited
	 * (expert_store_note_rows): uses are weighted by them, and a step
	 * needing more records than max_batch streams its cold ones */
	int *rows_of;               /* [n_experts] */
	int rows_layer;             /* layer rows_of belongs to, -1 */
	int rows_union;             /* experts that layer's step needs */
	/* prefetch gate (expert_store.c) */
	uint64_t pf_issued, pf_used;  /* totals, as noted in the stats */
	double wait_total;          /* seconds acquire blocked on reads */
	double gate_t, gate_wait;   /* window start: time, wait_total */
	uint64_t gate_issued, gate_used;
	double gate_w, gate_p;      /* smoothed wait fraction, precision */
	int gate_closed;
	uint32_t gate_skips;        /* prefetch calls skipped while closed */
	/* heat */
	float *heat;                /* decayed count as of heat_tick */
	uint32_t *heat_tick;        /* layer tick when heat[] was updated */
	uint64_t *layer_tick;       /* routings noted per layer */
	double heat_log_decay;
	uint64_t notes_since_repin, notes_since_save;
	/* background heat.bin writer (expert_store_heat_writer.c); hw_buf is
	 * filled by the engine thread while !hw_busy, then owned by the writer
	 * until it clears hw_busy. hw_* flags are guarded by hw_lock. */
	pthread_t hw_thread;
	int hw_started;
	pthread_mutex_t hw_lock;
	pthread_cond_t hw_cond;
	uint8_t *hw_buf;
	size_t hw_size;
	int hw_busy, hw_stop;
	/* io */
	struct io_uring ring;
	int ring_ok;
	unsigned ring_entries;
	store_io *ios;
	int io_free;                /* head of free list, -1 = none */
	int io_inflight;
	double busy_since;          /* when io_inflight last went 0 -> 1 */
	int unsubmitted;
	int n_drives;
	store_drive drives[1 + EXPERT_STORE_MAX_MIRRORS];
	uint32_t stripe;            /* stripe size with mirrors, else record */
	int direct;                 /* primary uses O_DIRECT */
	/* stats + counters */
	expert_stats *stats;
	int64_t n_res_hot, n_res_cached, n_res_inflight;
	uint64_t fault_eio, fault_short, fault_eagain, fault_mirror, fault_count, mirror_count;
	/* expert_store_verify.c: [layer * n_experts + e] 1 while that record's
	 * checksum failure has been reported (allocated at the first one) */
	uint8_t *crc_reported;
	uint64_t fault_flip;        /* COLI_FAULT_READ_FLIP: completion to damage */
};

/* expert_store.c: the slots */
static inline size_t idx(const expert_store *s, int layer, int e)
{
	return (size_t)layer * (size_t)s->n_experts + (size_t)e;
}

static inline int tier_of(const store_slot *sl)
{
	if (sl->state == SLOT_LOADING)
		return EXPERT_TIER_INFLIGHT;
	return sl->hot ? EXPERT_TIER_PINNED : EXPERT_TIER_CACHED;
}

/* Move a slot between the resident counters (old tier out, new tier in). */
static inline void count_slot(expert_store *s, const store_slot *sl, int delta)
{
	if (sl->state == SLOT_FREE)
		return;
	int t = tier_of(sl);
	if (t == EXPERT_TIER_INFLIGHT)
		s->n_res_inflight += delta;
	else if (t == EXPERT_TIER_PINNED)
		s->n_res_hot += delta;
	else
		s->n_res_cached += delta;
}

void store_update_resident(expert_store *s);
/* Get a slot for (layer, e) and queue its read (demand: an acquire's, which
 * may wait for room). Returns the slot or a negative errno. */
int store_slot_load(expert_store *s, int layer, int e, int demand);

/* expert_store_hot.c */
/* Apply the hot set to resident slots after it changed. */
void store_apply_hot_set(expert_store *s);
/* Read every hot expert not yet resident (at open). */
int store_load_hot_set(expert_store *s, coli_err *err);
/* Warm start at open, and its continuation after each layer visit. */
void store_warm_start(expert_store *s);
void store_warm_topup(expert_store *s);

/* expert_store_io.c */
int store_io_open(expert_store *s, coli_err *err);
void store_io_close(expert_store *s);
/* Queue the read of slot `si` (layer/expert already set); stripes go to the
 * drives. Submission happens in store_io_submit or when the ring fills. */
int store_io_queue(expert_store *s, int si);
int store_io_submit(expert_store *s);
/* Reap completions: wait for at least one when `wait` and some are in
 * flight. Returns the number reaped or a negative errno. */
int store_io_reap(expert_store *s, int wait);
/* Submit what is queued and wait for one completion: how a caller that
 * needs a free slot or ring entry makes room. 0 or a negative errno. */
int store_io_make_room(expert_store *s);
/* After a failed read of layer's shard on the primary: if its path now
 * names another file (a shard restored by a rename), reopen it so that
 * reads see that file, with one warning, and return 1 (the failed stripe
 * is read again from it); else 0. Engine thread, error path only. */
int store_io_refresh(expert_store *s, int layer);
/* 1 when drive d may serve (layer, expert). */
int store_io_holds(const expert_store *s, int d, int layer, int expert);
/* A record read from mirror(s) failed its CRC-32C: those mirrors stop
 * serving it (one warning per mirror) and it is queued again, from the
 * primary. Returns 1 when requeued, 0 when no mirror was involved. */
int store_io_mirror_failed(expert_store *s, int si);
/* Called by the reaper when a slot's last stripe landed. */
void store_slot_loaded(expert_store *s, int si);

/* expert_store_verify.c: a record that landed in slot si against the
 * manifest's CRC-32C: 1 when it matches, 0 when there is nothing to check
 * (format 1, --no-verify-checksums). A mismatch is counted, logged once
 * and returns STORE_ECHECKSUM, which acquire reports as -EBADMSG. */
#define STORE_ECHECKSUM (-EILSEQ)
#define STORE_REREAD 2 /* a mirror's copy failed: being read from the primary */
int store_verify_record(expert_store *s, int si);

/* expert_store_heat.c */
int store_heat_init(expert_store *s, coli_err *err);
void store_heat_free(expert_store *s);
void store_heat_note(expert_store *s, int layer, int expert);
float store_heat_now(const expert_store *s, int layer, int expert);
/* Choose the hot set from heat; returns how many entries changed. */
int store_heat_choose(expert_store *s);
/* The hottest records (heat >= 1.5: seen more than about once), hottest
 * first: up to max indices layer * n_experts + expert into ids; returns
 * how many. */
int store_heat_ranked(const expert_store *s, int32_t *ids, int max);
/* heat.bin: its size, its bytes as of now (engine thread: reads the heat
 * arrays), and the crash-safe write of such bytes (any thread). */
size_t store_heat_size(const expert_store *s);
void store_heat_fill(const expert_store *s, uint8_t *b);
int store_heat_write(const char *heat_dir, const uint8_t *b, size_t size, coli_err *err);
/* fill + write, synchronously (at close and on request) */
int store_heat_save(expert_store *s, coli_err *err);

/* expert_store_heat_writer.c: the periodic save off the decode path. A
 * thread owned by the store writes snapshots that the engine thread takes
 * into a buffer allocated at open; a snapshot is skipped while the previous
 * one is still being written. */
int store_heat_writer_start(expert_store *s, coli_err *err);
/* Engine thread: snapshot the heat and wake the writer (no syscalls, no
 * allocation; skipped when the writer is busy). */
void store_heat_writer_kick(expert_store *s);
/* Wait for a write in progress, stop and join the thread. */
void store_heat_writer_stop(expert_store *s);
int store_heat_load(expert_store *s);

/* expert_store_opts.c */
int store_budget_resolve(const coli_container *c, const expert_store_opts *o,
			 int64_t *pin, int64_t *cache);

/* The prefetch gate's decision: 1 = pause prefetching (mode = opts.prefetch,
 * closed = the current state, figures smoothed over recent windows). */
int store_prefetch_gate(int mode, int closed, double wait_fraction, double precision);

#endif
