/* engine_session_writer.c - sessions saved off the engine thread.
 *
 * A session is saved at the end of every turn and before its oldest rows
 * are spilled: a record appended to NAME.kv and an fsync, milliseconds to
 * seconds on a busy disk, during which no slot would decode. So the
 * engine thread only describes the save (engine_save: which tokens and
 * where their rows are, in the slot's own KV) and posts it here; this
 * file's thread appends, fsyncs, tells the prefix index, and for the end
 * of a turn ends the request: the client's DONE (the HTTP response's end,
 * `coli generate --session` exiting) comes after the fsync, with a save
 * error as its message, as when the engine saved itself. A turn counts as
 * saved only once it is on disk.
 *
 * No copy is made: while a slot's save is here (engine_session_busy) the
 * engine leaves that slot alone - it is not stepped, admitted into,
 * dropped, spilled or unbound - so its rows, history and session do not
 * change under the writer. A slot waiting to spill waits alone; the other
 * slots step. Everything is allocated at start: one record per slot and
 * a queue of slot indices (each slot posts at most once at a time).
 *
 * Binding a slot to a session (a request naming one) is this thread's
 * too: opening it (its token ids, a torn tail cut and fsynced) or creating
 * it (file, fsync, directory fsync), then reading the rows that go to RAM
 * - for GLM-5.2 ~760 MB for a 4k-token session - straight into the slot's
 * KV (engine_load, engine_session_load_run). The slot is busy meanwhile,
 * so skipped like a saving one; the engine thread finishes the bind once
 * it sees it clear (engine_session_bound: window, spill; no I/O). A
 * stateless request reusing a prompt prefix saved by another session
 * (--share-session-prefixes) has that session's file opened and its rows
 * read here the same way (engine_session_adopt_run). Saves and reads
 * share one queue, in posting order.
 *
 * Threads: `busy` is written by the engine (1, before posting) and by the
 * writer (0, release, after its last access to the save), read with
 * acquire by the engine; the queue is under `lock`. The writer takes the
 * engine's lock only to count an ack (sw_acks) and wake the engine. */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coli_log.h"
#include "engine_internal.h"
#include "kv_prefix_index.h"

typedef struct {
	engine_save save;
	engine_load load;
	int is_load;             /* set before posting, read after the queue */
	_Atomic int busy;
} sw_job;

struct engine_session_writer {
	coli_engine *e;
	sw_job jobs[ENGINE_MAX_SLOTS];
	const float **rows;       /* (n_slots, parts) the jobs' row pointers */
	pthread_t thread;
	pthread_mutex_t lock;     /* guards the queue and stop */
	pthread_cond_t cond;
	int queue[ENGINE_MAX_SLOTS]; /* ring of slot indices */
	int q_head, q_len;
	int stop;
};

int engine_session_save_run(coli_engine *e, engine_save *j, char *msg, size_t cap)
{
	coli_err err = { 0 };
	const char *name = kv_session_name(j->sess);
	int rc = 0;
	msg[0] = 0;
	if (j->trunc >= 0 && (rc = kv_session_truncate_tokens(j->sess, j->trunc, &err))) {
		coli_warn("session %s: %s", name, err.msg);
		snprintf(msg, cap, "%.200s", err.msg);
	}
	if (j->n > 0 && (rc = kv_session_append(j->sess, j->tokens, j->n, j->rows, &err))) {
		coli_warn("session %s: not persisted: %s", name, err.msg);
		if (!msg[0])
			snprintf(msg, cap, "%.200s", err.msg);
	}
	int src = kv_session_sync(j->sess, &err);
	if (src) {
		coli_warn("session %s: %s", name, err.msg);
		if (!msg[0])
			snprintf(msg, cap, "%.200s", err.msg);
		rc = src;
	}
	/* the next request finds this save at once; the refresher, seeing
	 * the same file end, reads nothing */
	if (e->prefix_ix && kv_prefix_index_note(e->prefix_ix, j->sess, e->model->container->fingerprint,
						 j->hist, kv_session_n_tokens(j->sess)) < 0)
		coli_warn("session %s: prefix index: out of memory", name);
	return rc;
}

