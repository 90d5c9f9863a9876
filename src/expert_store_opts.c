/* expert_store_opts.c - store options: defaults, the shared flag/env
 * parser, and the automatic RAM budget.
 *
 * Budget semantics (documented in man/engine-options.inc):
 *   --expert-cache SIZE  RAM for routed experts (pinned + cached); a
 *                        scratch pool tops the unpinned part up to
 *                        2 x max_batch records when it is smaller;
 *   --pin-budget SIZE    the part of it reserved for the pinned hot set
 *                        (auto: see below). A pin budget larger than the
 *                        cache budget raises the total to the pin budget.
 * Automatic pin budget: half of the total where pinning costs nothing,
 * none elsewhere. It costs nothing below 4 x max_batch records, where the
 * scratch pool tops the unpinned half up to 2 x max_batch anyway (one
 * layer held plus the next one's prefetch), so the pinned half is extra
 * room, and when the total holds every expert (nothing is evicted; the
 * hot half is read at open, the heat's warm start). In between a pinned
 * record takes a slot from the cache, and a fixed set loses to the
 * adaptive policy: on the trained default model's routing
 * (bench/routing_policy.sh, 6 seeds, lfu-next) pinning half cost 0.11 of
 * the Belady ratio at 16 records (4 x top-k), 0.03 at 24, and gained
 * 0.11-0.31 at 8-10 records (expert_store_policy.c has the table).
 * Automatic total (cache "auto"): store_budget_derive
 * (expert_store_budget.h): the room (cgroup limit - (usage - inactive page
 * cache), or MemAvailable when smaller) - the KV the caller will allocate
 * - the reserve (the caller's step state, measured, else 64 MiB), then the largest budget whose store (scratch pool
 * included where the store adds one) fits in that, never more than all
 * expert bytes, never negative. The dense part is already loaded, inside
 * usage, and is not subtracted again. */
#include "config.h"

#include "expert_store_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "coli_log.h"
#include "util_size_parse.h"


void expert_store_opts_default(expert_store_opts *o)
{
	memset(o, 0, sizeof *o);
	o->cache_bytes = -1;
	o->pin_bytes = -1;
	o->prefetch = 1;
	o->direct = -1;
	o->policy = -1;
	o->kv_bytes = -1;
	o->state_bytes = -1;
}

static int64_t total_expert_bytes(const coli_container *c)
{
	int64_t t = 0;
	for (int l = 0; l < c->config.num_hidden_layers; l++)
		if (c->expert_shard_paths[l])
			t += (int64_t)c->config.n_routed_experts * (int64_t)c->expert_record_size;
	return t;
}

/* The store's max_batch (expert_store_open): one layer's top-k. */
static int store_batch(const coli_container *c, const expert_store_opts *o)
{
	int batch = o->max_batch > 0 ? o->max_batch : c->config.num_experts_per_tok;
	if (batch > c->config.n_routed_experts)
		batch = c->config.n_routed_experts;
	return batch < 1 ? 1 : batch;
}

/* The memory terms of the process now: MemAvailable, and the tightest
 * cgroup level's limit, usage and reclaimable cache. */
static void measure_memory(store_budget_terms *t)
{
	char buf[4096];
	size_cgroup_mem m;
	memset(t, 0, sizeof *t);
	t->limit = -1;
	t->mem_available = -1;
	FILE *f = fopen("/proc/meminfo", "r");
	if (f) {
		size_t n = fread(buf, 1, sizeof buf - 1, f);
		buf[n] = '\0';
		fclose(f);
		t->mem_available = size_meminfo_available(buf);
	}
	buf[0] = '\0';
	if ((f = fopen("/proc/self/cgroup", "r"))) {
		size_t n = fread(buf, 1, sizeof buf - 1, f);
		buf[n] = '\0';
		fclose(f);
	}
	if (size_cgroup_memory("/sys/fs/cgroup", buf, &m) == 0) {
		t->limit = m.limit;
		t->usage = m.usage;
		t->reclaimable = m.reclaimable;
	}
}

int64_t store_budget_room_now(void)
{
	store_budget_terms t;
	measure_memory(&t);
	/* derive with nothing else to place: its room is the answer */
	t.record = 1;
	return store_budget_derive(&t) ? -1 : t.room;
}

