/* expert_store_budget.c - see expert_store_budget.h. */
#include "config.h"

#include "expert_store_budget.h"

#include <errno.h>
#include <stdio.h>

#include "model_config.h"
#include "util_size_parse.h"

int64_t coli_kv_plan(const coli_config *c, int ctx_opt, int kv_ram_opt, int parallel, int *ctx_out,
		     int *kv_ram_out, int *slots_out)
{
	int ctx = ctx_opt > 0 ? ctx_opt : 4096;
	if (c->max_position_embeddings > 0 && ctx > c->max_position_embeddings)
		ctx = c->max_position_embeddings;
	int kv_ram = kv_ram_opt > 0 && kv_ram_opt < ctx ? kv_ram_opt : ctx;
	int64_t per = kv_ram * coli_config_kv_token_numbers(c) * (int64_t)sizeof(float);
	int slots;
	if (parallel > 0) {
		slots = parallel < COLI_KV_PLAN_MAX_SLOTS ? parallel : COLI_KV_PLAN_MAX_SLOTS;
	} else if (parallel < 0) {
		slots = COLI_KV_PLAN_MAX_SLOTS; /* auto: the engine bounds the KV itself */
	} else {
		int64_t n = (1LL << 30) / (per > 1 ? per : 1);
		slots = n < 1 ? 1 : n > 4 ? 4 : (int)n;
	}
	if (ctx_out)
		*ctx_out = ctx;
	if (kv_ram_out)
		*kv_ram_out = kv_ram;
	if (slots_out)
		*slots_out = slots;
	return per * slots;
}

int64_t store_budget_pin(int64_t total, int64_t pin, int64_t all, int64_t record, int batch)
{
	int64_t p = pin;
	if (p < 0)
		p = total < 4 * (int64_t)batch * record || total >= all ? total / 2 : 0;
	return p > all ? all : p;
}

int64_t store_budget_store_bytes(int64_t total, int64_t pin, int64_t all, int64_t record, int batch)
{
	int64_t p = store_budget_pin(total, pin, all, record, batch);
	if (total < p)
		total = p;
	int64_t pin_slots = p / record, cache_slots = (total - p) / record;
	int64_t floor = 2 * (int64_t)batch;
	return (pin_slots + (cache_slots > floor ? cache_slots : floor)) * record;
}

int store_budget_derive(store_budget_terms *t)
{
	int64_t room = -1;
	if (t->limit >= 0) {
		int64_t reclaim = t->reclaimable > 0 ? t->reclaimable : 0;
		int64_t used = t->usage > reclaim ? t->usage - reclaim : 0;
		room = t->limit > used ? t->limit - used : 0;
	}
	if (t->mem_available >= 0 && (room < 0 || t->mem_available < room))
		room = t->mem_available;
	if (room < 0) {
		t->room = t->total = t->store = 0;
		return -ENOENT;
	}
	t->room = room;
	int64_t free_ = room - (t->kv > 0 ? t->kv : 0) - (t->reserve > 0 ? t->reserve : 0);
	int64_t rec = t->record > 0 ? t->record : 1;
	int batch = t->batch > 0 ? t->batch : 1;
	int64_t all = t->all >= 0 ? t->all : 0;
	/* the largest whole number of records whose store fits: the store's
	 * bytes grow with the budget (never shrink), so bisect on records */
	int64_t lo = 0, hi = (free_ < all ? free_ : all) / rec;
	if (hi < 0)
		hi = 0;
	while (lo < hi) {
		int64_t mid = lo + (hi - lo + 1) / 2;
		if (store_budget_store_bytes(mid * rec, t->pin, all, rec, batch) <= free_)
			lo = mid;
		else
			hi = mid - 1;
	}
	t->total = lo * rec;
	t->store = store_budget_store_bytes(t->total, t->pin, all, rec, batch);
	return 0;
}

int store_budget_explain(const store_budget_terms *t, char *buf, size_t n)
{
	char tot[32], lim[32], use[32], rec[32], av[32], kv[32], res[32], den[32], all[32], sto[32], drop[32];
	size_format(t->total, tot, sizeof tot);
	size_format(t->kv, kv, sizeof kv);
	size_format(t->reserve, res, sizeof res);
	size_format(t->dense, den, sizeof den);
	size_format(t->all, all, sizeof all);
	size_format(t->store, sto, sizeof sto);
	size_format(t->mem_available, av, sizeof av);
	size_format(t->dense_dropped, drop, sizeof drop);
	/* how each derived term was had: the reserve measured or defaulted,
	 * the page cache the process leaves charged */
	char tail[384];
	snprintf(tail, sizeof tail,
		 "reserve: %s; store %s with its scratch pool; dense %s %s%s%s; expert reads %s; "
		 "experts total %s",
		 t->reserve_measured ? "the step state's scratch, measured" : "default, no step state measured",
		 sto, den, t->limit >= 0 ? "already in usage" : "already loaded",
		 t->dense_dropped > 0 ? ", its page cache dropped: " : "", t->dense_dropped > 0 ? drop : "",
		 t->direct == 0  ? "buffered (page cache, reclaimable)"
		 : t->direct > 0 ? "O_DIRECT (no page cache)"
				 : "O_DIRECT where the filesystem allows (no page cache)",
		 all);
	/* name the term that set the room: the cgroup or MemAvailable */
	int cgroup = t->limit >= 0 && (t->mem_available < 0 || t->room < t->mem_available);
	if (cgroup)
		return snprintf(buf, n,
				"budget %s = cgroup limit %s - (usage %s - reclaimable cache %s) - KV %s - reserve %s, "
				"in whole records (%s)",
				tot, size_format(t->limit, lim, sizeof lim), size_format(t->usage, use, sizeof use),
				size_format(t->reclaimable > 0 ? t->reclaimable : 0, rec, sizeof rec), kv, res, tail);
	return snprintf(buf, n, "budget %s = MemAvailable %s - KV %s - reserve %s, in whole records (%s)", tot,
			av, kv, res, tail);
}
