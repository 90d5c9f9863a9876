/* expert_store.c - routed experts in RAM tiers, read from disk on demand.
 *
 * DESIGN
 * The store owns one arena of record-sized slots, allocated once at open:
 *   pin_slots     room for the pinned hot set (hottest experts by decayed
 *                 routing heat, loaded at open, never evicted);
 *   cache_slots   the bounded cache, managed by the eviction policy;
 *   scratch_slots tops the unpinned room (cache_slots) up to 2 x max_batch,
 *                 so one layer's set plus the prefetched next layer always
 *                 fit even with a zero cache. A cache that is already that
 *                 large needs none: resident bytes then stay within the
 *                 budget the user gave (measured by bench/glm5_slice.sh).
 * Slot counts are fixed, so resident bytes can never exceed the budget; a
 * slot is only reused when it is READY, not held by an acquire (pins == 0)
 * and not in the hot set. Unused pinned room simply serves as cache.
 *
 * acquire: hits are served at once; every miss of the call gets a slot and
 * its read is queued, then the whole batch is submitted together and
 * waited for. An expert already in flight (prefetched) is waited on rather
 * than read twice. prefetch: same, without waiting; completions are reaped
 * by the next acquire/prefetch.
 *
 * Placement never changes bytes: a record is handed out only when every
 * stripe landed without error (mirror errors are retried on the primary). */
#include "config.h"

#include "expert_store_int.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "coli_log.h"
#include "util_time.h"

/* Prefetch gate. A prefetch costs its wrong guesses' reads; it pays by
 * overlapping the right ones with compute. When the engine is bound by the
 * drive (it waits for reads more than GATE_WAIT of the time), the drive
 * has no idle time to absorb wrong guesses and they add straight to the
 * step time: measured on the GLM-5 slice with a 0.5 GB/s read cap
 * (bench/README.md), prediction precision ~0.56 made decode 20-50%
 * slower than no prefetch, while unthrottled (compute-bound) the same
 * prefetch cut the disk wait in half. So while the wait fraction is above
 * GATE_WAIT and the precision below GATE_PRECISION, only every
 * GATE_PROBE-th prefetch is issued (to keep measuring the precision).
 * Figures are smoothed over windows of at least GATE_WINDOW seconds. */
#define GATE_WAIT 0.5
#define GATE_PRECISION 0.8
#define GATE_PROBE 8
#define GATE_WINDOW 1.0

int expert_store_max_batch(const expert_store *s)
{
	return s ? s->max_batch : 0;
}

const expert_stats *expert_store_stats(const expert_store *s)
{
	return s ? s->stats : NULL;
}

void store_update_resident(expert_store *s)
{
	expert_stats_set_resident(s->stats, s->n_res_hot * (int64_t)s->rec,
				  s->n_res_cached * (int64_t)s->rec,
				  s->n_res_inflight * (int64_t)s->rec);
}

static void slot_clear(expert_store *s, int si)
{
	store_slot *sl = &s->slots[si];
	count_slot(s, sl, -1);
	if (sl->layer >= 0) {
		s->map[idx(s, sl->layer, sl->expert)] = -1;
		expert_stats_set_tier(s->stats, sl->layer, sl->expert, EXPERT_TIER_DISK);
	}
	sl->layer = sl->expert = -1;
	sl->state = SLOT_FREE;
	sl->pins = sl->hot = sl->prefetched = sl->predicted = sl->demand = sl->pending = sl->error = 0;
	sl->transient = 0;
	sl->key = 0;
	sl->last_use = 0;
}

void store_slot_loaded(expert_store *s, int si)
{
	store_slot *sl = &s->slots[si];
	/* Checked once per read, never per use: a damaged record fails the
	 * request that needs it (the error names the shard) instead of
	 * turning its logits into NaN. First its CRC-32C (format 2,
	 * expert_store_verify.c); a record that matches is the bytes convert
	 * wrote, whose quantizers refuse non-finite weights, so its scales
	 * need no second pass (f32 records, copied as the source had them,
	 * keep it). Without a checksum, or when it fails (for the more
	 * precise message), the scales are checked. */
	if (!sl->error) {
		int crc = store_verify_record(s, si);
		if (crc == STORE_REREAD)
			return; /* a mirror's bad copy: queued again, from the primary */
		if ((crc <= 0 || s->c->expert_qtype == COLI_Q_F32) && s->c->check_experts &&
		    coli_container_check_expert(s->c, sl->buf) >= 0)
			sl->error = -EBADMSG;
		else if (crc < 0)
			sl->error = crc;
	}
	if (sl->error) {
		/* A failed prefetch is forgotten; a failed demand read is
		 * reported by the acquire that holds it. */
		if (sl->pins == 0) {
			coli_debug("expert store: dropped failed read of layer %d expert %d", sl->layer, sl->expert);
			slot_clear(s, si);
		}
		return;
	}
	count_slot(s, sl, -1);
	sl->state = SLOT_READY;
	count_slot(s, sl, +1);
	expert_stats_set_tier(s->stats, sl->layer, sl->expert, tier_of(sl));
}

