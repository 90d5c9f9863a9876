/* engine.c - the engine thread: admission, the queue, and the step loop.
 *
 * One thread owns the model. Requests wait in a bounded queue and are
 * served in slots (--parallel): each slot keeps one sequence's KV cache and
 * token history. Every iteration the engine admits queued requests into
 * idle slots, evaluates one prefill chunk (so a long prompt delays the
 * other slots by one chunk at most), then runs one decode step for all
 * decoding slots together: their routed experts are unioned, so each
 * expert is read once per step however many requests use it.
 *
 * A request whose prompt extends a slot's history (a chat client
 * re-sending its conversation) only prefills the new suffix; the reused
 * count is reported as cached tokens. */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "kv_cache_dir.h"
#include "coli_log.h"
#include "engine_draft.h"
#include "engine_internal.h"
#include "engine_model.h"
#include "engine_profile.h"
#include "expert_store_budget.h"
#include "kv_store.h"
#include "model_dir.h"

void coli_engine_opts_default(coli_engine_opts *o)
{
	memset(o, 0, sizeof *o);
	expert_store_opts_default(&o->store);
}

void coli_gen_params_default(coli_gen_params *p)
{
	memset(p, 0, sizeof *p);
	p->max_tokens = 256;
	p->temperature = 0.0f;
	p->top_p = 1.0f;
}

static int common_prefix(const engine_slot *sl, const coli_request *r)
{
	int k = 0;
	while (k < sl->n_hist && k < r->n_prompt && sl->hist[k] == r->prompt[k])
		k++;
	return k;
}

/* The idle slot for a request: the one bound to its session, else the one
 * sharing the longest prefix with its prompt, else the least recently
 * used. NULL when the session is busy in another slot. A slot whose save
 * the session writer has is not idle yet. */
static engine_slot *pick_slot(coli_engine *e, const coli_request *r)
{
	engine_slot *best = NULL;
	int best_k = -1;
	for (int i = 0; i < e->n_slots; i++) {
		engine_slot *sl = &e->slots[i];
		/* a slot the session writer binds to it counts as bound */
		int bound = r->session && ((sl->sess && !strcmp(kv_session_name(sl->sess), r->session)) ||
					   (sl->resuming == SLOT_RESUME_SESSION && !strcmp(sl->resume, r->session)));
		if (bound)
			return sl->phase == SLOT_IDLE && !engine_session_busy(e, sl) ? sl : NULL;
	}
	for (int i = 0; i < e->n_slots; i++) {
		engine_slot *sl = &e->slots[i];
		if (sl->phase != SLOT_IDLE || engine_session_busy(e, sl))
			continue;
		int k = r->session || (sl->hist_private && !e->opts.share_session_prefixes)
				? 0 : common_prefix(sl, r);
		if (k > best_k || (k == best_k && sl->last_used < best->last_used)) {
			best = sl;
			best_k = k;
		}
	}
	return best;
}

/* Slots the session writer holds: their KV is freed or reused once it is
 * done, so a request that does not fit yet may wait for them. */
static int any_busy(const coli_engine *e)
{
	for (int i = 0; i < e->n_slots; i++)
		if (engine_session_busy(e, &e->slots[i]))
			return 1;
	return 0;
}

/* A slot can step: serving, not waiting for its session's writer, and
 * not paused by its reader (engine_request.h). */
static int any_runnable(coli_engine *e)
{
	for (int i = 0; i < e->n_slots; i++) {
		engine_slot *sl = &e->slots[i];
		if (sl->phase != SLOT_IDLE && !engine_session_busy(e, sl) &&
		    engine_request_room(sl->req, e, ENGINE_STEP_EVENTS))
			return 1;
	}
	return 0;
}

void engine_wake_for_reader(coli_engine *e)
{
	pthread_mutex_lock(&e->lock);
	e->reader_wakes++;
	pthread_cond_signal(&e->cond);
	pthread_mutex_unlock(&e->lock);
}

/* Move admissible queued requests into idle slots (engine thread), in
 * queue order while their KV fits the budget (engine_kv.c): the first
 * that does not fit waits for running requests to finish, and nothing
 * behind it overtakes it. A request that could never fit fails. Returns
 * the number of requests taken from the queue. */
