/* engine_grammar.c - structured output in a slot: the request's schema is
 * compiled at admission, the vocabulary's byte strings are prepared on the
 * first constrained request, and each step masks the logits before the
 * sampler sees them (greedy and sampling alike). Allocation happens here at
 * admission only; the per-step mask reuses the slot's buffers. */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "coli_log.h"
#include "engine_internal.h"

int engine_slot_grammar_begin(coli_engine *e, engine_slot *sl, const coli_gen_params *p, coli_err *err)
{
	const coli_config *c = &e->model->cfg;
	const int V = c->vocab_size;
	int rc;
	if (!e->tok)
		return coli_err_set(err, -EINVAL, "structured output needs the model's tokenizer");
	if (!e->gvocab) {
		int eos[9], n = 0;
		for (int i = 0; i < c->n_eos_token_ids && n < 8; i++)
			eos[n++] = c->eos_token_ids[i];
		if (coli_tokenizer_eos_id(e->tok) >= 0)
			eos[n++] = coli_tokenizer_eos_id(e->tok);
		if ((rc = grammar_vocab_new(e->tok, V, eos, n, &e->gvocab, err)))
			return rc;
	}
	if (!sl->mask && !(sl->mask = calloc((size_t)(V + 63) / 64, sizeof *sl->mask)))
		return coli_err_set(err, -ENOMEM, "out of memory (token mask)");
	if (p->json_schema)
		rc = grammar_compile_schema(p->json_schema, strlen(p->json_schema), "schema", &sl->grammar, err);
	else
		rc = grammar_compile_any_object(&sl->grammar, err);
	if (!rc)
		rc = grammar_matcher_new(sl->grammar, &sl->gm, err);
	sl->think_wait = p->grammar_after_think;
	memset(sl->think_tail, 0, sizeof sl->think_tail);
	if (rc)
		engine_slot_grammar_end(sl);
	return rc;
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
	grammar_matcher_free(sl->gm);
	grammar_free(sl->grammar);
	sl->gm = NULL;
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
