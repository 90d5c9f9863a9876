/* engine_step.c - one engine step: every active slot in one forward.
 *
 * A step evaluates a row for each decoding slot (its pending token) and a
 * prompt chunk for prefilling slots, all in one coli_forward_rows_last:
 * each layer's routed experts are unioned over every row, so an expert
 * record is read once per step for all of them, decode and prompt alike
 * (a batch of documents pays for an expert once per step, not once per
 * document). The rows are bounded by step_rows = n_slots + prefill_batch,
 * so prompts always get at least prefill_batch rows beside a full decode.
 * Prompt chunks go round robin from the slot after the last one served,
 * each at most prefill_batch tokens: a long document takes its chunk per
 * step like the others and cannot starve short ones.
 *
 * Exactness: each row's bits depend only on its own sequence (the
 * matmuls give each row its own bits, attention reads the row's own KV,
 * the expert sum runs in routing order), so a request's output is the
 * same whatever else shares its steps. Sequences whose older KV rows are
 * spilled to their session file are evaluated alone, as before.
 *
 * Used when no MTP module drafts; with drafting, engine_step_draft runs
 * one prefill chunk and then the draft step (engine_draft.c) separately.
 * The choice is the engine's, here: engine_slot.c serves either. */
#include "config.h"

#include <stdatomic.h>
#include <string.h>

#include "engine_draft.h"
#include "engine_internal.h"

/* A slot with spilled KV rows: its own forward (the old path). */
static void step_alone(coli_engine *e, engine_slot *sl)
{
	if (sl->phase == SLOT_PREFILL) {
		int n = engine_slot_prefill(e, sl);
		if (n)
			engine_slot_prompt_done(e, sl, n);
		return;
	}
	const int V = e->model->cfg.vocab_size;
	coli_err err = { 0 };
	coli_seq *q = sl->seq;
	if (coli_forward_seqs(e->model, e->state, &q, &sl->pending, 1, e->batch_logits, &err)) {
		engine_slots_fail(e, &sl, 1, &err);
		return;
	}
	memcpy(sl->logits, e->batch_logits, sizeof(float) * (size_t)V);
	engine_slot_decoded(e, sl);
}


void engine_step(coli_engine *e)
{
	engine_slot *who[ENGINE_MAX_SLOTS];
	coli_seq *seqs[ENGINE_MAX_SLOTS];
	int counts[ENGINE_MAX_SLOTS];
	int *toks = e->step_tokens;
	int n = 0, rows = 0, prompt_rows = 0;
	for (int i = 0; i < e->n_slots; i++) {
		engine_slot *sl = &e->slots[i];
		if (sl->phase != SLOT_DECODE || !engine_slot_ready(e, sl, 1))
			continue;
		if (coli_seq_base(sl->seq) > 0) {
			step_alone(e, sl);
			continue;
		}
		who[n] = sl;
		seqs[n] = sl->seq;
		counts[n++] = 1;
		toks[rows++] = sl->pending;
	}
	int budget = e->step_rows - rows, last = -1;
	for (int k = 0; k < e->n_slots && budget > 0; k++) {
		engine_slot *sl = &e->slots[(e->rr + k) % e->n_slots];
		if (sl->phase != SLOT_PREFILL)
			continue;
		int c = sl->n_prompt - sl->at;
		c = c < e->prefill_batch ? c : e->prefill_batch;
		c = c < budget ? c : budget;
		if (!engine_slot_ready(e, sl, c))
			continue;
		last = sl->index;
		if (coli_seq_base(sl->seq) > 0) {
			step_alone(e, sl);
			continue;
		}
		who[n] = sl;
		seqs[n] = sl->seq;
		counts[n++] = c;
		memcpy(toks + rows, sl->prompt + sl->at, sizeof(int) * (size_t)c);
		rows += c;
		prompt_rows += c;
		budget -= c;
	}
	if (last >= 0)
		e->rr = (last + 1) % e->n_slots;
	if (!n)
		return;
	coli_err err = { 0 };
	if (coli_forward_rows_last(e->model, e->state, seqs, counts, n, toks, e->batch_logits, &err)) {
		engine_slots_fail(e, who, n, &err);
		return;
	}
	atomic_fetch_add_explicit(&e->st_steps, 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&e->st_rows, rows, memory_order_relaxed);
	atomic_fetch_add_explicit(&e->st_prompt_rows, prompt_rows, memory_order_relaxed);
	atomic_store_explicit(&e->st_last_rows, rows, memory_order_relaxed);
	const int V = e->model->cfg.vocab_size;
	for (int j = 0; j < n; j++) {
		engine_slot *sl = who[j];
		const int decoding = sl->phase == SLOT_DECODE;
		if (decoding || sl->at + counts[j] == sl->n_prompt)
			memcpy(sl->logits, e->batch_logits + (size_t)j * V, sizeof(float) * (size_t)V);
		if (decoding)
			engine_slot_decoded(e, sl);
		else
			engine_slot_prefilled(e, sl, counts[j]);
	}
}

/* With drafting: one prompt chunk alone, its rows fed to the MTP module,
 * then one decode step for every decoding slot (a sequence with spilled
 * rows alone), verifying and drafting (engine_draft.c). */
void engine_step_draft(coli_engine *e)
{
	for (int k = 0; k < e->n_slots; k++) {
		engine_slot *sl = &e->slots[(e->rr + k) % e->n_slots];
		/* a slot the session writer holds does not take the turn */
		if (sl->phase != SLOT_PREFILL || engine_session_busy(e, sl))
			continue;
		e->rr = (sl->index + 1) % e->n_slots;
		const int first = sl->at;
		const int n = engine_slot_prefill(e, sl);
		if (n) {
			engine_draft_prefill_chunk(e, sl, first, n);
			if (engine_slot_prompt_done(e, sl, n))
				engine_draft_first_token(e, sl);
		}
		break;
	}
	engine_slot *who[ENGINE_MAX_SLOTS];
	int n = 0;
	for (int i = 0; i < e->n_slots; i++) {
		engine_slot *sl = &e->slots[i];
		if (sl->phase != SLOT_DECODE || !engine_slot_ready(e, sl, 1))
			continue;
		if (coli_seq_base(sl->seq) > 0)
			engine_draft_decode(e, &sl, 1);
		else
			who[n++] = sl;
	}
	if (n)
		engine_draft_decode(e, who, n);
}