int store_budget_measure(const coli_container *c, const expert_store_opts *o, store_budget_terms *t)
{
	measure_memory(t);
	t->dense = (int64_t)c->dense_bytes;
	t->kv = o->kv_bytes >= 0 ? o->kv_bytes
				 : coli_kv_plan(&c->config, o->kv_ctx, o->kv_ram, o->kv_parallel, NULL, NULL, NULL);
	if (o->kv_cap > 0 && t->kv > o->kv_cap)
		t->kv = o->kv_cap;
	/* the store's own sizing rule (pinned + cache, topped up by the
	 * scratch pool below 2 x max_batch records) is inverted by derive */
	t->reserve_measured = o->state_bytes > 0;
	t->reserve = t->reserve_measured ? o->state_bytes : STORE_BUDGET_RESERVE;
	t->dense_dropped = o->dense_dropped > 0 ? o->dense_dropped : 0;
	t->direct = o->direct;
	t->record = (int64_t)c->expert_record_size;
	t->batch = store_batch(c, o);
	t->pin = o->pin_bytes;
	t->all = total_expert_bytes(c);
	return store_budget_derive(t);
}

int store_budget_resolve(const coli_container *c, const expert_store_opts *o,
			 int64_t *pin, int64_t *cache)
{
	int64_t total = o->cache_bytes;
	int rc;
	int64_t all = total_expert_bytes(c);
	if (total < 0) {
		store_budget_terms t;
		if ((rc = store_budget_measure(c, o, &t)) < 0)
			return rc;
		total = t.total;
		char line[1024];
		store_budget_explain(&t, line, sizeof line);
		coli_info("expert store: automatic %s", line);
	}
	int64_t p = store_budget_pin(total, o->pin_bytes, all, (int64_t)c->expert_record_size, store_batch(c, o));
	if (total < p)
		total = p;
	*pin = p;
	*cache = total - p;
	return 0;
}

static int parse_bool_env(const char *v, int *out)
{
	if (!strcmp(v, "1") || !strcasecmp(v, "on") || !strcasecmp(v, "yes") || !strcasecmp(v, "true"))
		*out = 1;
	else if (!strcmp(v, "0") || !strcasecmp(v, "off") || !strcasecmp(v, "no") || !strcasecmp(v, "false"))
		*out = 0;
	else
		return -EINVAL;
	return 0;
}

static int add_mirror(expert_store_opts *o, const char *dir, const char *what, coli_err *err)
{
	int n = 0;
	while (n < EXPERT_STORE_MAX_MIRRORS && o->mirror_list[n])
		n++;
	if (n >= EXPERT_STORE_MAX_MIRRORS)
		return coli_err_set(err, -EINVAL, "%s: at most %d mirrors", what, EXPERT_STORE_MAX_MIRRORS);
	o->mirror_list[n] = dir;
	o->mirror_list[n + 1] = NULL;
	o->mirrors = o->mirror_list;
	return 0;
}

static int parse_weights(expert_store_opts *o, const char *v, const char *what, coli_err *err)
{
	double w[1 + EXPERT_STORE_MAX_MIRRORS] = { 0 };
	int n = 0;
	const char *p = v;
	while (*p) {
		char *end;
		if (n >= 1 + EXPERT_STORE_MAX_MIRRORS)
			return coli_err_set(err, -EINVAL, "%s: too many weights in '%s'", what, v);
		w[n] = strtod(p, &end);
		if (end == p || w[n] < 0 || (*end && *end != ','))
			return coli_err_set(err, -EINVAL, "%s: '%s' is not a list of weights like 1,1.5", what, v);
		n++;
		p = *end ? end + 1 : end;
	}
	if (!n)
		return coli_err_set(err, -EINVAL, "%s: empty weight list", what);
	memcpy(o->mirror_weights, w, sizeof w);
	return 0;
}

static int parse_policy(const char *v, int *out)
{
	if (!strcasecmp(v, "lru"))
		*out = EXPERT_POLICY_LRU;
	else if (!strcasecmp(v, "lfu-decay") || !strcasecmp(v, "lfu"))
		*out = EXPERT_POLICY_LFU_DECAY;
	else if (!strcasecmp(v, "lfu-next"))
		*out = EXPERT_POLICY_LFU_NEXT;
	else if (!strcasecmp(v, "auto") || !strcasecmp(v, "default"))
		*out = -1;
	else
		return -EINVAL;
	return 0;
}

