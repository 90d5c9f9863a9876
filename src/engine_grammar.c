/* engine_grammar.c - structured output in a slot. The request's grammar is
 * compiled before it is queued, by the thread that submits it (from the
 * caller's compiled grammar, or its schema text), and the vocabulary's
 * byte strings are prepared there on the first constrained request: the
 * engine thread parses no JSON, compiles no pattern and walks no
 * vocabulary at admission. It binds the slot's matcher (kept from one
 * constrained request to the next, like the mask) to the request's
 * grammar, and each step masks the logits before the sampler sees them
 * (greedy and sampling alike). The per-step mask allocates nothing. */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "coli_log.h"
#include "engine_internal.h"

static int vocab_ready(coli_engine *e, coli_err *err)
{
	const coli_config *c = &e->model->cfg;
	int rc = 0;
	pthread_mutex_lock(&e->gvocab_lock);
	if (!e->gvocab) {
		int eos[9], n = 0;
		for (int i = 0; i < c->n_eos_token_ids && n < 8; i++)
			eos[n++] = c->eos_token_ids[i];
		if (coli_tokenizer_eos_id(e->tok) >= 0)
			eos[n++] = coli_tokenizer_eos_id(e->tok);
		rc = grammar_vocab_new(e->tok, c->vocab_size, eos, n, &e->gvocab, err);
	}
	pthread_mutex_unlock(&e->gvocab_lock);
	return rc;
}

int engine_grammar_prepare(coli_engine *e, const coli_gen_params *p, coli_grammar **out, coli_err *err)
{
	*out = NULL;
	if (!p->grammar && !p->json_schema && !p->json_object)
		return 0;
	if (!e->tok)
		return coli_err_set(err, -EINVAL, "structured output needs the model's tokenizer");
	int rc = vocab_ready(e, err);
	if (rc)
		return rc;
	if (p->grammar) {
		*out = grammar_ref(p->grammar);
		return 0;
	}
	if (p->json_schema)
		return grammar_compile_schema(p->json_schema, strlen(p->json_schema), "schema", out, err);
	return grammar_compile_any_object(out, err);
}

int engine_slot_grammar_begin(coli_engine *e, engine_slot *sl, const coli_gen_params *p, coli_err *err)
{
	const int V = e->model->cfg.vocab_size;
	int rc = 0;
	if (!sl->mask && !(sl->mask = calloc((size_t)(V + 63) / 64, sizeof *sl->mask)))
		return coli_err_set(err, -ENOMEM, "out of memory (token mask)");
	if (sl->gm)
		grammar_matcher_bind(sl->gm, p->grammar);
	else
		rc = grammar_matcher_new(p->grammar, &sl->gm, err);
	if (rc)
		return rc;
	sl->grammar = p->grammar;
	sl->think_wait = p->grammar_after_think;
	memset(sl->think_tail, 0, sizeof sl->think_tail);
	return 0;
}

int engine_slot_grammar_mask(coli_engine *e, engine_slot *sl)
{
	int n = grammar_mask_compute(e->gvocab, sl->gm, sl->mask);
	if (n)
		grammar_mask_apply(sl->mask, sl->logits, e->model->cfg.vocab_size);
	return n;
}

void engine_slot_grammar_end(engine_slot *sl)
{
	/* the grammar is the request's; the matcher waits for the next one */
	sl->grammar = NULL;
}

void engine_slot_grammar_free(engine_slot *sl)
{
	grammar_matcher_free(sl->gm);
	free(sl->mask);
	sl->gm = NULL;
	sl->mask = NULL;
	sl->grammar = NULL;
}

int engine_slot_grammar_active(const engine_slot *sl)
{
	return sl->grammar && !sl->think_wait;
}

void engine_slot_grammar_take(coli_engine *e, engine_slot *sl, int tok)
{
	if (!sl->grammar)
		return;
	if (!sl->think_wait) {
		if (grammar_mask_feed(e->gvocab, sl->gm, tok))
			coli_warn("grammar: sampled token %d outside the mask", tok); /* invariant: never */
		return;
	}
	/* "</think>" may be one added token or the tail of ordinary ones */
	size_t n = 0;
	const uint8_t *b = coli_tokenizer_token_bytes(e->tok, tok, &n);
	if (!b) {
		const char *text = coli_tokenizer_token_text(e->tok, tok);
		b = (const uint8_t *)(text ? text : "");
		n = strlen((const char *)b);
	}
	char buf[sizeof sl->think_tail + 256];
	size_t k = strlen(sl->think_tail), m = n < 256 ? n : 256;
	memcpy(buf, sl->think_tail, k);
	memcpy(buf + k, b, m);
	buf[k + m] = 0;
	if (strstr(buf, "</think>")) {
		sl->think_wait = 0;
		return;
	}
	size_t keep = k + m < sizeof sl->think_tail - 1 ? k + m : sizeof sl->think_tail - 1;
	memmove(sl->think_tail, buf + k + m - keep, keep);
	sl->think_tail[keep] = 0;
}
