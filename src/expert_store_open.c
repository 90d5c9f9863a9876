/* expert_store_open.c - opening and freeing the expert store: the slot
 * arena and its tables sized from the budget, the reader, the heat and
 * its writer, then the pinned set and the warm start (expert_store_hot.c).
 * The arena's layout is described in expert_store.c. */
#include "config.h"

#include "expert_store_int.h"
#include "model_weight_mem.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "coli_log.h"
#include "util_size_parse.h"

static int alloc_tables(expert_store *s, coli_err *err)
{
	size_t n = (size_t)s->n_layers * (size_t)s->n_experts;
	s->map = malloc(n * sizeof *s->map);
	s->layer_visit = calloc((size_t)s->n_layers, sizeof *s->layer_visit);
	s->hot_set = calloc(n, 1);
	s->slots = calloc((size_t)s->n_slots, sizeof *s->slots);
	s->rows_of = calloc((size_t)s->n_experts, sizeof *s->rows_of);
	if (!s->map || !s->hot_set || !s->slots || !s->layer_visit || !s->rows_of)
		return coli_err_set(err, -ENOMEM, "expert store: out of memory");
	for (size_t i = 0; i < n; i++)
		s->map[i] = -1;
	s->arena_bytes = (size_t)s->n_slots * s->rec;
	/* Virtual reservation: pages are committed only when a record is read
	 * into them, so an unused budget costs nothing. */
	void *p = mmap(NULL, s->arena_bytes, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p == MAP_FAILED)
		return coli_err_set(err, -ENOMEM, "expert store: cannot reserve %zu bytes for %d records",
				    s->arena_bytes, s->n_slots);
	s->arena = p;
	/* huge pages: records are streamed by every step that uses them */
	coli_weight_mem_advise(p, s->arena_bytes);
	for (int i = 0; i < s->n_slots; i++) {
		s->slots[i].buf = s->arena + (size_t)i * s->rec;
		s->slots[i].layer = s->slots[i].expert = -1;
	}
	return 0;
}

