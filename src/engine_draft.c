/* engine_draft.c - MTP speculative decoding in the engine thread.
 *
 * A slot in SLOT_DECODE holds `pending` (x_P: sampled, shown, not yet
 * evaluated) and up to N drafts d1..dN for the tokens after it. One step
 * evaluates [x_P, d1..dk] of every decoding slot as one batch
 * (coli_forward_rows: the chunk path of prefill, every routed expert read
 * once for all rows), giving logits L0..Lk. Greedy accepts d(i+1) while
 * argmax(Li) equals it; the step then emits the accepted drafts and
 * argmax(La), the main model's own token. Each of those is the token
 * decoding without drafts would produce, from bit-identical logits (a row
 * of the batch computes what it computes alone), so greedy output is
 * byte-identical for any N. Sampling uses the speculative-sampling rule:
 * d(i+1), drawn from the draft distribution q, is accepted with
 * probability min(1, p(d)/q(d)), p the main model's distribution at Li
 * (temperature and top-p applied to both); the first rejection draws from
 * max(0, p - q) normalized and ends the step; when all are accepted the
 * step draws from p at Lk. The output is distributed exactly as without
 * drafts, and reproducible for a seed.
 *
 * Rejected rows leave no trace: the sequence is rewound to the accepted
 * tokens with coli_seq_rewind (every per-position cache rolls back with
 * it), history and sessions only ever receive emitted tokens, and the
 * statistics count drafts and acceptances apart from tokens.
 *
 * The MTP module keeps its own KV layer with one row per position i:
 * (h_i, x_(i+1)), h_i the main model's final-normed hidden state. Prefill
 * feeds every prompt row; each step feeds the rows it accepted, and the
 * row for the new pending token drafts d1. N > 1 chains the module on its
 * own output state and draft (speculative rows, rewound next step).
 * Positions whose hidden state is gone - steps where auto drafting was
 * off, a session restored from disk, the row before a reused prefix - are
 * zero rows in the MTP layer (coli_seq_mtp_skip): drafting resumes at
 * once, attending only to the rows it has. Sequences with KV rows spilled
 * to a session file do not draft. */
#include "config.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coli_log.h"
#include "engine_draft.h"
#include "engine_draft_auto.h"
#include "expert_store_stats.h"
#include "util_seqlock.h"

struct engine_draft {
	int rows;               /* most rows in one step */
	float *logits;          /* (rows, vocab) verify logits */
	float *hidden;          /* (rows, H) their hidden states */
	float *mtp_logits;      /* (vocab) */
	float *p;               /* (vocab) the main model's distribution */
	float *h_last;          /* (H) the prompt's last hidden state */
	int *toks;              /* (rows) */
	draft_auto au;          /* engine thread */
	int last_on;            /* for logging changes of the decision */
	/* published figures (engine thread writes, any thread reads) */
	_Atomic unsigned long long steps, tokens, drafted, accepted;
	atomic_int on, n;
	_Atomic double gain;
	coli_seqlock reason_lock;
	_Atomic uint64_t reason[COLI_SEQLOCK_WORDS(sizeof ((draft_auto *)0)->reason)];
};


int engine_draft_max_rows(int n_slots)
{
	return n_slots * (COLI_DRAFT_MAX + 1);
}

static void publish_reason(struct engine_draft *d)
{
	uint32_t s = coli_seqlock_write_begin(&d->reason_lock);
	coli_seqlock_put_bytes(d->reason, d->au.reason, sizeof d->au.reason);
	coli_seqlock_write_end(&d->reason_lock, s);
}