static int admit(coli_engine *e)
{
	for (int taken = 0;; taken++) {
		coli_request *r = NULL;
		engine_slot *sl = NULL;
		int at = 0;
		pthread_mutex_lock(&e->lock);
		for (int i = 0; i < e->q_len && !r; i++) {
			at = i;
			engine_slot *cand = pick_slot(e, e->queue[(e->q_head + i) % e->q_cap]);
			if (!cand)
				continue;
			r = e->queue[(e->q_head + i) % e->q_cap];
			sl = cand;
		}
		int active = e->active;
		pthread_mutex_unlock(&e->lock);
		if (!r) {
			atomic_store_explicit(&e->st_waiting_kv, 0, memory_order_relaxed);
			return taken;
		}
		/* frees idle slots' KV (engine thread, outside the lock) */
		const int rows = engine_kv_need_rows(e, r);
		const int fits = engine_kv_fit(e, sl, rows);
		atomic_store_explicit(&e->st_waiting_kv, !fits, memory_order_relaxed);
		if (!fits && (active > 0 || any_busy(e)))
			return taken;
		/* the slot gives up the session it must (and another slot this
		 * one): a save still to write is the session writer's, and the
		 * request waits for it, woken by its ack */
		if (fits && engine_session_release(e, sl, r->session))
			return taken;
		/* only the engine thread takes requests out: index `at` holds */
		pthread_mutex_lock(&e->lock);
		for (int k = at; k > 0; k--)
			e->queue[(e->q_head + k) % e->q_cap] = e->queue[(e->q_head + k - 1) % e->q_cap];
		e->q_head = (e->q_head + 1) % e->q_cap;
		e->q_len--;
		e->active++;
		pthread_mutex_unlock(&e->lock);
		if (fits) {
			/* the slot takes the request, then the decode strategy
			 * its per-request state */
			coli_err err = { 0 };
			if (!engine_slot_start(e, sl, r) && !sl->resuming && engine_draft_slot_start(e, sl, &err))
				engine_slot_finish(e, sl, COLI_EV_ERROR, COLI_FINISH_ERROR, err.code, err.msg);
			continue;
		}
		char msg[256];
		snprintf(msg, sizeof msg, "the request needs %lld MiB of KV (%d rows); the KV budget is %lld MiB",
			 (long long)rows * e->kv_row_bytes >> 20, rows, e->kv_budget >> 20);
		sl->req = r;
		engine_slot_finish(e, sl, COLI_EV_ERROR, COLI_FINISH_ERROR, -E2BIG, msg);
	}
}

static void *engine_main(void *arg)
{
	coli_engine *e = arg;
	int stalled = 0, q_seen = 0, acks_seen = 0, stop_seen = 0, wakes_seen = 0;
	for (;;) {
		pthread_mutex_lock(&e->lock);
		/* the last round moved nothing: every serving slot waits for the
		 * session writer or for its reader, and no queued request could
		 * be admitted; sleep until the writer, a reader, a submit or stop
		 * changes that */
		while (stalled && e->q_len == q_seen && e->sw_acks == acks_seen && e->stop == stop_seen &&
		       e->reader_wakes == wakes_seen)
			pthread_cond_wait(&e->cond, &e->lock);
		q_seen = e->q_len;
		acks_seen = e->sw_acks;
		stop_seen = e->stop;
		wakes_seen = e->reader_wakes;
		while (!e->stop && e->q_len == 0 && e->active == 0) {
			/* idle with expert reads still in flight (the warm start,
			 * a last prefetch): take their completions as they land,
			 * so the store's tiers say what is in RAM */
			if (expert_store_poll(e->model->store) > 0) {
				struct timespec ts;
				clock_gettime(CLOCK_REALTIME, &ts);
				ts.tv_nsec += 20 * 1000000L;
				if (ts.tv_nsec >= 1000000000L) {
					ts.tv_sec++;
					ts.tv_nsec -= 1000000000L;
				}
				pthread_cond_timedwait(&e->cond, &e->lock, &ts);
			} else {
				pthread_cond_wait(&e->cond, &e->lock);
			}
		}
		int stopping = e->stop;
		pthread_mutex_unlock(&e->lock);
		if (stopping) {
			/* refuse what is queued (each ended outside the lock: a
			 * request's lock is never taken under the engine's); let
			 * the slots finish their work */
			for (;;) {
				pthread_mutex_lock(&e->lock);
				if (!e->q_len)
					break;
				coli_request *r = e->queue[e->q_head];
				e->q_head = (e->q_head + 1) % e->q_cap;
				e->q_len--;
				pthread_mutex_unlock(&e->lock);
				coli_event ev;
				memset(&ev, 0, sizeof ev);
				ev.kind = COLI_EV_ERROR;
				ev.finish = COLI_FINISH_ERROR;
				ev.error_code = -ESHUTDOWN;
				snprintf(ev.message, sizeof ev.message, "the engine is shutting down");
				engine_request_finish(r, &ev);
				engine_request_unref(r);
			}
			int idle = e->active == 0;
			pthread_mutex_unlock(&e->lock);
			if (idle)
				break;
			stalled = !any_runnable(e);
		} else {
			stalled = !admit(e) && !any_runnable(e);
		}
		if (e->draft)
			engine_step_draft(e);
		else
			engine_step(e);
	}
	return NULL;
}

