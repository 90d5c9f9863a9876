/* engine_slot.c - serving one request in a slot: admission (sessions,
 * prefix reuse), chunked prefill, batched decode, finishing.
 *
 * Token flow of a slot in SLOT_DECODE: `pending` is the last sampled token,
 * already shown to the client but not yet evaluated. A decode step
 * evaluates the pending tokens of every decoding slot together
 * (coli_forward_seqs), samples each slot's next token and checks its stop
 * conditions. A finished slot's last token stays unevaluated unless the
 * slot is bound to a persisted session (whose history must be complete). */
#include "config.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coli_log.h"
#include "engine_draft.h"
#include "engine_internal.h"

int engine_slot_alloc(coli_engine *e, engine_slot *sl, int rows, coli_err *err)
{
	if (sl->seq)
		return 0;
	const int V = e->model->cfg.vocab_size;
	int rc = coli_seq_new(e->model, rows, &sl->seq, err);
	if (rc)
		return rc;
	sl->hist = malloc(sizeof(int) * (size_t)e->ctx);
	sl->prompt = malloc(sizeof(int) * (size_t)e->ctx);
	sl->logits = malloc(sizeof(float) * (size_t)V);
	const coli_config *c = &e->model->cfg;
	sl->route_counts = calloc((size_t)c->num_hidden_layers * (size_t)(c->n_routed_experts > 0 ? c->n_routed_experts : 1),
				  sizeof *sl->route_counts);
	if (!sl->hist || !sl->prompt || !sl->logits || !sl->route_counts ||
	    coli_sampler_init(&sl->sampler, V, 0.0f, 1.0f, 0, err)) {
		engine_slot_free(sl);
		return coli_err_set(err, -ENOMEM, "out of memory for a %d-token slot", e->ctx);
	}
	return 0;
}

void engine_slot_free(engine_slot *sl)
{
	coli_seq_free(sl->seq);
	free(sl->hist);
	free(sl->prompt);
	free(sl->logits);
	free(sl->route_counts);
	sl->route_counts = NULL;
	free(sl->draft_q);
	sl->draft_q = NULL;
	coli_sampler_free(&sl->sampler);
	engine_slot_grammar_free(sl);
	sl->seq = NULL;
	sl->hist = sl->prompt = NULL;
	sl->logits = NULL;
}

static int is_eos(const coli_engine *e, int tok)
{
	const coli_config *c = &e->model->cfg;
	for (int i = 0; i < c->n_eos_token_ids; i++)
		if (c->eos_token_ids[i] == tok)
			return 1;
	return e->tok && tok == coli_tokenizer_eos_id(e->tok);
}

int engine_slot_spill_read(void *ctx, int slot, const int *runs, int n_runs, float *out)
{
	engine_slot *sl = ctx;
	coli_engine *e = sl->eng;
	coli_err err = { 0 };
	if (!sl->sess)
		return -ENOENT;
	uint64_t got = 0;
	int rc = kv_session_read_runs(sl->sess, e->spill_reader, slot, runs, n_runs, out, &got, &err);
	if (rc) {
		coli_error("session %s: %s", kv_session_name(sl->sess), err.msg);
		return rc;
	}
	const int L = kv_session_n_layers(sl->sess);
	const long long width = slot < L ? kv_session_width(sl->sess) : kv_session_index_width(sl->sess);
	atomic_fetch_add_explicit(&e->st_spill_bytes, (long long)got, memory_order_relaxed);
	atomic_fetch_add_explicit(&e->st_spill_full, (long long)coli_seq_base(sl->seq) * width * 4,
				  memory_order_relaxed);
	return 0;
}

/* Make room in RAM for n more KV rows: spill the oldest rows to the
 * slot's session file (they are read back on demand). */
int engine_slot_make_room(coli_engine *e, engine_slot *sl, int n, coli_err *err)
{
	coli_seq *q = sl->seq;
	const int in_ram = coli_seq_pos(q) - coli_seq_base(q), cap = coli_seq_capacity(q);
	const int keep = engine_session_keep_rows(e, sl, n);
	if (in_ram + n + keep <= cap)
		return 0;
	if (engine_session_busy(e, sl))
		return 1;
	if (!sl->sess || !kv_session_persisted(sl->sess))
		return coli_err_set(err, -E2BIG, "context beyond %d tokens in RAM needs a persisted session "
				    "(--session) or a larger --kv-ram", cap);
	/* every row to drop must be in the file first: the session writer
	 * writes them while this slot waits (1) */
	int rc = engine_session_spill_ready(e, sl, err);
	if (rc)
		return rc;
	int shift = cap / 4 > n + keep ? cap / 4 : n + keep;
	if (shift > in_ram)
		shift = in_ram;
	coli_seq_set_spill(q, engine_slot_spill_read, sl);
	rc = coli_seq_slide(q, shift, err);
	if (!rc)
		coli_debug("session %s: %d KV rows now read back from disk", kv_session_name(sl->sess),
			   coli_seq_base(q));
	return rc;
}