static void job_run(struct engine_session_writer *w, sw_job *job)
{
	coli_engine *e = w->e;
	char msg[256];
	if (job->is_load) {
		if (job->load.adopt)
			engine_session_adopt_run(e, &job->load);
		else
			engine_session_load_run(e, &job->load);
		atomic_store_explicit(&job->busy, 0, memory_order_release);
		pthread_mutex_lock(&e->lock);
		e->sw_acks++;
		pthread_cond_broadcast(&e->cond);
		pthread_mutex_unlock(&e->lock);
		return;
	}
	engine_session_save_run(e, &job->save, msg, sizeof msg);
	/* the record may be reused once busy is clear: keep the request */
	coli_request *r = job->save.req;
	coli_event ev = job->save.ev;
	job->save.req = NULL;
	atomic_store_explicit(&job->busy, 0, memory_order_release);
	pthread_mutex_lock(&e->lock);
	e->sw_acks++;
	pthread_cond_broadcast(&e->cond);
	pthread_mutex_unlock(&e->lock);
	if (!r)
		return;
	if (ev.kind == COLI_EV_DONE && !ev.message[0] && msg[0])
		snprintf(ev.message, sizeof ev.message, "%s", msg);
	engine_request_finish(r, &ev);
	engine_request_unref(r);
}

static void *writer_main(void *arg)
{
	struct engine_session_writer *w = arg;
	pthread_mutex_lock(&w->lock);
	for (;;) {
		while (!w->q_len && !w->stop)
			pthread_cond_wait(&w->cond, &w->lock);
		if (!w->q_len)
			break; /* stopping with nothing queued */
		int i = w->queue[w->q_head];
		w->q_head = (w->q_head + 1) % ENGINE_MAX_SLOTS;
		w->q_len--;
		pthread_mutex_unlock(&w->lock);
		job_run(w, &w->jobs[i]);
		pthread_mutex_lock(&w->lock);
	}
	pthread_mutex_unlock(&w->lock);
	return NULL;
}

int engine_session_writer_start(coli_engine *e, coli_err *err)
{
	const coli_config *c = &e->model->cfg;
	const int parts = c->num_hidden_layers + coli_config_index_layers(c);
	struct engine_session_writer *w = calloc(1, sizeof *w);
	if (!w || !(w->rows = calloc((size_t)e->n_slots * (size_t)parts, sizeof *w->rows))) {
		free(w);
		return coli_err_set(err, -ENOMEM, "out of memory for the session writer");
	}
	w->e = e;
	for (int i = 0; i < ENGINE_MAX_SLOTS; i++) {
		atomic_init(&w->jobs[i].busy, 0);
		if (i < e->n_slots)
			w->jobs[i].save.rows = w->rows + (size_t)i * parts;
	}
	pthread_mutex_init(&w->lock, NULL);
	pthread_cond_init(&w->cond, NULL);
	int rc = pthread_create(&w->thread, NULL, writer_main, w);
	if (rc) {
		pthread_mutex_destroy(&w->lock);
		pthread_cond_destroy(&w->cond);
		free(w->rows);
		free(w);
		return coli_err_set(err, -rc, "cannot start the session writer thread");
	}
	e->sw = w;
	return 0;
}

void engine_session_writer_stop(coli_engine *e)
{
	struct engine_session_writer *w = e->sw;
	if (!w)
		return;
	pthread_mutex_lock(&w->lock);
	w->stop = 1;
	pthread_cond_broadcast(&w->cond);
	pthread_mutex_unlock(&w->lock);
	pthread_join(w->thread, NULL); /* writes what is queued first */
	pthread_mutex_destroy(&w->lock);
	pthread_cond_destroy(&w->cond);
	free(w->rows);
	free(w);
	e->sw = NULL;
}

int engine_session_busy(const coli_engine *e, const engine_slot *sl)
{
	return e->sw && atomic_load_explicit(&e->sw->jobs[sl->index].busy, memory_order_acquire);
}

engine_save *engine_session_writer_job(coli_engine *e, const engine_slot *sl)
{
	return &e->sw->jobs[sl->index].save;
}

engine_load *engine_session_writer_load(coli_engine *e, const engine_slot *sl)
{
	return &e->sw->jobs[sl->index].load;
}

static void post(coli_engine *e, const engine_slot *sl, int is_load)
{
	struct engine_session_writer *w = e->sw;
	w->jobs[sl->index].is_load = is_load;
	atomic_store_explicit(&w->jobs[sl->index].busy, 1, memory_order_relaxed);
	pthread_mutex_lock(&w->lock);
	w->queue[(w->q_head + w->q_len) % ENGINE_MAX_SLOTS] = sl->index;
	w->q_len++;
	pthread_cond_signal(&w->cond);
	pthread_mutex_unlock(&w->lock);
}

void engine_session_writer_post(coli_engine *e, const engine_slot *sl)
{
	post(e, sl, 0);
}

void engine_session_writer_post_load(coli_engine *e, const engine_slot *sl)
{
	post(e, sl, 1);
}