/* The index of saved sessions for --share-session-prefixes: read once
 * now, then kept current by its own thread (kv_prefix_index.h), so that
 * admission on the engine thread is a lookup in RAM. */
static int engine_prefix_index_open(coli_engine *e, coli_err *err)
{
	int rc = kv_prefix_index_new(e->kv_dir, &e->prefix_ix, err);
	if (rc)
		return rc;
#ifdef COLI_FAULT_INJECTION
	/* tests: no refresher, so the index knows only the first pass and
	 * the engine's own saves (a file changed behind its back stays
	 * stale until used) */
	const char *f = getenv("COLI_FAULT_KV_NO_REFRESH");
	if (f && *f) {
		int m;
		char name[KV_NAME_MAX + 1];
		return kv_prefix_index_find(e->prefix_ix, NULL, NULL, 0, name, sizeof name, &m, err);
	}
#endif
	return kv_prefix_index_watch(e->prefix_ix, err);
}

/* Context, KV rows in RAM and slots come from coli_kv_plan
 * (expert_store_budget.h), which the automatic expert budget also uses. */
_Static_assert(ENGINE_DEFAULT_CTX == 4096 && ENGINE_MAX_SLOTS == COLI_KV_PLAN_MAX_SLOTS, "coli_kv_plan's defaults");
int coli_engine_new(const coli_engine_opts *o, coli_engine **out, coli_err *err)
{
	int rc, made_cache = 0, made_heat = 0;
	coli_engine *e = calloc(1, sizeof *e);
	if (!e)
		return coli_err_set(err, -ENOMEM, "out of memory");
	coli_engine_opts_default(&e->opts);
	if (o)
		e->opts = *o;
	if ((rc = coli_model_dir_resolve(e->opts.model_dir, e->model_dir, sizeof e->model_dir, err)))
		goto fail;
	e->opts.model_dir = e->model_dir;
	const char *slash = strrchr(e->model_dir, '/');
	snprintf(e->model_name, sizeof e->model_name, "%.255s", slash && slash[1] ? slash + 1 : e->model_dir);
	/* the KV never takes more than its share of the memory the process
	 * may use now (engine_kv_budget), and the automatic expert budget
	 * subtracts no more than that */
	const int64_t room = store_budget_room_now();
	const int prefill = e->opts.prefill_batch > 0 ? e->opts.prefill_batch : ENGINE_PREFILL_BATCH;
	coli_model_plan plan = {
		/* the MTP module drafts unless drafting is off (a model
		 * without one simply loads none) */
		.mtp = e->opts.draft != COLI_DRAFT_OFF,
		.ctx = e->opts.ctx,
		.kv_ram = e->opts.kv_ram,
		.parallel = e->opts.parallel,
		.kv_cap = engine_kv_cap(e->opts.parallel, room),
		/* the step state below: a row per slot and a prefill chunk
		 * (the store's measurement takes a row per slot as the floor) */
		.state_batch = prefill + (e->opts.parallel > 0 ? e->opts.parallel : e->opts.parallel < 0
					  ? COLI_MAX_PARALLEL : 4),
	};
	if (e->opts.cache_dir) {
		snprintf(e->cache_dir, sizeof e->cache_dir, "%s", e->opts.cache_dir);
	} else if ((rc = kv_cache_dir(e->model_dir, e->cache_dir, sizeof e->cache_dir, err))) {
		goto fail;
	}
	snprintf(e->kv_dir, sizeof e->kv_dir, "%s/kv", e->cache_dir);
	/* a failed open must leave nothing behind: remember what is ours */
	struct stat st;
	made_cache = stat(e->cache_dir, &st) != 0;
	if (e->opts.no_heat) {
		coli_info("routing heat off (--no-heat): no warm start, nothing saved");
	} else if (coli_engine_heat_dir(e->cache_dir, e->heat_dir, sizeof e->heat_dir, &made_heat, err)) {
		/* routing heat is an optimisation: run without persisting it */
		coli_warn("%s; routing heat will not be saved", err->msg);
		coli_err_clear(err);
	} else {
		plan.heat_dir = e->heat_dir;
	}
	coli_model_opts mo;
	coli_engine_model_opts(&e->opts, &plan, &mo);
	if ((rc = coli_model_open(e->model_dir, &mo, &e->model, err)))
		goto fail;
	const coli_config *c = &e->model->cfg;
	if ((rc = coli_tokenizer_load_dir(e->model_dir, &e->tok, err)) ||
	    (rc = coli_tokenizer_check_vocab(e->tok, c->vocab_size, err)))
		goto fail;
	/* the same plan the expert store's automatic budget subtracted */
	coli_kv_plan(c, e->opts.ctx, e->opts.kv_ram, e->opts.parallel, &e->ctx, &e->kv_ram, &e->n_slots);
	e->prefill_batch = e->opts.prefill_batch > 0 ? e->opts.prefill_batch : ENGINE_PREFILL_BATCH;
	if (e->kv_ram < e->ctx && e->prefill_batch > e->kv_ram / 2)
		e->prefill_batch = e->kv_ram / 2;   /* a chunk must fit beside what stays in RAM */
	if (e->kv_ram < 32 && e->kv_ram < e->ctx) {
		rc = coli_err_set(err, -EINVAL, "--kv-ram must be at least 32 tokens");
		goto fail;
	}
	e->kv_row_bytes = (long long)coli_seq_row_bytes(e->model);
	engine_kv_budget(e, room);
	e->step_rows = e->n_slots + e->prefill_batch;
	int batch = e->step_rows;
	if (e->model->n_mtp && batch < engine_draft_max_rows(e->n_slots))
		batch = engine_draft_max_rows(e->n_slots);
	if ((rc = coli_state_new(e->model, e->ctx, batch, &e->state, err)))
		goto fail;
	if ((rc = engine_draft_new(e, &e->draft, err)))
		goto fail;
	for (int i = 0; i < ENGINE_MAX_SLOTS; i++) {
		e->slots[i].index = i;
		e->slots[i].eng = e;
	}
	/* spilled rows are read back through a ring of their own (the
	 * expert store's serves its reads); without io_uring, preads */
	if (e->kv_ram < e->ctx) {
		coli_err rerr = { 0 };
		if (kv_reader_new(ENGINE_SPILL_DEPTH, &e->spill_reader, &rerr))
			coli_warn("%s; spilled KV rows are read back with pread", rerr.msg);
	}
	/* the first slot is allocated now so an out-of-memory context is
	 * reported at start, not at the first request */
	if ((rc = engine_kv_reserve(e, &e->slots[0], e->kv_ram < ENGINE_KV_ROUND ? e->kv_ram : ENGINE_KV_ROUND, err)))
		goto fail;
	e->batch_logits = malloc(sizeof(float) * (size_t)c->vocab_size * (size_t)e->n_slots);
	e->step_tokens = malloc(sizeof(int) * (size_t)e->step_rows);
	e->q_cap = e->opts.max_queue > 0 ? e->opts.max_queue : ENGINE_DEFAULT_QUEUE;
	e->queue = calloc((size_t)e->q_cap, sizeof *e->queue);
	if (!e->batch_logits || !e->queue || !e->step_tokens) {
		rc = coli_err_set(err, -ENOMEM, "out of memory");
		goto fail;
	}
	coli_info("engine: %d slot(s) of %d tokens (%d KV rows in RAM each), KV budget %lld MiB, %d rows a step "
		  "(step state %zu MiB)",
		  e->n_slots, e->ctx, e->kv_ram, e->kv_budget >> 20, e->step_rows, coli_state_scratch_bytes(e->state) >> 20);
	if (e->opts.share_session_prefixes && (rc = engine_prefix_index_open(e, err)))
		goto fail;
	if ((rc = engine_profile_open(e, err)) || (rc = engine_session_writer_start(e, err)))
		goto fail;
	pthread_mutex_init(&e->lock, NULL);
	pthread_cond_init(&e->cond, NULL);
	pthread_mutex_init(&e->gvocab_lock, NULL);
	if (pthread_create(&e->thread, NULL, engine_main, e)) {
		pthread_mutex_destroy(&e->lock);
		pthread_cond_destroy(&e->cond);
		pthread_mutex_destroy(&e->gvocab_lock);
		rc = coli_err_set(err, -EAGAIN, "cannot start the engine thread");
		goto fail;
	}
	*out = e;
	return 0;
fail:
	engine_session_writer_stop(e);
	engine_profile_close(e);
	for (int i = 0; i < ENGINE_MAX_SLOTS; i++)
		engine_slot_free(&e->slots[i]);
	kv_prefix_index_free(e->prefix_ix);
	free(e->batch_logits);
	free(e->step_tokens);
	free(e->queue);
	engine_draft_free(e->draft);
	kv_reader_free(e->spill_reader);
	coli_state_free(e->state);
	coli_tokenizer_free(e->tok);
	coli_model_free(e->model);
	/* only directories this call created, and only while empty */
	if (made_heat)
		rmdir(e->heat_dir);
	if (made_cache)
		rmdir(e->cache_dir);
	free(e);
	return rc;
}