/* A prefetched record is "awaited" from its prefetch until the engine has
 * visited its layer once (all acquire groups of that visit): the engine
 * prefetches layer L+1 before acquiring layer L, and those records would
 * otherwise be the first victims (oldest under LRU, coldest under LFU).
 * After that visit an unused prefetch is just a wrong guess in the cache. */
static int slot_awaited(const expert_store *s, const store_slot *sl)
{
	if (!sl->prefetched && !sl->predicted)
		return 0;
	uint32_t v = s->layer_visit[sl->layer];
	return v == sl->pf_visit || (v == sl->pf_visit + 1 && s->cur_layer == sl->layer);
}

/* Pick a slot for a new record: a free one, else a transient one (a
 * streamed record of a wide step), else the evictable slot with the
 * smallest policy key, awaited prefetches last (and never for another
 * prefetch). -1 when everything is held or in flight. *coldest: the
 * smallest key of the non-transient evictable slots (+inf: none, or a
 * free slot was found). */
static int slot_victim(expert_store *s, int for_prefetch, double *coldest)
{
	int best = -1, best_aw = -1, best_tr = -1;
	double key_best = 0, key_aw = 0;
	*coldest = HUGE_VAL;
	for (int i = 0; i < s->n_slots; i++) {
		store_slot *sl = &s->slots[i];
		if (sl->state == SLOT_FREE)
			return i;
		if (sl->state != SLOT_READY || sl->pins || sl->hot)
			continue;
		if (sl->transient) {
			best_tr = best_tr < 0 ? i : best_tr;
			continue;
		}
		double key = store_policy_victim_key(&s->policy, sl, s->cur_layer);
		if (slot_awaited(s, sl)) {
			if (best_aw < 0 || key < key_aw) {
				best_aw = i;
				key_aw = key;
			}
		} else if (best < 0 || key < key_best) {
			best = i;
			key_best = key;
		}
	}
	if (best >= 0)
		*coldest = key_best;
	if (best_tr >= 0)
		return best_tr;
	return best >= 0 || for_prefetch ? best : best_aw;
}

/* Whether a demand read of (layer, e) should stream through instead of
 * joining the cache: only in a step that needs more of the layer's
 * records than one acquire holds (many sequences at once). There every
 * record of the union is used, so recency says nothing; what counts is
 * the uses before this step: a record joins the cache only when its
 * decayed use count is STREAM_PROMOTE times the coldest cached record's
 * (hysteresis: under even routing nothing displaces anything and the
 * cache keeps its share of every step). Otherwise the step reads it,
 * uses it and gives its slot to the next such record, and the hot set
 * stays (scan resistance). One sequence's steps never stream. */
#define STREAM_PROMOTE 2.0
static int slot_streams(const expert_store *s, int layer, int e, double coldest)
{
	if (s->rows_layer != layer || s->rows_union <= s->max_batch || coldest == HUGE_VAL)
		return 0;
	/* as a victim key: a record of the layer being visited comes again
	 * last (store_policy_victim_key's largest discount) */
	const double key = store_policy_prospect(&s->policy, idx(s, layer, e), s->tick, 0) -
			   s->policy.visit_discount;
	return key < coldest + log(STREAM_PROMOTE);
}

static int slot_any_loading_unheld(const expert_store *s)
{
	for (int i = 0; i < s->n_slots; i++)
		if (s->slots[i].state == SLOT_LOADING && !s->slots[i].pins)
			return 1;
	return 0;
}

/* Get a slot for (layer, e) and queue its read. Returns the slot or a
 * negative errno (-ENOBUFS when nothing can be evicted). */
