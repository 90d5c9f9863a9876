/* engine.c - the engine thread: admission, the queue, and generation.
 *
 * One thread owns the model and a single sequence state. Requests are served
 * in order. The state keeps the previous request's tokens, so a request
 * whose prompt extends them (a chat client re-sending its history) only
 * prefills the new suffix; the reused count is reported as cached tokens. */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cache_dir.h"
#include "coli_log.h"
#include "engine_internal.h"
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

static int is_eos(const coli_engine *e, int tok)
{
	const coli_config *c = &e->model->cfg;
	for (int i = 0; i < c->n_eos_token_ids; i++)
		if (c->eos_token_ids[i] == tok)
			return 1;
	return e->tok && tok == coli_tokenizer_eos_id(e->tok);
}

static void finish(coli_request *r, int kind, int finish_reason, int prompt, int cached, int completion,
		   double ttft, double tps, int code, const char *msg)
{
	coli_event ev;
	memset(&ev, 0, sizeof ev);
	ev.kind = kind;
	ev.finish = finish_reason;
	ev.prompt_tokens = prompt;
	ev.cached_tokens = cached;
	ev.completion_tokens = completion;
	ev.ttft_ms = ttft;
	ev.decode_tps = tps;
	ev.error_code = code;
	if (msg)
		snprintf(ev.message, sizeof ev.message, "%s", msg);
	engine_request_finish(r, &ev);
}

/* Longest common prefix of the state's tokens and the prompt; at least one
 * prompt token is always evaluated so there are logits to sample from. */
static int reuse_prefix(coli_engine *e, const int *prompt, int n)
{
	int k = 0;
	while (k < e->n_hist && k < n && e->hist[k] == prompt[k])
		k++;
	if (k == n)
		k = n - 1;
	coli_state_rewind(e->state, k);
	e->n_hist = k;
	return k;
}

int engine_eval(coli_engine *e, const int *toks, int n, coli_err *err)
{
	int rc = coli_forward(e->model, e->state, toks, n, e->logits, 0, err);
	if (rc) {
		/* the state may hold a partial chunk: forget it entirely */
		coli_state_rewind(e->state, 0);
		e->n_hist = 0;
		return rc;
	}
	memcpy(e->hist + e->n_hist, toks, sizeof(int) * (size_t)n);
	e->n_hist += n;
	return 0;
}

