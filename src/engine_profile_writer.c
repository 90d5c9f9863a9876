/* engine_profile_writer.c - routing profiles summed into their files in
 * the background (format and paths in engine_profile.h).
 *
 * Memory is bounded at start: JOBS = 2 x slots + 2 snapshots of a
 * request's counts (uint32 per layer and expert), allocated when the
 * engine opens. When a request ends the engine thread takes a free
 * snapshot under the lock (no allocation, no syscall), copies the slot's
 * counts into it and signals this thread. The writer takes every ready
 * snapshot at once and, for each file they name (the session, the label,
 * _all), reads it, adds them and replaces it (coli_file_replace: temp
 * file, fsync, rename, directory fsync), so a burst of short requests
 * costs one write per file, not one per request. When no snapshot is free
 * (the disk is slower than the requests end) the request's profile is
 * dropped and counted; the writer says how many in one warning. Two
 * processes sharing a cache directory may lose each other's sums (read,
 * add, replace is not atomic across processes): profiles are statistics.
 *
 * Threads: the engine thread fills FREE snapshots and marks them READY;
 * this thread owns READY ones until it marks them FREE again. `lock`
 * guards the states, `stop` and `dropped`. */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coli_log.h"
#include "engine_internal.h"
#include "engine_profile.h"
#include "forward_state.h"
#include "kv_cache_dir.h"
#include "kv_file.h"

enum { JOB_FREE = 0, JOB_READY, JOB_BUSY };

typedef struct prof_job {
	int state;
	uint32_t *counts;          /* (n_layers, n_experts) */
	uint64_t tokens;
	char label[COLI_PROFILE_LABEL_MAX];
	char session[KV_NAME_MAX + 1];
} prof_job;

struct engine_profiler {
	int n_layers, n_experts, top_k, first_moe;
	char fingerprint[65];
	char kv_dir[4200], prof_dir[4200];
	prof_job *jobs;
	int n_jobs;
	coli_profile acc;          /* the writer's sum of one file */
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int stop, dropped, started;
};

/* One file: its current content (a fresh profile when absent or
 * unreadable, with a warning for the latter) plus every BUSY job that
 * names it. which: 0 session, 1 label, 2 _all. */
static void write_target(engine_profiler *p, const char *dir, const char *name, int which)
{
	char path[4400];
	snprintf(path, sizeof path, "%s/%s.prof", dir, name);
	coli_err err = { 0 };
	if (kv_mkdirs(dir, &err)) {
		coli_warn("%s; routing profile not saved", err.msg);
		return;
	}
	coli_profile old;
	int rc = coli_profile_read(path, &old, &err);
	coli_profile *a = &p->acc;
	const size_t n = (size_t)p->n_layers * (size_t)p->n_experts;
	memset(a->counts, 0, sizeof *a->counts * n);
	a->tokens = a->requests = 0;
	if (rc == 0) {
		if (old.n_layers == p->n_layers && old.n_experts == p->n_experts &&
		    !strncmp(old.fingerprint, p->fingerprint, 64))
			coli_profile_add(a, &old, &err);
		else
			coli_warn("%s belongs to another model; started anew", path);
	} else if (rc != -ENOENT) {
		coli_warn("%s; started anew", err.msg);
	}
	coli_profile_free(&old);
	for (int j = 0; j < p->n_jobs; j++) {
		const prof_job *jb = &p->jobs[j];
		if (jb->state != JOB_BUSY)
			continue;
		const char *mine = which == 0 ? jb->session : which == 1 ? jb->label : COLI_PROFILE_ALL;
		if (strcmp(mine, name))
			continue;
		for (size_t i = 0; i < n; i++)
			a->counts[i] += jb->counts[i];
		a->tokens += jb->tokens;
		a->requests++;
	}
	snprintf(a->label, sizeof a->label, "%s", which == 0 ? "" : name);
	coli_err_clear(&err);
	if (coli_profile_write(path, a, &err) < 0)
		coli_warn("%s", err.msg);
}

/* Write every BUSY job: each distinct file once. */
static void write_busy(engine_profiler *p)
{
	int need_all = 0;
	for (int j = 0; j < p->n_jobs; j++) {
		prof_job *jb = &p->jobs[j];
		if (jb->state != JOB_BUSY)
			continue;
		need_all = 1;
		int first_s = jb->session[0] != 0, first_l = jb->label[0] != 0;
		for (int k = 0; k < j; k++) {
			const prof_job *o = &p->jobs[k];
			if (o->state != JOB_BUSY)
				continue;
			if (first_s && !strcmp(o->session, jb->session))
				first_s = 0;
			if (first_l && !strcmp(o->label, jb->label))
				first_l = 0;
		}
		if (first_s)
			write_target(p, p->kv_dir, jb->session, 0);
		if (first_l)
			write_target(p, p->prof_dir, jb->label, 1);
	}
	if (need_all)
		write_target(p, p->prof_dir, COLI_PROFILE_ALL, 2);
}

static void *writer_main(void *arg)
{
	engine_profiler *p = arg;
	pthread_mutex_lock(&p->lock);
	for (;;) {
		int ready = 0;
		for (int j = 0; j < p->n_jobs; j++)
			if (p->jobs[j].state == JOB_READY) {
				p->jobs[j].state = JOB_BUSY;
				ready++;
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
		write_busy(p);
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
	coli_profile_free(&p->acc);
	free(p);
}

int engine_profile_open(coli_engine *e, coli_err *err)
{
	const coli_config *c = &e->model->cfg;
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
	p->n_jobs = 2 * e->n_slots + 2;
	p->jobs = calloc((size_t)p->n_jobs, sizeof *p->jobs);
	const size_t n = (size_t)p->n_layers * (size_t)p->n_experts;
	int rc = p->jobs ? coli_profile_init(&p->acc, p->n_layers, p->n_experts, p->top_k, err)
			 : coli_err_set(err, -ENOMEM, "out of memory for routing profiles");
	for (int j = 0; !rc && j < p->n_jobs; j++)
		if (!(p->jobs[j].counts = malloc(sizeof(uint32_t) * n)))
			rc = coli_err_set(err, -ENOMEM, "out of memory for routing profiles");
	if (rc)
		goto fail;
	snprintf(p->acc.fingerprint, sizeof p->acc.fingerprint, "%s", p->fingerprint);
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
	prof_job *jb = NULL;
	pthread_mutex_lock(&p->lock);
	for (int j = 0; j < p->n_jobs && !jb; j++)
		if (p->jobs[j].state == JOB_FREE)
			jb = &p->jobs[j];
	if (!jb)
		p->dropped++;
	pthread_mutex_unlock(&p->lock);
	if (!jb)
		return;
	/* FREE: the writer does not touch it until it is READY */
	memcpy(jb->counts, sl->route_counts, sizeof(uint32_t) * (size_t)p->n_layers * E);
	jb->tokens = tokens;
	snprintf(jb->label, sizeof jb->label, "%s", sl->req->label);
	snprintf(jb->session, sizeof jb->session, "%s", sl->req->session ? sl->req->session : "");
	pthread_mutex_lock(&p->lock);
	jb->state = JOB_READY;
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