int store_slot_load(expert_store *s, int layer, int e, int demand)
{
	int si;
	double coldest;
	while ((si = slot_victim(s, !demand, &coldest)) < 0) {
		/* Only in-flight reads nobody holds could free room. */
		if (!demand || !slot_any_loading_unheld(s))
			return -ENOBUFS;
		int rc = store_io_make_room(s);
		if (rc < 0)
			return rc;
	}
	if (s->slots[si].state != SLOT_FREE)
		slot_clear(s, si);
	store_slot *sl = &s->slots[si];
	sl->layer = layer;
	sl->expert = e;
	sl->state = SLOT_LOADING;
	sl->hot = s->hot_set[idx(s, layer, e)];
	sl->transient = demand && !sl->hot && slot_streams(s, layer, e, coldest);
	s->map[idx(s, layer, e)] = si;
	count_slot(s, sl, +1);
	expert_stats_set_tier(s->stats, layer, e, EXPERT_TIER_INFLIGHT);
	expert_stats_note_loaded(s->stats, 1);
	int rc = store_io_queue(s, si);
	if (rc < 0) {
		/* Stripes still in flight keep the slot until they land;
		 * store_slot_loaded then drops it (no pins yet). */
		if (s->slots[si].pending == 0)
			slot_clear(s, si);
		return rc;
	}
	return si;
}

static int check_layer(const expert_store *s, int layer, coli_err *err)
{
	if (layer < 0 || layer >= s->n_layers || !s->c->expert_shard_paths[layer])
		return coli_err_set(err, -EINVAL, "expert store: layer %d has no routed experts", layer);
	return 0;
}

/* Undo the pins this call took on its first `n` entries. */
static void unpin_call(expert_store *s, const int *slots, int n)
{
	for (int i = 0; i < n; i++)
		if (slots[i] >= 0 && s->slots[slots[i]].pins > 0)
			s->slots[slots[i]].pins--;
}

int store_prefetch_gate(int mode, int closed, double wait_fraction, double precision)
{
	/* hysteresis: without prefetch the wait fraction rises a little, so
	 * reopen only well below the closing point */
	double wait_limit = closed ? GATE_WAIT - 0.1 : GATE_WAIT;
	return mode == 1 && wait_fraction > wait_limit && precision < GATE_PRECISION;
}

/* At the first MoE layer's visits (once per decoded token): close the
 * measurement window when it is long enough and update the gate. */
static void gate_update(expert_store *s)
{
	double now = coli_now_s();
	if (s->gate_t == 0) {
		s->gate_t = now;
		s->gate_wait = s->wait_total;
		return;
	}
	double dt = now - s->gate_t;
	if (dt < GATE_WINDOW)
		return;
	double w = (s->wait_total - s->gate_wait) / dt;
	s->gate_w = 0.5 * s->gate_w + 0.5 * w;
	uint64_t di = s->pf_issued - s->gate_issued, du = s->pf_used - s->gate_used;
	if (di >= (uint64_t)s->top_k)
		s->gate_p = 0.5 * s->gate_p + 0.5 * ((double)du / (double)di);
	int closed = store_prefetch_gate(s->o.prefetch, s->gate_closed, s->gate_w, s->gate_p);
	if (closed != s->gate_closed)
		coli_debug("expert store: prefetch %s (wait fraction %.2f, precision %.2f)",
			   closed ? "paused" : "resumed", s->gate_w, s->gate_p);
	s->gate_closed = closed;
	s->gate_t = now;
	s->gate_wait = s->wait_total;
	s->gate_issued = s->pf_issued;
	s->gate_used = s->pf_used;
}

/* One policy tick per visit; a new layer is a new visit of that layer. */
static void visit_start(expert_store *s, int layer)
{
	if (layer == s->first_moe)
		gate_update(s);
	s->tick++;
	if (s->cur_layer != layer) {
		s->layer_visit[layer]++;
		s->cur_layer = layer;
	}
}

int expert_store_request(expert_store *s, int layer, const int *experts, int n)
{
	if (!s || check_layer(s, layer, NULL) || n < 0 || n > s->max_batch)
		return -EINVAL;
	store_io_reap(s, 0);
	visit_start(s, layer);
	s->visit_layer = layer;
	int rc = 0;
	for (int i = 0; i < n && rc >= 0; i++) {
		int e = experts[i];
		if (e < 0 || e >= s->n_experts)
			return -EINVAL;
		int si = s->map[idx(s, layer, e)];
		if (si < 0) {
			si = store_slot_load(s, layer, e, 1);
			if (si < 0) {
				rc = si;
				break;
			}
			s->slots[si].demand = 1;
		}
		/* held, so a prefetch cannot take it before its acquire */
		s->slots[si].pins++;
	}
	int sr = store_io_submit(s);
	store_update_resident(s);
	return rc < 0 ? rc : sr;
}

