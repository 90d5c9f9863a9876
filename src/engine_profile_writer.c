/* engine_profile_writer.c - routing profiles summed into their files in
 * the background (format and paths in engine_profile.h).
 *
 * A job is the pending sum for one file: a session's, a label's or
 * _all's, with a uint32 per layer and expert. Memory is bounded at
 * start: 3 x min(slots, 16) + 8 jobs, allocated when the engine opens.
 * When a request ends the engine thread, under the lock (arithmetic
 * only: no allocation, no syscall), adds the slot's counts to the READY
 * job of each of its files, or fills a FREE one, and signals this thread.
 * The writer takes every READY job at once and for each reads its file,
 * adds the sum and replaces it (coli_file_replace: temp file, fsync,
 * rename, directory fsync); while it writes, the next requests' counts
 * gather in new READY jobs. So a burst of requests costs one write per
 * file, not one per request, and _all and the labels never lose a count;
 * only a flood of distinct sessions ending while the disk is slow can
 * find no FREE job: that session's share is dropped and counted, and the
 * writer says how many in one warning. Two processes sharing a cache
 * directory may lose each other's sums (read, add, replace is not atomic
 * across processes): profiles are statistics.
 *
 * Threads: the engine thread fills FREE jobs and adds to READY ones; this
 * thread owns the jobs it marked BUSY until it marks them FREE again.
 * `lock` guards every job's state and, for READY and FREE jobs, their
 * contents, and `stop` and `dropped`. */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "coli_log.h"
#include "engine_internal.h"
#include "engine_profile.h"
#include "kv_cache_dir.h"
#include "kv_file.h"
#include "kv_store.h"

enum { JOB_FREE = 0, JOB_READY, JOB_BUSY };
enum { TARGET_SESSION = 0, TARGET_LABEL, TARGET_ALL };

typedef struct prof_job {
	int state;
	int kind;                  /* TARGET_* */
	char name[KV_NAME_MAX + 1];/* session or label ("_all") */
	uint32_t *counts;          /* (n_layers, n_experts) */
	uint64_t tokens, requests;
} prof_job;

struct engine_profiler {
	int n_layers, n_experts, top_k, first_moe;
	char fingerprint[65];
	char kv_dir[4200], prof_dir[4200];
	prof_job *jobs;
	int n_jobs;
	uint8_t *taken;            /* (n_jobs) the writer's own copy of which
	                            * jobs it marked BUSY: it reads no state
	                            * outside the lock */
	coli_profile acc;          /* the writer's sum of one file */
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int stop, dropped, started;
	int foreign_said;          /* the writer's own: a foreign file was met */
	size_t bytes;              /* heap held above, set at open */
	_Atomic unsigned long long written, dropped_total; /* relaxed: statistics */
};

/* One job into its file: the file's content (a fresh profile when absent
 * or unreadable, with a warning for the latter) plus the job's sum. */
static void write_job(engine_profiler *p, const prof_job *jb)
{
	const char *dir = jb->kind == TARGET_SESSION ? p->kv_dir : p->prof_dir;
	char path[4400];
	snprintf(path, sizeof path, "%s/%s.prof", dir, jb->name);
	coli_err err = { 0 };
	if (kv_mkdirs(dir, &err)) {
		coli_warn("%s; routing profile not saved", err.msg);
		return;
	}
	/* A session's profile is a companion of NAME.kv (kv_store_rm removes
	 * both, the .kv first): none for a session already gone (a batch's
	 * store: false continuation, removed once answered), and one written
	 * while it was removed goes too. */
	char kv[4400];
	if (jb->kind == TARGET_SESSION &&
	    (kv_store_path(dir, jb->name, "kv", kv, sizeof kv, NULL) < 0 || access(kv, F_OK) < 0))
		return;
	coli_profile old;
	int rc = coli_profile_read(path, &old, &err);
	coli_profile *a = &p->acc;
	const size_t n = (size_t)p->n_layers * (size_t)p->n_experts;
	memset(a->counts, 0, sizeof *a->counts * n);
	a->tokens = a->requests = 0;
	if (rc == 0) {
		if (old.n_layers != p->n_layers || old.n_experts != p->n_experts ||
		    strncmp(old.fingerprint, p->fingerprint, 64)) {
			/* two models sharing one cache directory ($COLI_CACHE_DIR):
			 * the file is the other model's statistics, kept as they
			 * are; this model records nothing there (said once) */
			if (!p->foreign_said++)
				coli_info("%s belongs to another model: left as it is, and this model's "
					  "routing counts for it are not kept", path);
			coli_profile_free(&old);
			return;
		}
		coli_profile_add(a, &old, &err);
	} else if (rc != -ENOENT) {
		coli_warn("%s; started anew", err.msg);
	}
	coli_profile_free(&old);
	for (size_t i = 0; i < n; i++)
		a->counts[i] += jb->counts[i];
	a->tokens += jb->tokens;
	a->requests += jb->requests;
	snprintf(a->label, sizeof a->label, "%.63s", jb->kind == TARGET_SESSION ? "" : jb->name);
	coli_err_clear(&err);
	if (coli_profile_write(path, a, &err) < 0) {
		coli_warn("%s", err.msg);
		return;
	}
	atomic_fetch_add_explicit(&p->written, 1, memory_order_relaxed);
	if (jb->kind == TARGET_SESSION && access(kv, F_OK) < 0)
		unlink(path);
}

