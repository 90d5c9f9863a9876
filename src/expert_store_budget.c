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
		slots = parallel < 16 ? parallel : 16;
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
		t->room = t->total = 0;
		return -ENOENT;
	}
	t->room = room;
	int64_t total = room - (t->kv > 0 ? t->kv : 0) - (t->reserve > 0 ? t->reserve : 0);
	if (total < 0)
		total = 0;
	if (t->all >= 0 && total > t->all)
		total = t->all;
	t->total = total;
	return 0;
}

int store_budget_explain(const store_budget_terms *t, char *buf, size_t n)
{
	char tot[32], lim[32], use[32], rec[32], av[32], kv[32], res[32], den[32], all[32];
	size_format(t->total, tot, sizeof tot);
	size_format(t->kv, kv, sizeof kv);
	size_format(t->reserve, res, sizeof res);
	size_format(t->dense, den, sizeof den);
	size_format(t->all, all, sizeof all);
	size_format(t->mem_available, av, sizeof av);
	/* name the term that set the room: the cgroup or MemAvailable */
	int cgroup = t->limit >= 0 && (t->mem_available < 0 || t->room < t->mem_available);
	if (cgroup)
		return snprintf(buf, n,
				"budget %s = cgroup limit %s - (usage %s - reclaimable cache %s) - KV %s - reserve %s "
				"(dense %s already in usage; experts total %s)",
				tot, size_format(t->limit, lim, sizeof lim), size_format(t->usage, use, sizeof use),
				size_format(t->reclaimable > 0 ? t->reclaimable : 0, rec, sizeof rec), kv, res, den,
				all);
	return snprintf(buf, n,
			"budget %s = MemAvailable %s - KV %s - reserve %s (dense %s already loaded; experts total %s)",
			tot, av, kv, res, den, all);
}