static void serve(coli_engine *e, coli_request *r)
{
	coli_err err = { 0 };
	const coli_gen_params *p = &r->params;
	const int *prompt = r->prompt;
	int n_prompt = r->n_prompt;
	if (r->session) {
		/* a session request continues the session: its prompt follows
		 * the stored history */
		if (engine_session_bind(e, r->session, &err)) {
			finish(r, COLI_EV_ERROR, COLI_FINISH_ERROR, r->n_prompt, 0, 0, 0, 0, err.code, err.msg);
			return;
		}
		if (e->n_hist + r->n_prompt + 1 > e->ctx) {
			finish(r, COLI_EV_ERROR, COLI_FINISH_ERROR, r->n_prompt, 0, 0, 0, 0, -E2BIG,
			       "the session and the prompt exceed the context length");
			return;
		}
		memcpy(e->full, e->hist, sizeof(int) * (size_t)e->n_hist);
		memcpy(e->full + e->n_hist, r->prompt, sizeof(int) * (size_t)r->n_prompt);
		prompt = e->full;
		n_prompt = e->n_hist + r->n_prompt;
	} else {
		engine_session_unbind(e);
		engine_session_adopt_prefix(e, prompt, n_prompt);
	}
	int cached = reuse_prefix(e, prompt, n_prompt);
	/* prefill in slices so cancellation is noticed within one step */
	for (int at = cached; at < n_prompt;) {
		if (atomic_load(&r->cancelled)) {
			finish(r, COLI_EV_DONE, COLI_FINISH_CANCELLED, n_prompt, cached, 0, 0, 0, 0, NULL);
			return;
		}
		int n = n_prompt - at < ENGINE_PREFILL_BATCH ? n_prompt - at : ENGINE_PREFILL_BATCH;
		if (engine_eval(e, prompt + at, n, &err)) {
			finish(r, COLI_EV_ERROR, COLI_FINISH_ERROR, n_prompt, cached, 0, 0, 0, err.code, err.msg);
			return;
		}
		at += n;
	}
	coli_sampler_reset(&e->sampler, p->temperature, p->top_p, p->seed);
	coli_detok det;
	coli_detok_init(&det);
	stop_match sm;
	stop_match_init(&sm, p->stop);
	char piece[1100], out[2200];
	int produced = 0, reason = COLI_FINISH_LENGTH, last_tok = -1;
	double ttft = 0.0, t_first = 0.0;
	const int limit = p->max_tokens > 0 ? p->max_tokens : e->ctx;
	while (produced < limit) {
		int tok = coli_sampler_sample(&e->sampler, e->logits);
		last_tok = tok;
		if (produced == 0) {
			t_first = engine_now();
			ttft = (t_first - r->submit_time) * 1000.0;
		}
		produced++;
		if (!p->ignore_eos && is_eos(e, tok)) {
			reason = COLI_FINISH_STOP;
			break;
		}
		size_t n = e->tok ? coli_detok_push(e->tok, &det, tok, 1, piece, sizeof piece) : 0;
		int hit = 0;
		size_t m = stop_match_push(&sm, piece, n, out, sizeof out, &hit);
		engine_request_push_text(r, tok, out, m);
		if (hit) {
			reason = COLI_FINISH_STOP;
			break;
		}
		if (atomic_load(&r->cancelled)) {
			reason = COLI_FINISH_CANCELLED;
			break;
		}
		if (produced == limit)
			break;
		if (e->n_hist + 1 > e->ctx) {
			reason = COLI_FINISH_LENGTH;
			break;
		}
		if (engine_eval(e, &tok, 1, &err)) {
			finish(r, COLI_EV_ERROR, COLI_FINISH_ERROR, n_prompt, cached, produced, ttft, 0,
			       err.code, err.msg);
			return;
		}
	}
	if (reason != COLI_FINISH_STOP || !sm.n_held) {
		size_t n = e->tok ? coli_detok_flush(&det, piece, sizeof piece) : 0;
		int hit = 0;
		size_t m = stop_match_push(&sm, piece, n, out, sizeof out, &hit);
		if (!hit)
			m += stop_match_flush(&sm, out + m, sizeof out - m);
		if (m)
			engine_request_push_text(r, -1, out, m);
	}
	if (e->sess) {
		/* the last sampled token has no KV yet: evaluate it so the stored
		 * history is exactly what an uninterrupted process would hold */
		if (produced > 0 && reason != COLI_FINISH_CANCELLED && e->n_hist + 1 <= e->ctx &&
		    engine_eval(e, &last_tok, 1, &err))
			coli_warn("session %s: %s", kv_session_name(e->sess), err.msg);
		engine_session_save(e);
	}
	double dt = engine_now() - t_first;
	double tps = produced > 1 && dt > 0 ? (produced - 1) / dt : 0.0;
	finish(r, COLI_EV_DONE, reason, n_prompt, cached, produced, ttft, tps, 0, NULL);
}

static void *engine_main(void *arg)
{
	coli_engine *e = arg;
	for (;;) {
		pthread_mutex_lock(&e->lock);
		while (!e->stop && e->q_len == 0)
			pthread_cond_wait(&e->cond, &e->lock);
		if (e->q_len == 0) {
			pthread_mutex_unlock(&e->lock);
			break;
		}
		coli_request *r = e->queue[e->q_head];
		e->q_head = (e->q_head + 1) % e->q_cap;
		e->q_len--;
		atomic_store(&e->busy, 1);
		pthread_mutex_unlock(&e->lock);
		if (e->stop)
			finish(r, COLI_EV_ERROR, COLI_FINISH_ERROR, r->n_prompt, 0, 0, 0, 0, -ESHUTDOWN,
			       "the engine is shutting down");
		else
			serve(e, r);
		atomic_store(&e->busy, 0);
		engine_request_unref(r);
	}
	return NULL;
}

