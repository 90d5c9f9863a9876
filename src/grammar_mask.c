/* grammar_mask.c - see grammar_mask.h. */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "grammar_mask.h"

#define MASK_MAX_TOKEN 256  /* longer tokens are never allowed */

typedef struct vtok {
	const uint8_t *bytes;
	uint32_t len;
	int id;
} vtok;

struct grammar_vocab {
	int n_vocab;
	int n;              /* ordinary tokens in the walk */
	vtok *tok;          /* (n) sorted by bytes */
	uint16_t *lcp;      /* (n) prefix shared with the previous entry */
	const coli_tokenizer *t;
	int eos[8];
	int n_eos;
};

static int cmp_tok(const void *a, const void *b)
{
	const vtok *x = a, *y = b;
	uint32_t n = x->len < y->len ? x->len : y->len;
	int c = memcmp(x->bytes, y->bytes, n);
	if (c)
		return c;
	if (x->len != y->len)
		return x->len < y->len ? -1 : 1;
	return x->id - y->id;
}

int grammar_vocab_new(const coli_tokenizer *t, int n_vocab, const int *eos, int n_eos, grammar_vocab **out,
		      coli_err *err)
{
	grammar_vocab *v = calloc(1, sizeof *v);
	if (!v)
		return coli_err_set(err, -ENOMEM, "out of memory (grammar vocabulary)");
	v->n_vocab = n_vocab;
	v->t = t;
	v->tok = calloc((size_t)n_vocab + 1, sizeof *v->tok);
	v->lcp = calloc((size_t)n_vocab + 1, sizeof *v->lcp);
	if (!v->tok || !v->lcp) {
		grammar_vocab_free(v);
		return coli_err_set(err, -ENOMEM, "out of memory (grammar vocabulary)");
	}
	for (int i = 0; i < n_eos && v->n_eos < 8; i++)
		if (eos[i] >= 0 && eos[i] < n_vocab)
			v->eos[v->n_eos++] = eos[i];
	for (int id = 0; id < n_vocab; id++) {
		size_t len = 0;
		const uint8_t *b = coli_tokenizer_token_bytes(t, id, &len);
		if (!b || !len || len > MASK_MAX_TOKEN)
			continue;
		v->tok[v->n++] = (vtok){ b, (uint32_t)len, id };
	}
	qsort(v->tok, (size_t)v->n, sizeof *v->tok, cmp_tok);
	for (int k = 1; k < v->n; k++) {
		uint32_t l = 0, n = v->tok[k].len < v->tok[k - 1].len ? v->tok[k].len : v->tok[k - 1].len;
		while (l < n && v->tok[k].bytes[l] == v->tok[k - 1].bytes[l])
			l++;
		v->lcp[k] = (uint16_t)l;
	}
	*out = v;
	return 0;
}

void grammar_vocab_free(grammar_vocab *v)
{
	if (!v)
		return;
	free(v->tok);
	free(v->lcp);
	free(v);
}

int grammar_vocab_size(const grammar_vocab *v)
{
	return v->n_vocab;
}

int grammar_mask_compute(const grammar_vocab *v, grammar_matcher *m, uint64_t *mask)
{
	grammar_state st[MASK_MAX_TOKEN + 1];
	size_t mark[MASK_MAX_TOKEN + 1];
	const size_t base = grammar_scratch_mark(m);
	memset(mask, 0, sizeof *mask * (size_t)((v->n_vocab + 63) / 64));
	st[0] = *grammar_matcher_state(m);
	int depth = 0, allowed = 0;
	for (int k = 0; k < v->n;) {
		const vtok *t = &v->tok[k];
		/* keep st[0..l]: mark[d] is where st[d + 1]'s frames begin */
		int l = v->lcp[k] < depth ? v->lcp[k] : depth;
		if (l < depth)
			grammar_scratch_release(m, mark[l]);
		depth = l;
		int dead = 0;
		while (depth < (int)t->len) {
			mark[depth] = grammar_scratch_mark(m);
			if (!grammar_advance(m, &st[depth], t->bytes[depth], &st[depth + 1])) {
				dead = 1;
				break;
			}
			depth++;
		}
		k++;
		if (dead) {
			/* every following token sharing the dead prefix is dead too */
			while (k < v->n && v->lcp[k] > depth)
				k++;
			grammar_scratch_release(m, mark[depth]);
			continue;
		}
		mask[t->id >> 6] |= 1ULL << (t->id & 63);
		allowed++;
	}
	grammar_scratch_release(m, base);
	if (grammar_matcher_accepts(m)) {
		for (int i = 0; i < v->n_eos; i++) {
			mask[v->eos[i] >> 6] |= 1ULL << (v->eos[i] & 63);
			allowed++;
		}
	}
	return allowed;
}

int grammar_mask_feed(const grammar_vocab *v, grammar_matcher *m, int id)
{
	for (int i = 0; i < v->n_eos; i++)
		if (v->eos[i] == id)
			return grammar_matcher_accepts(m) ? 0 : -EINVAL;
	size_t len = 0;
	const uint8_t *b = coli_tokenizer_token_bytes(v->t, id, &len);
	if (!b || !len)
		return -EINVAL;
	return grammar_matcher_feed(m, b, len);
}

void grammar_mask_apply(const uint64_t *mask, float *logits, int n)
{
	for (int i = 0; i < n; i++)
		if (!((mask[i >> 6] >> (i & 63)) & 1))
			logits[i] = -INFINITY;
}