/* Evaluate tokens on the slot's sequence and append them to its history. */
static int slot_eval(coli_engine *e, engine_slot *sl, const int *toks, int n, float *logits, coli_err *err)
{
	int rc = engine_slot_make_room(e, sl, n, err);
	if (rc)
		return rc;
	rc = coli_forward_seq(e->model, e->state, sl->seq, toks, n, logits, 0, err);
	if (rc) {
		/* a failed chunk may be half written */
		engine_session_forget(sl);
		return rc;
	}
	memcpy(sl->hist + sl->n_hist, toks, sizeof(int) * (size_t)n);
	sl->n_hist += n;
	return 0;
}

void engine_slot_finish(coli_engine *e, engine_slot *sl, int kind, int reason, int code, const char *msg)
{
	coli_request *r = sl->req;
	engine_request_detach(r);
	if (reason == COLI_FINISH_CANCELLED && atomic_load(&r->overflowed))
		coli_warn("request cancelled after %d tokens: its reader stopped taking them", sl->produced);
	if (sl->sess) {
		/* the last sampled token has no KV yet: evaluate it so the stored
		 * history is what an uninterrupted process would hold, and, for a
		 * turn cancelled by its reader (Ctrl-C, SIGTERM), every token it
		 * was given; not for one whose reader stopped reading */
		coli_err err = { 0 };
		if (kind == COLI_EV_DONE && sl->produced > 0 &&
		    (reason != COLI_FINISH_CANCELLED || !atomic_load(&r->overflowed)) &&
		    sl->n_hist + 1 <= e->ctx && engine_session_eval_last(e, sl, &err))
			coli_warn("session %s: %s", kv_session_name(sl->sess), err.msg);
	}
	/* the request's routing profile goes to the writer; the slot's
	 * counts start empty for the next one (a request failing before
	 * admission completes must not carry this one's) */
	engine_profile_submit(e, sl);
	if (sl->seq)
		coli_seq_count_routes(sl->seq, NULL);
	if (sl->route_counts)
		memset(sl->route_counts, 0, sizeof *sl->route_counts * (size_t)e->model->cfg.num_hidden_layers *
		       (size_t)(e->model->cfg.n_routed_experts > 0 ? e->model->cfg.n_routed_experts : 1));
	coli_event ev;
	memset(&ev, 0, sizeof ev);
	ev.kind = kind;
	ev.finish = reason;
	ev.prompt_tokens = sl->n_prompt;
	ev.cached_tokens = sl->cached;
	ev.completion_tokens = sl->produced;
	ev.ttft_ms = sl->ttft;
	double dt = engine_now() - sl->t_first;
	ev.decode_tps = sl->produced > 1 && dt > 0 ? (sl->produced - 1) / dt : 0.0;
	ev.error_code = code;
	if (msg)
		snprintf(ev.message, sizeof ev.message, "%s", msg);
	/* with a session, r ends once the turn is on disk (the writer) */
	if (sl->sess)
		engine_session_finish(e, sl, r, &ev);
	else
		engine_request_finish(r, &ev);
	engine_slot_grammar_end(sl);
	sl->req = NULL;
	sl->phase = SLOT_IDLE;
	sl->last_used = engine_now();
	pthread_mutex_lock(&e->lock);
	e->active--;
	pthread_mutex_unlock(&e->lock);
	engine_request_unref(r);
}

/* Sample from the slot's logits, show the token, decide whether to go on.
 * Returns 1 when the slot finished. */
void engine_slot_bias(const engine_slot *sl, float *logits)
{
	const coli_gen_params *p = &sl->req->params;
	for (int i = 0; i < p->n_bias; i++)
		logits[p->bias_ids[i]] += p->bias[i];
}