int coli_engine_new(const coli_engine_opts *o, coli_engine **out, coli_err *err)
{
	int rc;
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
	coli_model_opts mo;
	coli_model_opts_default(&mo);
	mo.threads = e->opts.threads;
	mo.store = e->opts.store;
	if (e->opts.cache_dir) {
		snprintf(e->cache_dir, sizeof e->cache_dir, "%s", e->opts.cache_dir);
	} else if ((rc = coli_cache_dir(e->model_dir, e->cache_dir, sizeof e->cache_dir, err))) {
		goto fail;
	}
	snprintf(e->kv_dir, sizeof e->kv_dir, "%s/kv", e->cache_dir);
	snprintf(e->heat_dir, sizeof e->heat_dir, "%s/hot-experts", e->cache_dir);
	mo.store.heat_dir = e->heat_dir;
	if (coli_mkdirs(e->heat_dir, err)) {
		/* routing heat is an optimisation: run without persisting it */
		coli_warn("%s; routing heat will not be saved", err->msg);
		coli_err_clear(err);
		mo.store.heat_dir = NULL;
	}
	if ((rc = coli_model_open(e->model_dir, &mo, &e->model, err)))
		goto fail;
	if ((rc = coli_tokenizer_load_dir(e->model_dir, &e->tok, err)))
		goto fail;
	const coli_config *c = &e->model->cfg;
	e->ctx = e->opts.ctx > 0 ? e->opts.ctx : ENGINE_DEFAULT_CTX;
	if (c->max_position_embeddings > 0 && e->ctx > c->max_position_embeddings)
		e->ctx = c->max_position_embeddings;
	if (c->index_topk > 0 && e->ctx > c->index_topk) {
		coli_warn("context capped at %d tokens: the DSA indexer (index_topk) is not implemented, "
			  "and below index_topk it selects every key", c->index_topk);
		e->ctx = c->index_topk;
	}
	if ((rc = coli_state_new(e->model, e->ctx, ENGINE_PREFILL_BATCH, &e->state, err)))
		goto fail;
	if ((rc = coli_sampler_init(&e->sampler, c->vocab_size, 0.0f, 1.0f, 0, err)))
		goto fail;
	e->logits = malloc(sizeof(float) * (size_t)c->vocab_size);
	e->hist = malloc(sizeof(int) * (size_t)e->ctx);
	e->full = malloc(sizeof(int) * (size_t)e->ctx);
	e->q_cap = e->opts.max_queue > 0 ? e->opts.max_queue : ENGINE_DEFAULT_QUEUE;
	e->queue = calloc((size_t)e->q_cap, sizeof *e->queue);
	if (!e->logits || !e->hist || !e->full || !e->queue) {
		rc = coli_err_set(err, -ENOMEM, "out of memory");
		goto fail;
	}
	pthread_mutex_init(&e->lock, NULL);
	pthread_cond_init(&e->cond, NULL);
	if (pthread_create(&e->thread, NULL, engine_main, e)) {
		pthread_mutex_destroy(&e->lock);
		pthread_cond_destroy(&e->cond);
		rc = coli_err_set(err, -EAGAIN, "cannot start the engine thread");
		goto fail;
	}
	*out = e;
	return 0;
fail:
	coli_sampler_free(&e->sampler);
	free(e->logits);
	free(e->hist);
	free(e->full);
	free(e->queue);
	coli_state_free(e->state);
	coli_tokenizer_free(e->tok);
	coli_model_free(e->model);
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
	engine_session_unbind(e);
	pthread_mutex_destroy(&e->lock);
	pthread_cond_destroy(&e->cond);
	coli_sampler_free(&e->sampler);
	free(e->logits);
	free(e->hist);
	free(e->full);
	free(e->queue);
	coli_state_free(e->state);
	coli_tokenizer_free(e->tok);
	coli_model_free(e->model);
	free(e);
}

const coli_config *coli_engine_config(const coli_engine *e) { return &e->model->cfg; }
const coli_tokenizer *coli_engine_tokenizer(const coli_engine *e) { return e->tok; }
const char *coli_engine_model_name(const coli_engine *e) { return e->model_name; }
int coli_engine_ctx(const coli_engine *e) { return e->ctx; }
const expert_stats *coli_engine_expert_stats(const coli_engine *e) { return expert_store_stats(e->model->store); }

int coli_engine_queue_len(const coli_engine *e)
{
	coli_engine *m = (coli_engine *)e;
	pthread_mutex_lock(&m->lock);
	int n = m->q_len + atomic_load(&m->busy);
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
	coli_request *r;
	int rc = engine_request_new(prompt, n_prompt, p, &r, err);
	if (rc)
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