static void *writer_main(void *arg)
{
	engine_profiler *p = arg;
	pthread_mutex_lock(&p->lock);
	for (;;) {
		int ready = 0;
		for (int j = 0; j < p->n_jobs; j++) {
			p->taken[j] = p->jobs[j].state == JOB_READY;
			if (p->taken[j]) {
				p->jobs[j].state = JOB_BUSY;
				ready++;
			}
		}
		if (!ready) {
			if (p->stop)
				break;
			pthread_cond_wait(&p->cond, &p->lock);
			continue;
		}
		const int dropped = p->dropped;
		p->dropped = 0;
		pthread_mutex_unlock(&p->lock);
		if (dropped)
			coli_warn("routing profiles: %d request(s) not recorded (the profile writer fell behind)",
				  dropped);
		for (int k = 0; k < p->n_jobs; k++)
			if (p->taken[k])
				write_job(p, &p->jobs[k]);
		pthread_mutex_lock(&p->lock);
		for (int j = 0; j < p->n_jobs; j++)
			if (p->jobs[j].state == JOB_BUSY)
				p->jobs[j].state = JOB_FREE;
	}
	pthread_mutex_unlock(&p->lock);
	return NULL;
}

static void profiler_free(engine_profiler *p)
{
	if (!p)
		return;
	for (int j = 0; p->jobs && j < p->n_jobs; j++)
		free(p->jobs[j].counts);
	free(p->jobs);
	free(p->taken);
	coli_profile_free(&p->acc);
	free(p);
}

int engine_profile_open(coli_engine *e, coli_err *err)
{
	const coli_config *c = &e->model->cfg;
	if (e->opts.no_profiles) {
		coli_info("routing profiles off (--no-profiles): no routing counted, no .prof written");
		return 0;
	}
	if (c->n_routed_experts <= 0 || c->num_experts_per_tok <= 0 || !e->model->container)
		return 0; /* a dense model routes nothing */
	engine_profiler *p = calloc(1, sizeof *p);
	if (!p)
		return coli_err_set(err, -ENOMEM, "out of memory for routing profiles");
	p->n_layers = c->num_hidden_layers;
	p->n_experts = c->n_routed_experts;
	p->top_k = c->num_experts_per_tok;
	p->first_moe = c->first_k_dense_replace < p->n_layers ? c->first_k_dense_replace : 0;
	snprintf(p->fingerprint, sizeof p->fingerprint, "%s", e->model->container->fingerprint);
	snprintf(p->kv_dir, sizeof p->kv_dir, "%s", e->kv_dir);
	snprintf(p->prof_dir, sizeof p->prof_dir, "%s/profiles", e->cache_dir);
	p->n_jobs = 3 * (e->n_slots < 16 ? e->n_slots : 16) + 8;
	p->jobs = calloc((size_t)p->n_jobs, sizeof *p->jobs);
	p->taken = calloc((size_t)p->n_jobs, 1);
	const size_t n = (size_t)p->n_layers * (size_t)p->n_experts;
	int rc = p->jobs && p->taken ? coli_profile_init(&p->acc, p->n_layers, p->n_experts, p->top_k, err)
			 : coli_err_set(err, -ENOMEM, "out of memory for routing profiles");
	for (int j = 0; !rc && j < p->n_jobs; j++)
		if (!(p->jobs[j].counts = malloc(sizeof(uint32_t) * n)))
			rc = coli_err_set(err, -ENOMEM, "out of memory for routing profiles");
	if (rc)
		goto fail;
	snprintf(p->acc.fingerprint, sizeof p->acc.fingerprint, "%s", p->fingerprint);
	p->bytes = sizeof *p + (size_t)p->n_jobs * (sizeof *p->jobs + 1 + sizeof(uint32_t) * n) +
		   sizeof *p->acc.counts * n;
	pthread_mutex_init(&p->lock, NULL);
	pthread_cond_init(&p->cond, NULL);
	if (pthread_create(&p->thread, NULL, writer_main, p)) {
		pthread_mutex_destroy(&p->lock);
		pthread_cond_destroy(&p->cond);
		rc = coli_err_set(err, -EAGAIN, "cannot start the routing profile writer");
		goto fail;
	}
	p->started = 1;
	e->prof = p;
	return 0;
fail:
	profiler_free(p);
	return rc;
}

