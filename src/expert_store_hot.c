/* expert_store_hot.c - the pinned hot set and the warm start in the store.
 *
 * The heat (expert_store_heat.c) chooses which experts are hot; this file
 * applies that choice to resident slots, reads the hot records (all of
 * them at open, in the background after a re-choice while running), tops
 * the cache up with the next hottest records of earlier runs, and decides
 * from the routings noted when to re-choose and when to save heat.bin. */
#include "config.h"

#include "expert_store_int.h"

#include <stdlib.h>
#include <string.h>

#include "coli_log.h"

/* Apply the hot set to resident slots after it changed. */
void store_apply_hot_set(expert_store *s)
{
	for (int i = 0; i < s->n_slots; i++) {
		store_slot *sl = &s->slots[i];
		if (sl->layer < 0)
			continue;
		int want = s->hot_set[idx(s, sl->layer, sl->expert)];
		if (want != sl->hot) {
			count_slot(s, sl, -1);
			sl->hot = want;
			count_slot(s, sl, +1);
			expert_stats_set_tier(s->stats, sl->layer, sl->expert, tier_of(sl));
		}
	}
	store_update_resident(s);
}

/* Start reading the hot experts not yet resident, without waiting (after a
 * re-choice while running); they become pinned as they land. Uses only
 * room that is evictable now, like a prefetch. */
static void load_hot_async(expert_store *s)
{
	int issued = 0;
	for (int l = 0; l < s->n_layers; l++) {
		if (!s->c->expert_shard_paths[l])
			continue;
		for (int e = 0; e < s->n_experts; e++) {
			if (!s->hot_set[idx(s, l, e)] || s->map[idx(s, l, e)] >= 0)
				continue;
			int si = store_slot_load(s, l, e, 0);
			if (si < 0)
				goto out;
			store_policy_touch(&s->policy, &s->slots[si], idx(s, l, e), s->tick, 1.0);
			issued++;
		}
	}
out:
	if (issued)
		store_io_submit(s);
	store_update_resident(s);
}

/* Free slots (never used, or cleared): count_slot counts every other. */
static int slots_free(const expert_store *s)
{
	return s->n_slots - s->n_res_inflight - s->n_res_hot - s->n_res_cached;
}

/* Warm start, continued: read the next of the hottest records of earlier
 * runs into FREE slots only (a warm guess never evicts what this run
 * used), while at most half the I/O ring is busy, so demand reads always
 * find room and nothing here waits. Called at open and after each layer
 * visit until the list is done or the cache is full. */
void store_warm_topup(expert_store *s)
{
	if (s->warm_next >= s->n_warm)
		return;
	store_io_reap(s, 0);
	const size_t stripes = s->stripe > 0 ? (s->rec + s->stripe - 1) / s->stripe : 1;
	int room = ((int)s->ring_entries / 2 - s->io_inflight) / (int)(stripes ? stripes : 1);
	int issued = 0;
	while (room > 0 && s->warm_next < s->n_warm) {
		const int32_t id = s->warm_ids[s->warm_next];
		if (s->map[id] >= 0) {
			s->warm_next++;
			continue;
		}
		if (slots_free(s) <= 0) {
			s->warm_next = s->n_warm; /* the cache is full: done */
			break;
		}
		const int l = id / s->n_experts, e = id % s->n_experts;
		int si = store_slot_load(s, l, e, 0);
		if (si < 0)
			break;
		s->warm_next++;
		store_policy_seed(&s->policy, &s->slots[si], (size_t)id, store_heat_now(s, l, e), s->tick);
		issued++;
		room--;
	}
	if (issued) {
		store_io_submit(s);
		store_update_resident(s);
	}
}

/* Beyond the pinned set (if any), the learned heat also pays at start: the
 * next hottest records of earlier runs (hot-experts/heat.bin), as many as
 * the cache holds, are read into it in the background (warm_topup: they
 * land while the prompt is read and prefilled, and keep coming while the
 * drive has room), and the eviction policy starts from their heat instead
 * of from nothing. */
void store_warm_start(expert_store *s)
{
	if (s->cache_slots <= 0)
		return;
	/* ranked from the hottest: the pinned ones come first and are
	 * skipped as resident */
	const int max = s->cache_slots + s->n_hot;
	s->warm_ids = malloc((size_t)max * sizeof *s->warm_ids);
	if (!s->warm_ids)
		return; /* heat only changes speed */
	s->n_warm = store_heat_ranked(s, s->warm_ids, max);
	s->warm_next = 0;
	store_warm_topup(s);
	if (s->warm_next > 0)
		coli_info("expert store: warm start, reading the %d hottest experts of earlier runs",
			  s->n_warm);
}

/* Read every hot expert not yet resident, in one batch per ring-full. */
int store_load_hot_set(expert_store *s, coli_err *err)
{
	int rc = 0, loaded = 0;
	for (int l = 0; l < s->n_layers && rc >= 0; l++) {
		if (!s->c->expert_shard_paths[l])
			continue;
		for (int e = 0; e < s->n_experts && rc >= 0; e++) {
			if (!s->hot_set[idx(s, l, e)] || s->map[idx(s, l, e)] >= 0)
				continue;
			int si = store_slot_load(s, l, e, 1);
			if (si < 0)
				rc = si;
			else
				loaded++;
		}
	}
	if (rc >= 0)
		rc = store_io_submit(s);
	while (rc >= 0 && s->io_inflight > 0)
		rc = store_io_reap(s, 1);
	if (rc < 0)
		return coli_err_set(err, rc, "expert store: loading the pinned set: %s", strerror(-rc));
	if (loaded)
		coli_info("expert store: pinned %d hot experts (%lld MiB)", loaded,
			  (long long)((int64_t)loaded * (int64_t)s->rec >> 20));
	store_update_resident(s);
	return 0;
}

/* Re-choose the hot set every this many tokens (routings of one layer). */
#define REPIN_EVERY 256
/* Save heat.bin every this many tokens. */
#define SAVE_EVERY 4096

void expert_store_note_routing(expert_store *s, int layer, const int *experts,
			       const float *weights, int n)
{
	if (!s || layer < 0 || layer >= s->n_layers)
		return;
	s->layer_tick[layer]++;
	for (int i = 0; i < n; i++)
		if (experts[i] >= 0 && experts[i] < s->n_experts)
			store_heat_note(s, layer, experts[i]);
	expert_stats_note_routing(s->stats, layer, experts, weights, n, s->first_moe);
	if (layer != s->first_moe)
		return;
	s->notes_since_repin++;
	s->notes_since_save++;
	if (s->notes_since_repin >= REPIN_EVERY && s->pin_slots > 0) {
		s->notes_since_repin = 0;
		int changed = store_heat_choose(s);
		/* "Meaningfully": at least 1/16 of the pinned set moved. */
		if (changed > 0 && changed * 16 >= s->n_hot) {
			store_apply_hot_set(s);
			load_hot_async(s);
			coli_debug("expert store: hot set re-chosen (%d changes)", changed);
		}
	}
	if (s->notes_since_save >= SAVE_EVERY && s->o.heat_dir) {
		s->notes_since_save = 0;
		store_heat_writer_kick(s); /* written by the store's writer thread */
	}
}