int engine_draft_new(coli_engine *e, struct engine_draft **out, coli_err *err)
{
	*out = NULL;
	const coli_model *m = e->model;
	if (!m->n_mtp) {
		if (e->opts.draft > 0)
			return coli_err_set(err, -EINVAL, "--draft %d: %s has no MTP module to draft with",
					    e->opts.draft, e->model_name);
		return 0;
	}
	const int V = m->cfg.vocab_size, H = m->cfg.hidden_size;
	struct engine_draft *d = calloc(1, sizeof *d);
	if (!d)
		return coli_err_set(err, -ENOMEM, "out of memory");
	d->rows = engine_draft_max_rows(e->n_slots);
	d->logits = malloc(sizeof(float) * (size_t)d->rows * V);
	d->hidden = malloc(sizeof(float) * (size_t)d->rows * H);
	d->mtp_logits = malloc(sizeof(float) * (size_t)V);
	d->p = malloc(sizeof(float) * (size_t)V);
	d->h_last = malloc(sizeof(float) * (size_t)H);
	d->toks = malloc(sizeof(int) * (size_t)d->rows);
	if (!d->logits || !d->hidden || !d->mtp_logits || !d->p || !d->h_last || !d->toks) {
		engine_draft_free(d);
		return coli_err_set(err, -ENOMEM, "out of memory for drafting buffers");
	}
	draft_auto_init(&d->au);
	/* experts that do not all fit the cache come from disk, where extra
	 * rows cost reads: auto starts off and decides from a measured step */
	const expert_stats *st = coli_engine_expert_stats(e);
	if (st) {
		expert_stats_summary sum;
		expert_stats_snapshot(st, &sum);
		const coli_config *c = &m->cfg;
		const double all = (double)sum.record_size * c->n_routed_experts *
				   (c->num_hidden_layers - c->first_k_dense_replace);
		if ((double)(sum.budget_pin + sum.budget_cache) < all) {
			d->au.on = 0;
			d->au.n = 0;
			snprintf(d->au.reason, sizeof d->au.reason,
				 "off: the expert cache holds part of the experts; measuring a step first");
		}
	}
	if (e->opts.draft > 0) {
		d->au.on = 1;
		d->au.n = e->opts.draft;
		snprintf(d->au.reason, sizeof d->au.reason, "on: --draft %d", e->opts.draft);
	}
	d->last_on = -1;
	atomic_store(&d->on, d->au.on);
	atomic_store(&d->n, d->au.n);
	publish_reason(d);
	*out = d;
	return 0;
}

void engine_draft_free(struct engine_draft *d)
{
	if (!d)
		return;
	free(d->logits);
	free(d->hidden);
	free(d->mtp_logits);
	free(d->p);
	free(d->h_last);
	free(d->toks);
	free(d);
}

int engine_draft_slot_start(coli_engine *e, engine_slot *sl, coli_err *err)
{
	if (e->draft && !sl->draft_q &&
	    !(sl->draft_q = malloc(sizeof(float) * (size_t)COLI_DRAFT_MAX * (size_t)e->model->cfg.vocab_size)))
		return coli_err_set(err, -ENOMEM, "out of memory (draft distributions)");
	int mode = sl->req ? sl->req->params.draft : COLI_DRAFT_UNSET;
	if (mode == COLI_DRAFT_UNSET)
		mode = e->opts.draft == COLI_DRAFT_UNSET ? COLI_DRAFT_AUTO : e->opts.draft;
	sl->draft_mode = e->draft ? mode : COLI_DRAFT_OFF;
	/* a grammar mask or log-probabilities are per sampled position:
	 * such requests decode without drafts */
	if (sl->req && (sl->req->params.grammar || sl->req->params.logprobs))
		sl->draft_mode = COLI_DRAFT_OFF;
	sl->n_draft = 0;
	/* the row before a reused prefix pairs its hidden state with the
	 * token that followed then, which may differ now */
	if (e->draft && sl->seq)
		coli_seq_rewind_mtp(sl->seq, coli_seq_pos(sl->seq) > 0 ? coli_seq_pos(sl->seq) - 1 : 0);
	return 0;
}

/* Drafts the slot wants for its next step (0: none). */
static int slot_want(const coli_engine *e, const engine_slot *sl)
{
	if (!e->draft || sl->draft_mode == COLI_DRAFT_OFF || coli_seq_base(sl->seq) > 0)
		return 0;
	const draft_auto *au = &e->draft->au;
	return sl->draft_mode > 0 ? sl->draft_mode : au->on || au->probe ? au->n : 0;
}

/* Bring the MTP layer to `pos` rows: rewind speculative rows, or leave
 * empty rows where no hidden state exists. */
static int mtp_align(coli_engine *e, engine_slot *sl, int pos)
{
	coli_seq *q = sl->seq;
	if (coli_seq_mtp_pos(q) > pos)
		coli_seq_rewind_mtp(q, pos);
	return coli_seq_mtp_skip(q, pos, e->model->cfg.num_hidden_layers);
}

/* Draft one token from the MTP logits into slot draft j. */
static int draft_pick(engine_slot *sl, const float *logits, int j)
{
	coli_sampler *smp = &sl->sampler;
	if (smp->temperature <= 0.0f)
		return coli_argmax(logits, smp->vocab);
	float *q = sl->draft_q + (size_t)j * smp->vocab;
	coli_sampler_dist(smp, logits, q);
	return coli_sampler_draw(smp, q);
}