static int push_token(coli_engine *e, engine_slot *sl, int tok, const coli_logprob *lp)
{
	coli_request *r = sl->req;
	const coli_gen_params *p = &r->params;
	if (sl->produced == 0) {
		sl->t_first = engine_now();
		sl->ttft = (sl->t_first - r->submit_time) * 1000.0;
	}
	sl->produced++;
	sl->pending = tok;
	int reason = 0;
	char piece[1100], out[2200];
	if (!p->ignore_eos && is_eos(e, tok)) {
		reason = COLI_FINISH_STOP;
	} else {
		size_t n = e->tok ? coli_detok_push(e->tok, &sl->det, tok, 1, piece, sizeof piece) : 0;
		int hit = 0;
		size_t m = stop_match_push(&sl->sm, piece, n, out, sizeof out, &hit);
		engine_request_push_token(r, tok, out, m, lp);
		if (hit)
			reason = COLI_FINISH_STOP;
		else if (atomic_load(&r->cancelled))
			reason = COLI_FINISH_CANCELLED;
		else if (engine_slot_grammar_active(sl) && !grammar_matcher_can_continue(sl->gm))
			reason = COLI_FINISH_STOP; /* the document is complete */
		else if (sl->produced >= sl->limit || sl->n_hist + 1 > e->ctx)
			reason = COLI_FINISH_LENGTH;
	}
	return reason;
}

int engine_slot_push_token(coli_engine *e, engine_slot *sl, int tok)
{
	return push_token(e, sl, tok, NULL);
}

void engine_slot_end(coli_engine *e, engine_slot *sl, int reason)
{
	char piece[1100], out[2200];
	coli_request *r = sl->req;
	if (reason != COLI_FINISH_STOP || !sl->sm.n_held) {
		/* release what the decoder and the stop matcher still hold */
		size_t n = e->tok ? coli_detok_flush(&sl->det, piece, sizeof piece) : 0;
		int hit = 0;
		size_t m = stop_match_push(&sl->sm, piece, n, out, sizeof out, &hit);
		if (!hit)
			m += stop_match_flush(&sl->sm, out + m, sizeof out - m);
		if (m)
			engine_request_push_text(r, -1, out, m);
	}
	engine_slot_finish(e, sl, COLI_EV_DONE, reason, 0, NULL);
}

/* Sample from the slot's logits, show the token, decide whether to go on.
 * Returns 1 when the slot finished. */
int engine_slot_take(coli_engine *e, engine_slot *sl)
{
	coli_request *r = sl->req;
	const coli_gen_params *p = &r->params;
	coli_logprob lp;
	float lse = 0.0f;
	const int V = e->model->cfg.vocab_size;
	if (p->logprobs)
		lse = coli_logprob_top(sl->logits, V, p->top_logprobs, &lp);
	/* logit_bias: sl->logits is this step's private copy */
	engine_slot_bias(sl, sl->logits);
	int tok;
	if (engine_slot_grammar_active(sl) && engine_slot_grammar_mask(e, sl) == 0) {
		/* nothing can continue the document: it is complete */
		engine_slot_finish(e, sl, COLI_EV_DONE, COLI_FINISH_STOP, 0, NULL);
		return 1;
	}
	tok = coli_sampler_sample(&sl->sampler, sl->logits);
	engine_slot_grammar_take(e, sl, tok);
	if (p->logprobs) {
		/* the raw logit: the mask left an allowed token alone */
		float raw = sl->logits[tok];
		for (int i = 0; i < p->n_bias; i++)
			if (p->bias_ids[i] == tok)
				raw -= p->bias[i];
		lp.logprob = raw - lse;
	}
	int reason = push_token(e, sl, tok, p->logprobs ? &lp : NULL);
	if (!reason)
		return 0;
	engine_slot_end(e, sl, reason);
	return 1;
}

static int start_session(coli_engine *e, engine_slot *sl);
static int start_prompt(coli_engine *e, engine_slot *sl);
static int start_reuse(coli_engine *e, engine_slot *sl);