int expert_store_ready(expert_store *s, int layer, int expert)
{
	if (!s || layer < 0 || layer >= s->n_layers || expert < 0 || expert >= s->n_experts)
		return 0;
	if (s->io_inflight)
		store_io_reap(s, 0);
	int si = s->map[idx(s, layer, expert)];
	return si >= 0 && s->slots[si].state == SLOT_READY;
}

int expert_store_acquire(expert_store *s, int layer, const int *experts, int n,
			 const void **recs, coli_err *err)
{
	int rc = check_layer(s, layer, err);
	if (rc)
		return rc;
	if (n < 0 || n > s->n_slots)
		return coli_err_set(err, -ENOBUFS, "expert store: %d experts requested, at most %d per call",
				    n, s->max_batch);
	/* Slot of each request; the array lives on the stack because acquire
	 * must not allocate (n is bounded by the slot count). */
	int got[n > 0 ? n : 1];
	store_io_reap(s, 0);
	if (s->visit_layer != layer)
		visit_start(s, layer);
	for (int i = 0; i < n; i++) {
		int e = experts[i];
		got[i] = -1;
		if (e < 0 || e >= s->n_experts) {
			unpin_call(s, got, i);
			return coli_err_set(err, -EINVAL, "expert store: expert %d out of range (layer %d)", e, layer);
		}
		int si = s->map[idx(s, layer, e)], ram = 0;
		if (si >= 0 && s->slots[si].demand) {
			/* read queued by expert_store_request: a miss */
			s->slots[si].demand = 0;
			expert_stats_note_lookup(s->stats, layer, e, EXPERT_MISS);
			expert_stats_note_use(s->stats, 0);
		} else if (si >= 0) {
			store_slot *sl = &s->slots[si];
			int kind = sl->prefetched || sl->state == SLOT_LOADING ? EXPERT_HIT_PREFETCHED
				 : sl->hot ? EXPERT_HIT_PINNED : EXPERT_HIT_CACHED;
			expert_stats_note_lookup(s->stats, layer, e, kind);
			expert_stats_note_use(s->stats, sl->prefetched);
			ram = kind != EXPERT_HIT_PREFETCHED;
			sl->transient = 0; /* used again while resident: it stays */
			if (sl->prefetched) {
				expert_stats_note_prefetch(s->stats, 0, 1);
				s->pf_used++;
				sl->prefetched = 0;
			}
		} else {
			expert_stats_note_lookup(s->stats, layer, e, EXPERT_MISS);
			expert_stats_note_use(s->stats, 0);
			si = store_slot_load(s, layer, e, 1);
			if (si < 0) {
				unpin_call(s, got, i);
				if (si == -ENOBUFS)
					return coli_err_set(err, -ENOBUFS,
						"expert store: no room for %d experts of layer %d (max batch %d; release a layer first)",
						n, layer, s->max_batch);
				return coli_err_set(err, si, "expert store: read of layer %d expert %d failed: %s",
						    layer, e, strerror(-si));
			}
		}
		store_slot *sl = &s->slots[si];
		const int w = s->rows_layer == layer && s->rows_of[e] > 0 ? s->rows_of[e] : 1;
		expert_stats_note_rows(s->stats, ram ? w : 0, w);
		sl->pins++;
		sl->predicted = 0;
		store_policy_touch(&s->policy, sl, idx(s, layer, e), s->tick, w);
		got[i] = si;
	}
	rc = store_io_submit(s);
	double t0 = coli_now_s();
	/* Wait until every slot of this call is complete. */
	for (int i = 0; rc >= 0 && i < n; i++) {
		while (rc >= 0 && s->slots[got[i]].pending > 0)
			rc = store_io_reap(s, 1);
	}
	double waited = coli_now_s() - t0;
	expert_stats_note_wait(s->stats, waited);
	s->wait_total += waited;
	int bad = -1;
	for (int i = 0; i < n; i++) {
		store_slot *sl = &s->slots[got[i]];
		if (rc >= 0 && sl->state == SLOT_READY && !sl->error) {
			recs[i] = sl->buf;
			continue;
		}
		if (bad < 0)
			bad = i;
		recs[i] = NULL;
	}
	if (bad >= 0 || rc < 0) {
		int code = rc < 0 ? rc : s->slots[got[bad]].error ? s->slots[got[bad]].error : -EIO;
		int layer_bad = layer, e_bad = bad >= 0 ? experts[bad] : -1;
		unpin_call(s, got, n);
		/* A failed read is never cached, whoever else holds it (the
		 * visit's expert_store_request does): the next use reads it
		 * again, so a transient failure does not stick. */
		for (int i = 0; i < n; i++)
			if (s->slots[got[i]].error && !s->slots[got[i]].pending)
				slot_clear(s, got[i]);
		store_update_resident(s);
		const char *why = code == STORE_ECHECKSUM
			? "the record fails its CRC-32C (damaged file or a bad read; not cached, read "
			  "again when next needed)"
			: code != -EBADMSG ? strerror(-code) : s->c->expert_qtype == COLI_Q_F32
			? "a value is NaN or Inf (damaged file; coli doctor --verify compares the sha256)"
			: "a scale is NaN, Inf or negative (damaged file; coli doctor --verify compares "
			  "the sha256)";
		return coli_err_set(err, code == STORE_ECHECKSUM ? -EBADMSG : code,
				    "expert store: reading layer %d expert %d from %s: %s", layer_bad, e_bad,
				    s->c->expert_shard_paths[layer], why);
	}
	store_update_resident(s);
	return 0;
}