/* Feed MTP rows (hidden[i], next[i]) at positions pos.. and, when the
 * slot drafts, draft up to `want` tokens after the last of them. */
static void mtp_feed(coli_engine *e, engine_slot *sl, int pos, const float *hidden, const int *next, int n,
		     int want)
{
	struct engine_draft *d = e->draft;
	coli_seq *q = sl->seq;
	coli_err err = { 0 };
	sl->n_draft = 0;
	if (n < 1)
		return;
	/* the drafts' own rows must fit after the pending token */
	if (want > 0 && (coli_seq_pos(q) - coli_seq_base(q) + 1 + want > coli_seq_capacity(q) ||
			 sl->n_hist + 1 + want > e->ctx))
		want = 0;
	if (pos + n + want > coli_seq_capacity(q) || mtp_align(e, sl, pos))
		return;
	const double t0 = engine_now();
	/* (drafts see the logit_bias too: the main model's choices will) */
	if (coli_forward_mtp_tail(e->model, e->state, q, hidden, next, n, d->mtp_logits, want > 0, &err)) {
		coli_warn("drafting stopped for this request: %s", err.msg);
		sl->draft_mode = COLI_DRAFT_OFF;
		return;
	}
	int hrow = n - 1;       /* the module's output state of the last row */
	for (int j = 0; j < want; j++) {
		engine_slot_bias(sl, d->mtp_logits);
		int tok = draft_pick(sl, d->mtp_logits, j);
		sl->drafts[j] = tok;
		sl->n_draft = j + 1;
		if (j + 1 == want)
			break;
		/* chain: the module's own output state stands in for the main
		 * model's hidden state at the drafted position */
		const float *h = coli_state_hidden(e->state, hrow);
		hrow = 0;
		if (coli_forward_mtp_tail(e->model, e->state, q, h, &tok, 1, d->mtp_logits, 1, &err)) {
			coli_warn("drafting stopped for this request: %s", err.msg);
			sl->draft_mode = COLI_DRAFT_OFF;
			break;
		}
	}
	if (want > 0)
		draft_auto_note_mtp(&d->au, (engine_now() - t0) / want);
}

void engine_draft_prefill_chunk(coli_engine *e, engine_slot *sl, int first, int n)
{
	struct engine_draft *d = e->draft;
	if (!d || sl->draft_mode == COLI_DRAFT_OFF || coli_seq_base(sl->seq) > 0 || n < 1)
		return;
	/* auto while off: no module rows (the gap becomes empty rows if it
	 * turns on later), so off costs nothing */
	if (!slot_want(e, sl))
		return;
	const int H = e->model->cfg.hidden_size;
	const float *h = coli_state_final_hidden(e->model, e->state, n);
	const int last = first + n == sl->n_prompt;
	/* the prompt's last row pairs with the token sampled next */
	if (last)
		memcpy(d->h_last, h + (size_t)(n - 1) * H, sizeof(float) * (size_t)H);
	const int rows = last ? n - 1 : n;
	if (rows > 0)
		mtp_feed(e, sl, first, h, sl->prompt + first + 1, rows, 0);
}

void engine_draft_first_token(coli_engine *e, engine_slot *sl)
{
	if (!e->draft || sl->draft_mode == COLI_DRAFT_OFF || sl->phase != SLOT_DECODE ||
	    coli_seq_base(sl->seq) > 0)
		return;
	const int want = slot_want(e, sl);
	if (want)
		mtp_feed(e, sl, sl->n_hist - 1, e->draft->h_last, &sl->pending, 1, want);
}

/* Accept drafts of one slot from its rows' logits L (k + 1 rows): returns
 * the number accepted and the token that follows them in *next. */
static int accept(coli_engine *e, engine_slot *sl, float *L, int k, int *next)
{
	struct engine_draft *d = e->draft;
	coli_sampler *smp = &sl->sampler;
	const int V = smp->vocab;
	int a = 0;
	/* every row's choice sees the request's logit_bias, as without drafts */
	for (int i = 0; i <= k; i++)
		engine_slot_bias(sl, L + (size_t)i * V);
	if (smp->temperature <= 0.0f) {
		while (a < k && coli_argmax(L + (size_t)a * V, V) == sl->drafts[a])
			a++;
		*next = coli_sampler_sample(smp, L + (size_t)a * V);
		return a;
	}
	for (; a < k; a++) {
		const int t = sl->drafts[a];
		const float *q = sl->draft_q + (size_t)a * V;
		coli_sampler_dist(smp, L + (size_t)a * V, d->p);
		/* accept with probability min(1, p/q): u < p/q */
		if (coli_sampler_uniform(smp) * q[t] < d->p[t])
			continue;
		for (int i = 0; i < V; i++)
			d->p[i] = d->p[i] > q[i] ? d->p[i] - q[i] : 0.0f;
		*next = coli_sampler_draw(smp, d->p);
		return a;
	}
	coli_sampler_dist(smp, L + (size_t)k * V, d->p);
	*next = coli_sampler_draw(smp, d->p);
	return k;
}