void coli_engine_free(coli_engine *e)
{
	if (!e)
		return;
	pthread_mutex_lock(&e->lock);
	e->stop = 1;
	pthread_cond_broadcast(&e->cond);
	pthread_mutex_unlock(&e->lock);
	pthread_join(e->thread, NULL);
	/* the saves still queued are written, and their requests ended */
	engine_session_writer_stop(e);
	for (int i = 0; i < e->n_slots; i++) {
		(void)engine_session_unbind(e, &e->slots[i]); /* no writer: saves here */
		engine_slot_free(&e->slots[i]);
	}
	engine_profile_close(e);
	pthread_mutex_destroy(&e->lock);
	pthread_cond_destroy(&e->cond);
	pthread_mutex_destroy(&e->gvocab_lock);
	kv_prefix_index_free(e->prefix_ix);
	free(e->batch_logits);
	free(e->step_tokens);
	grammar_vocab_free(e->gvocab);
	free(e->queue);
	engine_draft_free(e->draft);
	kv_reader_free(e->spill_reader);
	coli_state_free(e->state);
	coli_tokenizer_free(e->tok);
	coli_model_free(e->model);
	free(e);
}

const coli_config *coli_engine_config(const coli_engine *e) { return &e->model->cfg; }
const coli_tokenizer *coli_engine_tokenizer(const coli_engine *e) { return e->tok; }
const char *coli_engine_model_name(const coli_engine *e) { return e->model_name; }
int coli_engine_ctx(const coli_engine *e) { return e->ctx; }
int coli_engine_slots(const coli_engine *e) { return e->n_slots; }
const char *coli_engine_cache_dir(const coli_engine *e) { return e->cache_dir; }