int engine_slot_start(coli_engine *e, engine_slot *sl, coli_request *r)
{
	coli_err err = { 0 };
	sl->req = r;
	sl->produced = 0;
	sl->ttft = 0;
	sl->t_first = engine_now();
	sl->cached = 0;
	sl->n_prompt = r->n_prompt;
	/* admission (engine.c) made room for this within the KV budget */
	if (engine_kv_reserve(e, sl, engine_kv_need_rows(e, r), &err)) {
		engine_slot_finish(e, sl, COLI_EV_ERROR, COLI_FINISH_ERROR, err.code, err.msg);
		return -1;
	}
	/* count the request's routings (the slot's buffer, sized at
	 * allocation, zeroed when the previous request finished) */
	coli_seq_count_routes(sl->seq, e->prof ? sl->route_counts : NULL);
	if (r->session) {
		/* a session request continues the session: its prompt follows
		 * the stored history, which the session writer may read first
		 * (the slot waits, busy; then slot_resumed) */
		int rc = engine_session_bind(e, sl, r->session, &err);
		if (rc < 0) {
			engine_slot_finish(e, sl, COLI_EV_ERROR, COLI_FINISH_ERROR, err.code, err.msg);
			return -1;
		}
		if (rc > 0) {
			sl->at = 0;
			sl->phase = SLOT_PREFILL;
			return 0;
		}
		return start_session(e, sl);
	}
	return start_prompt(e, sl);
}

/* A session request's prompt: the slot holds the session's history. */
static int start_session(coli_engine *e, engine_slot *sl)
{
	coli_request *r = sl->req;
	/* whole: the prompt replaces the history past their common prefix
	 * (the file is cut there below) */
	const int before = r->params.session_whole ? 0 : sl->n_hist;
	if (before + r->n_prompt + 1 > e->ctx) {
		engine_slot_finish(e, sl, COLI_EV_ERROR, COLI_FINISH_ERROR, -E2BIG,
				   "the session and the prompt exceed the context length");
		return -1;
	}
	memcpy(sl->prompt, sl->hist, sizeof(int) * (size_t)before);
	memcpy(sl->prompt + before, r->prompt, sizeof(int) * (size_t)r->n_prompt);
	sl->n_prompt = before + r->n_prompt;
	return start_prompt(e, sl);
}

/* The session writer finished the slot's bind or its prefix read (its
 * busy seen clear): finish it, then the request's start; the slot steps
 * from the next round. */
static void slot_resumed(coli_engine *e, engine_slot *sl)
{
	coli_err err = { 0 };
	int rc;
	if (sl->resuming == SLOT_RESUME_PREFIX) {
		engine_session_adopted(e, sl);
		rc = start_reuse(e, sl);
	} else if (engine_session_bound(e, sl, &err)) {
		engine_slot_finish(e, sl, COLI_EV_ERROR, COLI_FINISH_ERROR, err.code, err.msg);
		return;
	} else {
		rc = start_session(e, sl);
	}
	if (!rc && engine_draft_slot_start(e, sl, &err))
		engine_slot_finish(e, sl, COLI_EV_ERROR, COLI_FINISH_ERROR, err.code, err.msg);
}

/* A stateless request's saved prefix may first be read by the session
 * writer (the slot waits, prefilling but busy; then slot_resumed); then
 * start_reuse. */
static int start_prompt(coli_engine *e, engine_slot *sl)
{
	coli_request *r = sl->req;
	if (!r->session) {
		/* admission released the slot's session: nothing to save */
		if (engine_session_release(e, sl, NULL)) {
			engine_slot_finish(e, sl, COLI_EV_ERROR, COLI_FINISH_ERROR, -EBUSY,
					   "the slot's last session save is still being written");
			return -1;
		}
		/* A stateless request sees only what stateless requests left in
		 * this slot: a session's text is visible to whoever names the
		 * session, and to others only when the operator opted in. */
		if (sl->hist_private && !e->opts.share_session_prefixes) {
			coli_seq_rewind(sl->seq, 0);
			sl->n_hist = 0;
			sl->hist_private = 0;
		}
		memcpy(sl->prompt, r->prompt, sizeof(int) * (size_t)r->n_prompt);
		if (e->opts.share_session_prefixes && engine_session_adopt_prefix(e, sl, sl->n_prompt)) {
			sl->at = 0;
			sl->phase = SLOT_PREFILL;
			return 0;
		}
	}
	return start_reuse(e, sl);
}

/* Reuse what the slot holds of the prompt, set up the sampler: the
 * request is ready to prefill. */