static void decide(coli_engine *e, int slots, int max_n)
{
	struct engine_draft *d = e->draft;
	const expert_stats *st = coli_engine_expert_stats(e);
	draft_auto_io io = { 0 };
	if (st) {
		expert_stats_summary sum;
		expert_stats_snapshot(st, &sum);
		io.has_store = 1;
		io.moe_layers = e->model->cfg.num_hidden_layers - e->model->cfg.first_k_dense_replace;
		io.n_experts = sum.n_experts;
		io.top_k = sum.top_k;
		/* records served from RAM: a prefetched one was still read */
		const double ram = (double)(sum.hits_pinned + sum.hits_cached);
		const double all = ram + (double)(sum.hits_prefetched + sum.misses);
		io.hit_rate = all > 0 ? ram / all : 0.0;
		io.record_bytes = (double)sum.record_size;
		io.bandwidth = sum.busy_seconds > 0 ? sum.bytes_read / sum.busy_seconds : 0;
	}
	draft_auto_decide(&d->au, &io, slots, max_n, e->model->cfg.num_hidden_layers);
	if (d->au.on != d->last_on) {
		coli_info("draft auto: %s", d->au.reason);
		d->last_on = d->au.on;
	}
	atomic_store_explicit(&d->gain, d->au.gain, memory_order_relaxed);
	publish_reason(d);
}

static double disk_wait(const coli_engine *e)
{
	const expert_stats *st = coli_engine_expert_stats(e);
	if (!st)
		return 0;
	expert_stats_summary s;
	expert_stats_snapshot(st, &s);
	return s.wait_seconds;
}

/* Emit the accepted drafts and the next token; rewind what was not
 * accepted. Returns 1 when the slot finished. */
static int emit(coli_engine *e, engine_slot *sl, int a, int next)
{
	for (int j = 0; j <= a; j++) {
		const int t = j < a ? sl->drafts[j] : next;
		int reason = engine_slot_push_token(e, sl, t);
		if (reason) {
			coli_seq_rewind(sl->seq, sl->n_hist);
			engine_slot_end(e, sl, reason);
			return 1;
		}
		if (j < a)
			sl->hist[sl->n_hist++] = t;
	}
	coli_seq_rewind(sl->seq, sl->n_hist);
	return 0;
}

