/* engine_model.c - model options from engine options and a run's plan
 * (engine_model.h). */
#include "config.h"

#include <stdio.h>
#include <sys/stat.h>

#include "engine_model.h"
#include "kv_cache_dir.h"

void coli_engine_model_opts(const coli_engine_opts *o, const coli_model_plan *plan, coli_model_opts *mo)
{
	coli_model_opts_default(mo);
	mo->threads = o->threads;
	mo->act_quant = o->act_quant;
	mo->store = o->store;
	if (!plan)
		return;
	mo->mtp = plan->mtp;
	mo->store.kv_ctx = plan->ctx;
	mo->store.kv_ram = plan->kv_ram;
	mo->store.kv_parallel = plan->parallel;
	mo->store.kv_cap = plan->kv_cap;
	mo->store.state_batch = plan->state_batch;
	mo->store.heat_dir = o->no_heat ? NULL : plan->heat_dir;
}

int coli_engine_heat_dir(const char *cache_dir, char *buf, size_t size, int *made, coli_err *err)
{
	struct stat st;
	snprintf(buf, size, "%s/hot-experts", cache_dir);
	if (made)
		*made = stat(buf, &st) != 0;
	return kv_mkdirs(buf, err);
}