/* Add the request to the READY job of (kind, name), or a FREE one: 0,
 * or -1 when none is left. Under the lock. */
static int add_to_job(engine_profiler *p, int kind, const char *name, const uint32_t *counts, uint64_t tokens)
{
	const size_t n = (size_t)p->n_layers * (size_t)p->n_experts;
	prof_job *jb = NULL, *free_jb = NULL;
	for (int j = 0; j < p->n_jobs && !jb; j++) {
		prof_job *x = &p->jobs[j];
		if (x->state == JOB_READY && x->kind == kind && !strcmp(x->name, name))
			jb = x;
		else if (x->state == JOB_FREE && !free_jb)
			free_jb = x;
	}
	if (!jb) {
		if (!(jb = free_jb))
			return -1;
		jb->state = JOB_READY;
		jb->kind = kind;
		snprintf(jb->name, sizeof jb->name, "%s", name);
		memset(jb->counts, 0, sizeof *jb->counts * n);
		jb->tokens = jb->requests = 0;
	}
	for (size_t i = 0; i < n; i++)
		jb->counts[i] += counts[i];
	jb->tokens += tokens;
	jb->requests++;
	return 0;
}

void engine_profile_submit(coli_engine *e, engine_slot *sl)
{
	engine_profiler *p = e->prof;
	if (!p || !sl->route_counts || !sl->req)
		return;
	const size_t E = (size_t)p->n_experts;
	uint64_t tokens = 0;
	for (size_t x = 0; x < E; x++)
		tokens += sl->route_counts[(size_t)p->first_moe * E + x];
	tokens = p->top_k > 0 ? tokens / (uint64_t)p->top_k : 0;
	if (!tokens)
		return; /* nothing was evaluated */
	const char *session = sl->req->session, *label = sl->req->label;
	pthread_mutex_lock(&p->lock);
	int lost = add_to_job(p, TARGET_ALL, COLI_PROFILE_ALL, sl->route_counts, tokens);
	if (label[0])
		lost |= add_to_job(p, TARGET_LABEL, label, sl->route_counts, tokens);
	if (session && session[0])
		lost |= add_to_job(p, TARGET_SESSION, session, sl->route_counts, tokens);
	p->dropped += lost != 0;
	if (lost)
		atomic_fetch_add_explicit(&p->dropped_total, 1, memory_order_relaxed);
	pthread_cond_signal(&p->cond);
	pthread_mutex_unlock(&p->lock);
}

void engine_profile_close(coli_engine *e)
{
	engine_profiler *p = e->prof;
	if (!p)
		return;
	pthread_mutex_lock(&p->lock);
	p->stop = 1;
	pthread_cond_signal(&p->cond);
	pthread_mutex_unlock(&p->lock);
	pthread_join(p->thread, NULL); /* writes what is ready first */
	pthread_mutex_destroy(&p->lock);
	pthread_cond_destroy(&p->cond);
	profiler_free(p);
	e->prof = NULL;
}

void coli_engine_profile_stats(const coli_engine *e, coli_profile_stats *out)
{
	memset(out, 0, sizeof *out);
	const engine_profiler *p = e->prof;
	if (!p)
		return;
	out->on = 1;
	out->bytes = p->bytes;
	out->jobs = p->n_jobs;
	out->written = atomic_load_explicit(&p->written, memory_order_relaxed);
	out->dropped = atomic_load_explicit(&p->dropped_total, memory_order_relaxed);
}