const expert_stats *coli_engine_expert_stats(const coli_engine *e)
{
	return e->model->store ? expert_store_stats(e->model->store) : NULL;
}

void coli_engine_step_stats(const coli_engine *e, coli_step_stats *out)
{
	coli_engine *m = (coli_engine *)e;
	memset(out, 0, sizeof *out);
	out->steps = atomic_load_explicit(&m->st_steps, memory_order_relaxed);
	out->rows = atomic_load_explicit(&m->st_rows, memory_order_relaxed);
	out->prompt_rows = atomic_load_explicit(&m->st_prompt_rows, memory_order_relaxed);
	out->last_rows = atomic_load_explicit(&m->st_last_rows, memory_order_relaxed);
	out->waiting_kv = atomic_load_explicit(&m->st_waiting_kv, memory_order_relaxed);
	out->kv_used = atomic_load_explicit(&m->kv_used, memory_order_relaxed);
	out->kv_budget = m->kv_budget;
	out->spill_bytes = atomic_load_explicit(&m->st_spill_bytes, memory_order_relaxed);
	out->spill_full_bytes = atomic_load_explicit(&m->st_spill_full, memory_order_relaxed);
	pthread_mutex_lock(&m->lock);
	out->active = m->active;
	out->queued = m->q_len;
	pthread_mutex_unlock(&m->lock);
}