int expert_store_poll(expert_store *s)
{
	if (!s)
		return 0;
	if (s->io_inflight > 0 && store_io_reap(s, 0) > 0)
		store_update_resident(s);
	return s->io_inflight;
}

void expert_store_release(expert_store *s, int layer)
{
	if (!s)
		return;
	if (s->visit_layer == layer)
		s->visit_layer = -1;
	for (int i = 0; i < s->n_slots; i++)
		if (s->slots[i].layer == layer) {
			s->slots[i].pins = 0;
			/* a failed read the visit requested but never acquired
			 * (an earlier acquire failed): forget it too */
			if (s->slots[i].error && !s->slots[i].pending)
				slot_clear(s, i);
		}
	store_warm_topup(s);
}

void expert_store_prefetch(expert_store *s, int layer, const int *experts, int n)
{
	if (!s || !s->o.prefetch || check_layer(s, layer, NULL))
		return;
	if (s->gate_closed && s->gate_skips++ % GATE_PROBE)
		return;
	store_io_reap(s, 0);
	uint64_t issued = 0;
	for (int i = 0; i < n; i++) {
		int e = experts[i];
		if (e < 0 || e >= s->n_experts)
			continue;
		int have = s->map[idx(s, layer, e)];
		if (have >= 0) {
			/* resident already: held back until that visit, like
			 * the guesses read for it */
			s->slots[have].predicted = 1;
			s->slots[have].pf_visit = s->layer_visit[layer];
			continue;
		}
		/* Never wait here, and never take the last free slots from an
		 * acquire: prefetch only uses what is evictable right now. */
		int si = store_slot_load(s, layer, e, 0);
		if (si < 0)
			break;
		s->slots[si].prefetched = 1;
		s->slots[si].pf_visit = s->layer_visit[layer];
		store_policy_peek(&s->policy, &s->slots[si], idx(s, layer, e), s->tick);
		issued++;
	}
	if (issued) {
		expert_stats_note_prefetch(s->stats, issued, 0);
		s->pf_issued += issued;
		store_io_submit(s);
	}
	store_update_resident(s);
}

void expert_store_note_rows(expert_store *s, int layer, const int *experts, const int *rows, int n)
{
	if (!s || layer < 0 || layer >= s->n_layers)
		return;
	if (s->rows_layer >= 0 && s->rows_layer < s->n_layers)
		memset(s->rows_of, 0, sizeof(int) * (size_t)s->n_experts);
	for (int i = 0; i < n; i++)
		if (experts[i] >= 0 && experts[i] < s->n_experts)
			s->rows_of[experts[i]] = rows[experts[i]];
	s->rows_layer = layer;
	s->rows_union = n;
}

void expert_store_note_index(expert_store *s, int layer, int kept, int context)
{
	if (s)
		expert_stats_note_index(s->stats, layer, kept, context);
}