void engine_draft_decode(coli_engine *e, engine_slot **who, int n)
{
	struct engine_draft *d = e->draft;
	const int V = e->model->cfg.vocab_size, H = e->model->cfg.hidden_size;
	coli_seq *seqs[ENGINE_MAX_SLOTS];
	int counts[ENGINE_MAX_SLOTS], rows = 0, auto_slots = 0;
	for (int k = 0; k < n; k++)
		auto_slots += who[k]->draft_mode == COLI_DRAFT_AUTO;
	for (int k = 0; k < n; k++) {
		engine_slot *sl = who[k];
		coli_seq *q = sl->seq;
		/* drafts need their rows in RAM beside the pending token */
		if (sl->n_draft && (coli_seq_pos(q) - coli_seq_base(q) + 1 + sl->n_draft > coli_seq_capacity(q) ||
				    sl->n_hist + 1 + sl->n_draft > e->ctx))
			sl->n_draft = 0;
		seqs[k] = q;
		counts[k] = 1 + sl->n_draft;
		d->toks[rows++] = sl->pending;
		for (int j = 0; j < sl->n_draft; j++)
			d->toks[rows++] = sl->drafts[j];
	}
	coli_err err = { 0 };
	const double w0 = disk_wait(e), t0 = engine_now();
	if (coli_forward_rows(e->model, e->state, seqs, counts, n, d->toks, d->logits, &err)) {
		engine_slots_fail(e, who, n, &err);
		return;
	}
	draft_auto_note_step(&d->au, rows, n, engine_now() - t0 - (disk_wait(e) - w0));
	for (int r = 0; r < rows; r++)
		memcpy(d->hidden + (size_t)r * H, coli_state_hidden(e->state, r), sizeof(float) * (size_t)H);
	/* the decision for the drafts made below */
	if (auto_slots)
		decide(e, n, COLI_DRAFT_MAX);
	int any_on = 0, n_on = 0;
	for (int k = 0, r0 = 0; k < n; r0 += counts[k], k++) {
		engine_slot *sl = who[k];
		const int kd = sl->n_draft, pos = sl->n_hist;
		sl->hist[sl->n_hist++] = sl->pending;
		int next, a = 0, done;
		const int before = sl->produced;
		atomic_fetch_add_explicit(&d->steps, 1, memory_order_relaxed);
		if (!kd) {
			/* no drafts: the slot's own sampling path (logit_bias,
			 * grammar mask, log-probabilities), as without an MTP module */
			sl->n_hist--;
			memcpy(sl->logits, d->logits + (size_t)r0 * V, sizeof(float) * (size_t)V);
			sl->hist[sl->n_hist++] = sl->pending;
			done = engine_slot_take(e, sl);
		} else {
			a = accept(e, sl, d->logits + (size_t)r0 * V, kd, &next);
			atomic_fetch_add_explicit(&d->drafted, (unsigned long long)kd, memory_order_relaxed);
			atomic_fetch_add_explicit(&d->accepted, (unsigned long long)a, memory_order_relaxed);
			draft_auto_note_accept(&d->au, a < kd ? a + 1 : kd, a);
			done = emit(e, sl, a, next);
		}
		atomic_fetch_add_explicit(&d->tokens, (unsigned long long)(sl->produced - before),
					  memory_order_relaxed);
		sl->n_draft = 0;
		if (done)
			continue;
		const int want = slot_want(e, sl);
		if (want > 0) {
			/* rows pos..pos+a: (h_i, x_(i+1)), the last x being the new
			 * pending token */
			int nx[COLI_DRAFT_MAX + 1];
			for (int j = 0; j < a; j++)
				nx[j] = sl->drafts[j];
			nx[a] = sl->pending;
			mtp_feed(e, sl, pos, d->hidden + (size_t)r0 * H, nx, a + 1, want);
		}
		any_on |= sl->n_draft > 0;
		n_on = sl->n_draft > n_on ? sl->n_draft : n_on;
	}
	atomic_store_explicit(&d->on, any_on, memory_order_relaxed);
	atomic_store_explicit(&d->n, n_on, memory_order_relaxed);
}

void coli_engine_draft_stats(const coli_engine *e, coli_draft_stats *o)
{
	memset(o, 0, sizeof *o);
	if (!e) {
		o->mode = COLI_DRAFT_OFF;
		snprintf(o->reason, sizeof o->reason, "n/a");
		return;
	}
	struct engine_draft *d = e->draft;
	o->mode = e->opts.draft == COLI_DRAFT_UNSET ? COLI_DRAFT_AUTO : e->opts.draft;
	if (!d) {
		o->mode = COLI_DRAFT_OFF;
		snprintf(o->reason, sizeof o->reason, "off: %s",
			 e->model->cfg.num_nextn_predict_layers > 0 ? "--draft off" : "the model has no MTP module");
		return;
	}
	o->available = 1;
	o->on = atomic_load_explicit(&d->on, memory_order_relaxed);
	o->n = atomic_load_explicit(&d->n, memory_order_relaxed);
	o->steps = atomic_load_explicit(&d->steps, memory_order_relaxed);
	o->tokens = atomic_load_explicit(&d->tokens, memory_order_relaxed);
	o->drafted = atomic_load_explicit(&d->drafted, memory_order_relaxed);
	o->accepted = atomic_load_explicit(&d->accepted, memory_order_relaxed);
	o->acceptance = o->drafted ? (double)o->accepted / (double)o->drafted : 0.0;
	o->tokens_per_forward = o->steps ? (double)o->tokens / (double)o->steps : 0.0;
	o->predicted_gain = atomic_load_explicit(&d->gain, memory_order_relaxed);
	_Static_assert(sizeof o->reason == sizeof d->au.reason, "one reason size");
	uint32_t s;
	do {
		s = coli_seqlock_read_begin(&d->reason_lock);
		coli_seqlock_get_bytes(o->reason, d->reason, sizeof o->reason);
	} while (coli_seqlock_read_retry(&d->reason_lock, s));
	o->reason[sizeof o->reason - 1] = '\0';
}