int coli_engine_queue_len(const coli_engine *e)
{
	coli_engine *m = (coli_engine *)e;
	pthread_mutex_lock(&m->lock);
	int n = m->q_len + m->active;
	pthread_mutex_unlock(&m->lock);
	return n;
}

int coli_engine_submit(coli_engine *e, const int *prompt, int n_prompt, const coli_gen_params *p,
		       coli_request **out, coli_err *err)
{
	coli_gen_params defaults;
	if (!p) {
		coli_gen_params_default(&defaults);
		p = &defaults;
	}
	if (n_prompt < 1)
		return coli_err_set(err, -EINVAL, "the prompt is empty");
	if (n_prompt + 1 > e->ctx)
		return coli_err_set(err, -E2BIG, "the prompt has %d tokens; the context holds %d", n_prompt,
				    e->ctx);
	const int V = e->model->cfg.vocab_size;
	for (int i = 0; i < n_prompt; i++)
		if (prompt[i] < 0 || prompt[i] >= V)
			return coli_err_set(err, -EINVAL, "token id %d is outside the vocabulary (0..%d)",
					    prompt[i], V - 1);
	for (int i = 0; i < p->n_bias; i++)
		if (p->bias_ids[i] < 0 || p->bias_ids[i] >= V)
			return coli_err_set(err, -ERANGE, "logit_bias: token id %d is outside the vocabulary "
					    "(0..%d)", p->bias_ids[i], V - 1);
	if (p->draft > 0 && !e->draft)
		return coli_err_set(err, -EINVAL, "draft %d: %s", p->draft,
				    e->model->cfg.num_nextn_predict_layers > 0
					    ? "drafting is off in this engine (--draft off)"
					    : "the model has no MTP module to draft with");
	if (p->label && !coli_profile_label_valid(p->label))
		return coli_err_set(err, -EINVAL, "label '%.80s': expected 1 to 63 of A-Z a-z 0-9 . _ -, "
				    "not starting with '.' or '_'", p->label);
	if (p->draft > COLI_DRAFT_MAX || p->draft < COLI_DRAFT_OFF)
		return coli_err_set(err, -EINVAL, "draft: expected auto, off or 1..%d", COLI_DRAFT_MAX);
	/* structured output is compiled here, on the caller's thread */
	coli_grammar *g;
	int rc = engine_grammar_prepare(e, p, &g, err);
	if (rc)
		return rc;
	coli_request *r;
	if ((rc = engine_request_new(prompt, n_prompt, p, g, &r, err)))
		return rc;
	pthread_mutex_lock(&e->lock);
	if (e->stop || e->q_len == e->q_cap) {
		int stopping = e->stop;
		pthread_mutex_unlock(&e->lock);
		engine_request_unref(r);
		engine_request_unref(r);
		return stopping ? coli_err_set(err, -ESHUTDOWN, "the engine is shutting down")
				: coli_err_set(err, -EBUSY, "the request queue is full (%d waiting)", e->q_cap);
	}
	e->queue[(e->q_head + e->q_len) % e->q_cap] = r;
	e->q_len++;
	pthread_cond_signal(&e->cond);
	pthread_mutex_unlock(&e->lock);
	*out = r;
	return 0;
}