int expert_store_opts_parse_flag(expert_store_opts *o, const char *flag,
				 const char *value, coli_err *err)
{
	char name[64];
	const char *eq = strchr(flag, '=');
	int consumed = 1;
	if (eq) {
		size_t n = (size_t)(eq - flag);
		if (n >= sizeof name)
			return -ENOENT;
		memcpy(name, flag, n);
		name[n] = '\0';
		value = eq + 1;
		consumed = 0;
	} else {
		snprintf(name, sizeof name, "%s", flag);
	}
	/* Switches take no value. */
	if (!strcmp(name, "--no-prefetch") || !strcmp(name, "--prefetch") ||
	    !strcmp(name, "--direct") || !strcmp(name, "--no-direct") || !strcmp(name, "--verify-mirrors") ||
	    !strcmp(name, "--verify-checksums") || !strcmp(name, "--no-verify-checksums")) {
		if (eq)
			return coli_err_set(err, -EINVAL, "%s takes no value", name);
		if (!strcmp(name, "--verify-mirrors"))
			o->verify_mirrors = 1;
		else if (!strcmp(name, "--verify-checksums") || !strcmp(name, "--no-verify-checksums"))
			o->no_checksums = !strcmp(name, "--no-verify-checksums");
		else if (!strcmp(name, "--no-prefetch"))
			o->prefetch = 0;
		else if (!strcmp(name, "--prefetch"))
			o->prefetch = 1;
		else
			o->direct = !strcmp(name, "--direct");
		return 0;
	}
	if (strcmp(name, "--expert-cache") && strcmp(name, "--pin-budget") && strcmp(name, "--mirror") &&
	    strcmp(name, "--mirror-weights") && strcmp(name, "--cache-policy"))
		return -ENOENT;
	if (!value)
		return coli_err_set(err, -EINVAL, "%s needs a value", name);
	int rc = 0;
	if (!strcmp(name, "--expert-cache"))
		rc = size_parse(value, name, &o->cache_bytes, err);
	else if (!strcmp(name, "--pin-budget"))
		rc = size_parse(value, name, &o->pin_bytes, err);
	else if (!strcmp(name, "--mirror"))
		rc = add_mirror(o, value, name, err);
	else if (!strcmp(name, "--mirror-weights"))
		rc = parse_weights(o, value, name, err);
	else if (parse_policy(value, &o->policy))
		rc = coli_err_set(err, -EINVAL, "%s: '%s' is not lfu-next, lfu-decay, lru or auto", name, value);
	return rc < 0 ? rc : consumed;
}

int expert_store_opts_from_env(expert_store_opts *o, coli_err *err)
{
	const char *v;
	int rc;
	if ((v = getenv("COLI_EXPERT_CACHE")) && *v &&
	    (rc = size_parse(v, "COLI_EXPERT_CACHE", &o->cache_bytes, err)) < 0)
		return rc;
	if ((v = getenv("COLI_PIN_BUDGET")) && *v &&
	    (rc = size_parse(v, "COLI_PIN_BUDGET", &o->pin_bytes, err)) < 0)
		return rc;
	if ((v = getenv("COLI_PREFETCH")) && *v) {
		if (!strcasecmp(v, "always"))
			o->prefetch = 2;
		else if (parse_bool_env(v, &o->prefetch))
			return coli_err_set(err, -EINVAL, "COLI_PREFETCH: '%s' is not 0, 1 or always", v);
	}
	if ((v = getenv("COLI_DIRECT")) && *v) {
		if (!strcasecmp(v, "auto"))
			o->direct = -1;
		else if (parse_bool_env(v, &o->direct))
			return coli_err_set(err, -EINVAL, "COLI_DIRECT: '%s' is not 0, 1 or auto", v);
	}
	if ((v = getenv("COLI_VERIFY_CHECKSUMS")) && *v) {
		int on;
		if (parse_bool_env(v, &on))
			return coli_err_set(err, -EINVAL, "COLI_VERIFY_CHECKSUMS: '%s' is not 0 or 1", v);
		o->no_checksums = !on;
	}
	if ((v = getenv("COLI_CACHE_POLICY")) && *v && parse_policy(v, &o->policy))
		return coli_err_set(err, -EINVAL, "COLI_CACHE_POLICY: '%s' is not lfu-next, lfu-decay, lru or auto", v);
	if ((v = getenv("COLI_MIRROR_WEIGHTS")) && *v &&
	    (rc = parse_weights(o, v, "COLI_MIRROR_WEIGHTS", err)) < 0)
		return rc;
	if ((v = getenv("COLI_MODEL_MIRROR")) && *v) {
		if (strlen(v) >= sizeof o->mirror_env)
			return coli_err_set(err, -EINVAL, "COLI_MODEL_MIRROR: value too long");
		snprintf(o->mirror_env, sizeof o->mirror_env, "%s", v);
		/* Colon-separated, like PATH; split in place in our copy. */
		char *save = NULL;
		for (char *d = strtok_r(o->mirror_env, ":", &save); d; d = strtok_r(NULL, ":", &save))
			if ((rc = add_mirror(o, d, "COLI_MODEL_MIRROR", err)) < 0)
				return rc;
	}
	return 0;
}
