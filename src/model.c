/* model.c - open a model: the container, the tensor binding
 * (model_bind.c), RoPE tables, the compute pool and the expert store. */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coli_log.h"
#include "expert_store_budget.h"
#include "model.h"
#include "util_size_parse.h"

int coli_act_quant_parse(const char *name)
{
	if (!name)
		return -1;
	if (!strcmp(name, "f32"))
		return COLI_ACT_F32;
	if (!strcmp(name, "q8"))
		return COLI_ACT_Q8;
	return -1;
}

const char *coli_act_quant_name(int act_quant)
{
	return act_quant == COLI_ACT_Q8 ? "q8" : "f32";
}

void coli_model_opts_default(coli_model_opts *o)
{
	memset(o, 0, sizeof *o);
	o->threads = 0;
	o->act_quant = COLI_ACT_F32;
	expert_store_opts_default(&o->store);
}

/* YaRN helpers, following the DeepSeek-V3 definition of rope_scaling. */
static double yarn_mscale(double scale, double mscale)
{
	return scale <= 1.0 ? 1.0 : 0.1 * mscale * log(scale) + 1.0;
}

static double yarn_correction_dim(double rotations, int dim, double base, int max_pos)
{
	return dim * log(max_pos / (rotations * 2.0 * M_PI)) / (2.0 * log(base));
}

static int rope_init(coli_model *m, coli_err *err)
{
	const coli_config *c = &m->cfg;
	const int d = c->qk_rope_head_dim, half = d / 2;
	m->rope_inv_freq = malloc(sizeof(float) * (size_t)(half > 0 ? half : 1));
	if (!m->rope_inv_freq)
		return coli_err_set(err, -ENOMEM, "out of memory (rope tables)");
	double softmax_scale = 1.0 / sqrt((double)coli_config_qk_head_dim(c));
	m->rope_mscale = 1.0f;
	for (int i = 0; i < half; i++) {
		double extra = 1.0 / pow(c->rope_theta, (2.0 * i) / d);
		double inv = extra;
		if (c->rope_kind == COLI_ROPE_YARN) {
			double inter = extra / c->rope_factor;
			double lo = floor(yarn_correction_dim(c->rope_beta_fast, d, c->rope_theta,
							      c->rope_original_max_pos));
			double hi = ceil(yarn_correction_dim(c->rope_beta_slow, d, c->rope_theta,
							     c->rope_original_max_pos));
			if (lo < 0)
				lo = 0;
			if (hi > d - 1)
				hi = d - 1;
			if (lo == hi)
				hi += 0.001;
			double ramp = (i - lo) / (hi - lo);
			ramp = ramp < 0 ? 0 : ramp > 1 ? 1 : ramp;
			double extra_mask = 1.0 - ramp;
			inv = inter * (1.0 - extra_mask) + extra * extra_mask;
		}
		m->rope_inv_freq[i] = (float)inv;
	}
	if (c->rope_kind == COLI_ROPE_YARN) {
		m->rope_mscale = (float)(yarn_mscale(c->rope_factor, c->rope_mscale) /
					 yarn_mscale(c->rope_factor, c->rope_mscale_all_dim));
		if (c->rope_mscale_all_dim != 0.0) {
			double ms = yarn_mscale(c->rope_factor, c->rope_mscale_all_dim);
			softmax_scale *= ms * ms;
		}
	}
	m->softmax_scale = (float)softmax_scale;
	return 0;
}

/* The automatic expert budget reserves the step state the caller will
 * allocate: allocate one of that shape (the KV plan's context, the
 * declared batch, at least a row per slot), count it, free it. Its
 * scratch is calloc'd, so this costs address space, not RAM. */
static int measure_state(coli_model *m, expert_store_opts *so, coli_err *err)
{
	int ctx, slots;
	coli_kv_plan(&m->cfg, so->kv_ctx, so->kv_ram, so->kv_parallel, &ctx, NULL, &slots);
	int batch = so->state_batch > slots ? so->state_batch : slots;
	coli_state *s;
	int rc = coli_state_new(m, ctx, batch, &s, err);
	if (rc)
		return rc;
	so->state_bytes = (int64_t)coli_state_scratch_bytes(s);
	coli_state_free(s);
	return 0;
}

int coli_model_open(const char *dir, const coli_model_opts *o, coli_model **out, coli_err *err)
{
	coli_model_opts defaults;
	if (!o) {
		coli_model_opts_default(&defaults);
		o = &defaults;
	}
	int rc;
	coli_model *m = calloc(1, sizeof *m);
	if (!m)
		return coli_err_set(err, -ENOMEM, "out of memory");
	coli_container_opts copts = { 0 };
	copts.load_mtp = o->mtp;
	copts.no_checksums = o->store.no_checksums; /* one switch for tensors and records */
	/* an automatic expert budget inside a memory cgroup: the dense files'
	 * page cache is charged to the group, drop it (the budget's room then
	 * no longer depends on how much of it the kernel counts inactive) */
	size_cgroup_mem cg;
	copts.drop_cache = o->store.cache_bytes < 0 && size_cgroup_self(&cg) == 0;
	if ((rc = coli_container_open(dir, &copts, &m->container, err)))
		goto fail;
	m->cfg = m->container->config;
	const coli_config *c = &m->cfg;
	if (o->mtp && c->num_nextn_predict_layers > 0)
		m->n_mtp = 1;
	else if (o->mtp)
		coli_debug("%s has no MTP module; --mtp ignored", dir);
	if ((rc = coli_model_bind(m, err)))
		goto fail;
	if ((rc = rope_init(m, err)))
		goto fail;
	if (o->act_quant != COLI_ACT_F32 && o->act_quant != COLI_ACT_Q8) {
		rc = coli_err_set(err, -EINVAL, "unknown activation mode %d", o->act_quant);
		goto fail;
	}
	m->act_quant = o->act_quant;
	if (m->act_quant == COLI_ACT_Q8)
		coli_info("activations quantized to int8 per block of 64 (--act-quant q8)");
	m->pool = coli_pool_new(o->threads);
	if (!m->pool) {
		rc = coli_err_set(err, -ENOMEM, "cannot start the compute pool");
		goto fail;
	}
	if (c->n_routed_experts > 0) {
		expert_store_opts so = o->store;
		so.dense_dropped = (int64_t)m->container->dense_cache_dropped;
		if (so.cache_bytes < 0 && so.state_batch > 0 && (rc = measure_state(m, &so, err)))
			goto fail;
		if ((rc = expert_store_open(m->container, &so, &m->store, err)))
			goto fail;
	}
	*out = m;
	return 0;
fail:
	coli_model_free(m);
	return rc;
}

void coli_model_free(coli_model *m)
{
	if (!m)
		return;
	expert_store_free(m->store);
	coli_pool_free(m->pool);
	free(m->rope_inv_freq);
	coli_model_unbind(m);
	coli_container_free(m->container);
	free(m);
}
