/* engine_kv.c - KV memory admission: every slot's KV within one budget.
 *
 * A slot's KV (coli_seq) is sized at admission to what its request can
 * use: the prompt plus the tokens it may generate, rounded up to
 * ENGINE_KV_ROUND rows, at most kv_ram. It grows for a longer request and
 * never shrinks while the slot keeps its history (a later request may
 * reuse the prefix). The sum over the slots stays within kv_budget: a
 * request whose KV does not fit first frees the KV of idle slots, least
 * recently used first, and otherwise waits in the queue until running
 * requests finish. So asking for many sequences in a small memory limit
 * runs as many as fit instead of being killed by the OOM killer.
 *
 * The budget (engine.c, engine_kv_budget) is --parallel x the rows a
 * slot may hold, the KV that the automatic expert-cache budget
 * subtracted; with --parallel auto, or where that cannot fit, a quarter
 * of the memory the process may use at start. */
#include "config.h"

#include <errno.h>
#include <stdatomic.h>

#include "coli_log.h"
#include "engine_internal.h"
#include "model.h"

int engine_kv_need_rows(const coli_engine *e, const coli_request *r)
{
	/* a session's history is only known once bound, and the prefix
	 * adoption loads up to the whole window: both take kv_ram */
	if (r->session || e->opts.share_session_prefixes)
		return e->kv_ram;
	const int limit = r->params.max_tokens > 0 ? r->params.max_tokens : e->ctx;
	long long rows = (long long)r->n_prompt + limit + 1;
	if (e->draft)
		rows += COLI_DRAFT_MAX + 1; /* drafts are evaluated past the end */
	rows = (rows + ENGINE_KV_ROUND - 1) / ENGINE_KV_ROUND * ENGINE_KV_ROUND;
	return rows < e->kv_ram ? (int)rows : e->kv_ram;
}

/* Bytes of a sequence of `rows` rows, from one already allocated (the
 * per-row cost is the same for every slot). */
static long long seq_bytes_at(const coli_engine *e, int rows)
{
	return (long long)rows * e->kv_row_bytes;
}

/* What a slot's KV counts against the budget: its rows, as the budget's
 * plan counts them (n_slots x kv_ram x row bytes). The sequence's own
 * header and pointer tables are not counted: with them, slots holding a
 * full window each overshot the plan by a few hundred bytes and never
 * ran together. */
static long long slot_kv_bytes(const coli_engine *e, const engine_slot *sl)
{
	return sl->seq ? seq_bytes_at(e, coli_seq_capacity(sl->seq)) : 0;
}

int engine_kv_drop(coli_engine *e, engine_slot *sl)
{
	if (!sl->seq)
		return 0;
	/* rows not yet in the session file are written first: the slot
	 * keeps its KV, busy, until the session writer is done */
	if (engine_session_unbind(e, sl))
		return 1;
	atomic_fetch_sub_explicit(&e->kv_used, slot_kv_bytes(e, sl), memory_order_relaxed);
	engine_slot_free(sl);
	sl->n_hist = 0;
	sl->hist_private = 0;
	return 0;
}

int engine_kv_fit(coli_engine *e, engine_slot *sl, int rows)
{
	const long long have = slot_kv_bytes(e, sl);
	const long long want = seq_bytes_at(e, rows);
	for (;;) {
		long long used = atomic_load_explicit(&e->kv_used, memory_order_relaxed);
		if (want <= have || used - have + want <= e->kv_budget)
			return 1;
		/* the idle slot that was used least recently gives its KV */
		engine_slot *victim = NULL;
		for (int i = 0; i < e->n_slots; i++) {
			engine_slot *o = &e->slots[i];
			if (o == sl || o->phase != SLOT_IDLE || !o->seq || engine_session_busy(e, o))
				continue; /* a busy one's rows are being saved */
			if (!victim || o->last_used < victim->last_used)
				victim = o;
		}
		if (!victim)
			return 0;
		engine_kv_drop(e, victim); /* or busy now: the next victim */
	}
}

int engine_kv_reserve(coli_engine *e, engine_slot *sl, int rows, coli_err *err)
{
	if (!sl->seq) {
		int rc = engine_slot_alloc(e, sl, rows, err);
		if (rc)
			return rc;
		atomic_fetch_add_explicit(&e->kv_used, slot_kv_bytes(e, sl), memory_order_relaxed);
		return 0;
	}
	const long long before = slot_kv_bytes(e, sl);
	int rc = coli_seq_reserve(sl->seq, rows, err);
	atomic_fetch_add_explicit(&e->kv_used, slot_kv_bytes(e, sl) - before, memory_order_relaxed);
	return rc;
}

/* Shares of the room: auto gives the KV a quarter and leaves the rest to
 * the dense part and the expert cache; an explicit --parallel keeps its
 * planned KV up to half. */
int64_t engine_kv_cap(int parallel, int64_t room)
{
	if (room <= 0)
		return 0;
	return parallel < 0 ? room / 4 : room / 2;
}

void engine_kv_budget(coli_engine *e, int64_t room)
{
	const long long plan = (long long)e->n_slots * e->kv_ram * e->kv_row_bytes;
	const int64_t cap = engine_kv_cap(e->opts.parallel, room);
	e->kv_budget = cap > 0 && plan > cap ? cap : plan;
	if (e->opts.parallel < 0) {
		/* auto: as many slots as the budget holds at two rounds of
		 * rows each (admission then runs as many as really fit) */
		long long per = 2LL * ENGINE_KV_ROUND * e->kv_row_bytes;
		long long n = per > 0 ? e->kv_budget / per : 1;
		e->n_slots = n < 1 ? 1 : n > COLI_MAX_PARALLEL ? COLI_MAX_PARALLEL : (int)n;
		coli_info("engine: --parallel auto: up to %d sequences within a KV budget of %lld MiB "
			  "(a quarter of the %lld MiB this process may use)", e->n_slots, e->kv_budget >> 20,
			  (long long)room >> 20);
	} else if (e->kv_budget < plan) {
		coli_warn("engine: --parallel %d x %d KV rows needs %lld MiB, more than half of the %lld MiB "
			  "this process may use: KV held to %lld MiB, requests wait for room",
			  e->n_slots, e->kv_ram, plan >> 20, (long long)room >> 20, e->kv_budget >> 20);
	}
}