static int start_reuse(coli_engine *e, engine_slot *sl)
{
	coli_request *r = sl->req;
	coli_err err = { 0 };
	/* reuse the longest common prefix; at least one prompt token is
	 * evaluated so there are logits to sample from */
	int k = 0;
	while (k < sl->n_hist && k < sl->n_prompt && sl->hist[k] == sl->prompt[k])
		k++;
	if (k == sl->n_prompt)
		k--;
	coli_seq_rewind(sl->seq, k);
	/* rewinding below the RAM window empties it */
	if (coli_seq_pos(sl->seq) != k)
		k = coli_seq_pos(sl->seq);
	sl->n_hist = k;
	/* a whole-conversation prompt may part from the session inside what
	 * the file holds: cut the file there, or the later save would append
	 * after stale tokens */
	engine_session_cut(sl, k);
	sl->cached = k;
	atomic_store(&r->cached, k);
	sl->at = k;
	const coli_gen_params *p = &r->params;
	coli_sampler_reset(&sl->sampler, p->temperature, p->top_p, p->seed);
	if (p->grammar && engine_slot_grammar_begin(e, sl, p, &err)) {
		engine_slot_finish(e, sl, COLI_EV_ERROR, COLI_FINISH_ERROR, err.code, err.msg);
		return -1;
	}
	coli_detok_init(&sl->det);
	stop_match_init(&sl->sm, p->stop);
	sl->limit = p->max_tokens > 0 ? p->max_tokens : e->ctx;
	sl->phase = SLOT_PREFILL;
	return 0;
}

int engine_slot_ready(coli_engine *e, engine_slot *sl, int n)
{
	/* a slot whose rows the session writer is saving before a spill
	 * waits (its cancellation too); the others step */
	if (engine_session_busy(e, sl))
		return 0;
	if (sl->resuming) {
		slot_resumed(e, sl);
		return 0;
	}
	/* a slot whose in-process reader is behind pauses: the engine never
	 * waits for a reader (engine_request.h) */
	if (!engine_request_room(sl->req, e, ENGINE_STEP_EVENTS))
		return 0;
	if (atomic_load(&sl->req->cancelled)) {
		engine_slot_finish(e, sl, COLI_EV_DONE, COLI_FINISH_CANCELLED, 0, NULL);
		return 0;
	}
	coli_err err = { 0 };
	int rc = engine_slot_make_room(e, sl, n, &err);
	if (rc < 0)
		engine_slot_finish(e, sl, COLI_EV_ERROR, COLI_FINISH_ERROR, err.code, err.msg);
	return rc == 0;
}

int engine_slot_prefill(coli_engine *e, engine_slot *sl)
{
	coli_err err = { 0 };
	if (engine_session_busy(e, sl))
		return 0; /* waiting for its session's writer */
	if (sl->resuming) {
		slot_resumed(e, sl);
		return 0;
	}
	if (atomic_load(&sl->req->cancelled)) {
		engine_slot_finish(e, sl, COLI_EV_DONE, COLI_FINISH_CANCELLED, 0, NULL);
		return 0;
	}
	int n = sl->n_prompt - sl->at < e->prefill_batch ? sl->n_prompt - sl->at : e->prefill_batch;
	int rc = slot_eval(e, sl, sl->prompt + sl->at, n, sl->logits, &err);
	if (rc > 0)
		return 0; /* its rows are being saved before a spill */
	if (rc) {
		engine_slot_finish(e, sl, COLI_EV_ERROR, COLI_FINISH_ERROR, err.code, err.msg);
		return 0;
	}
	return n;
}

int engine_slot_prompt_done(coli_engine *e, engine_slot *sl, int n)
{
	sl->at += n;
	if (sl->at < sl->n_prompt)
		return 0;
	sl->phase = SLOT_DECODE;
	return !engine_slot_take(e, sl);
}

void engine_slot_prefilled(coli_engine *e, engine_slot *sl, int n)
{
	memcpy(sl->hist + sl->n_hist, sl->prompt + sl->at, sizeof(int) * (size_t)n);
	sl->n_hist += n;
	engine_slot_prompt_done(e, sl, n);
}

void engine_slot_decoded(coli_engine *e, engine_slot *sl)
{
	sl->hist[sl->n_hist++] = sl->pending;
	engine_slot_take(e, sl);
}

void engine_slots_fail(coli_engine *e, engine_slot **who, int n, const coli_err *err)
{
	for (int k = 0; k < n; k++) {
		engine_session_forget(who[k]);
		engine_slot_finish(e, who[k], COLI_EV_ERROR, COLI_FINISH_ERROR, err->code, err->msg);
	}
}