int expert_store_open(const coli_container *c, const expert_store_opts *o,
		      expert_store **out, coli_err *err)
{
	expert_store_opts def;
	if (!o) {
		expert_store_opts_default(&def);
		o = &def;
	}
	*out = NULL;
	if (!c || c->config.n_routed_experts <= 0 || c->config.num_hidden_layers <= 0 ||
	    !c->expert_shard_paths || c->expert_record_size == 0 || c->expert_record_size % 4096)
		return coli_err_set(err, -EINVAL, "expert store: container has no valid expert layout");
	expert_store *s = calloc(1, sizeof *s);
	if (!s)
		return coli_err_set(err, -ENOMEM, "expert store: out of memory");
	s->c = c;
	s->o = *o;
	if (o->mirrors == o->mirror_list)
		s->o.mirrors = s->o.mirror_list; /* keep pointing into our copy */
	s->n_layers = c->config.num_hidden_layers;
	s->n_experts = c->config.n_routed_experts;
	s->top_k = c->config.num_experts_per_tok > 0 ? c->config.num_experts_per_tok : 1;
	s->rec = c->expert_record_size;
	s->first_moe = -1;
	s->cur_layer = -1;
	s->visit_layer = -1;
	s->rows_layer = -1;
	s->gate_p = 1.0; /* optimistic until measured */
	int n_moe = 0;
	for (int l = 0; l < s->n_layers; l++)
		if (c->expert_shard_paths[l]) {
			if (s->first_moe < 0)
				s->first_moe = l;
			n_moe++;
		}
	int rc;
	if (n_moe == 0) {
		rc = coli_err_set(err, -EINVAL, "expert store: container has no MoE layer");
		goto fail;
	}
	/* One layer's top-k per call: the engine runs each record as it
	 * lands (expert_store_request), so larger groups gain nothing and
	 * would only enlarge the scratch pool beyond the user's budget. */
	s->max_batch = o->max_batch > 0 ? o->max_batch : s->top_k;
	if (s->max_batch > s->n_experts)
		s->max_batch = s->n_experts;
	int64_t pin, cache;
	rc = store_budget_resolve(c, o, &pin, &cache);
	if (rc < 0) {
		rc = coli_err_set(err, rc, "expert store: cannot size the automatic cache budget");
		goto fail;
	}
	s->pin_slots = (int)(pin / (int64_t)s->rec);
	s->cache_slots = (int)(cache / (int64_t)s->rec);
	/* Hot records never exceed pin_slots, so cache + scratch slots are
	 * always evictable or held by the engine: 2 x max_batch of them is
	 * the guarantee expert_store_max_batch() gives. */
	s->scratch_slots = 2 * s->max_batch > s->cache_slots ? 2 * s->max_batch - s->cache_slots : 0;
	s->n_slots = s->pin_slots + s->cache_slots + s->scratch_slots;
	if (store_policy_init(&s->policy, store_policy_resolve(o->policy), n_moe,
			      (size_t)s->n_layers * (size_t)s->n_experts, 0) < 0) {
		rc = coli_err_set(err, -ENOMEM, "expert store: out of memory");
		goto fail;
	}
	s->stats = expert_stats_new(s->n_layers, s->n_experts, s->top_k, 1 + EXPERT_STORE_MAX_MIRRORS);
	if (!s->stats) {
		rc = coli_err_set(err, -ENOMEM, "expert store: out of memory");
		goto fail;
	}
	if ((rc = alloc_tables(s, err)) < 0)
		goto fail;
	if ((rc = store_heat_init(s, err)) < 0)
		goto fail;
	if ((rc = store_heat_writer_start(s, err)) < 0)
		goto fail;
	if ((rc = store_io_open(s, err)) < 0)
		goto fail;
	expert_stats_set_budgets(s->stats, (int64_t)s->rec, (int64_t)s->pin_slots * (int64_t)s->rec,
				 (int64_t)s->cache_slots * (int64_t)s->rec,
				 (int64_t)s->scratch_slots * (int64_t)s->rec, s->direct);
	char b1[32], b2[32], b3[32], b4[32];
	coli_info("expert store: %d MoE layers x %d experts of %s; pinned %s, cache %s, scratch %s; policy %s",
		  n_moe, s->n_experts, size_format((int64_t)s->rec, b1, sizeof b1),
		  size_format((int64_t)s->pin_slots * (int64_t)s->rec, b2, sizeof b2),
		  size_format((int64_t)s->cache_slots * (int64_t)s->rec, b3, sizeof b3),
		  size_format((int64_t)s->scratch_slots * (int64_t)s->rec, b4, sizeof b4),
		  expert_policy_name(s->policy.kind));
	if (store_heat_load(s) == 0) {
		if (s->pin_slots > 0 && store_heat_choose(s) > 0) {
			store_apply_hot_set(s);
			if ((rc = store_load_hot_set(s, err)) < 0)
				goto fail;
		}
		store_warm_start(s); /* the cache too, with the next hottest */
	}
	*out = s;
	return 0;
fail:
	expert_store_free(s);
	return rc;
}

void expert_store_free(expert_store *s)
{
	if (!s)
		return;
	if (s->ring_ok) {
		/* Let in-flight reads land before their buffers go away. */
		while (s->io_inflight > 0 && store_io_reap(s, 1) >= 0)
			;
	}
	store_heat_writer_stop(s);
	if (s->o.heat_dir && s->heat) {
		coli_err e;
		coli_err_clear(&e);
		if (store_heat_save(s, &e) < 0)
			coli_warn("%s", e.msg);
	}
	store_io_close(s);
	store_heat_free(s);
	if (s->arena)
		munmap(s->arena, s->arena_bytes);
	free(s->slots);
	free(s->map);
	free(s->hot_set);
	free(s->rows_of);
	free(s->warm_ids);
	free(s->crc_reported);
	free(s->layer_visit);
	store_policy_free(&s->policy);
	expert_stats_free(s->stats);
	free(s);
}
