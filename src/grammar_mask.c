/* grammar_mask.c - see grammar_mask.h. */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "grammar_impl.h"
#include "util_unicode.h"
#include "grammar_mask.h"

#define MASK_MAX_TOKEN 256  /* longer tokens are never allowed */

typedef struct vtok {
	const uint8_t *bytes;
	uint32_t len;
	int id;
} vtok;

/* Inside a plain string (no pattern, no maxLength, no escape or UTF-8
 * character under way) the answer for most tokens does not depend on the
 * rest of the state: a token of ordinary characters stays in the string.
 * Those are precomputed (str_plain); only the tokens that could close the
 * string or start an escape (a '"', '\\' or control byte) are walked. This
 * is where long answers spend most steps, and where every token is alive. */
struct grammar_vocab {
	int n_vocab;
	int n;              /* ordinary tokens in the walk */
	vtok *tok;          /* (n) sorted by bytes */
	uint16_t *lcp;      /* (n) prefix shared with the previous entry */
	uint64_t *str_plain;/* (n_vocab/64) tokens of ordinary string characters */
	int n_str;          /* tokens to walk inside a plain string */
	vtok *str_tok;      /* (n_str) sorted, with their own lcp */
	uint16_t *str_lcp;
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

static void fill_lcp(const vtok *t, uint16_t *lcp, int n)
{
	for (int k = 1; k < n; k++) {
		uint32_t l = 0, m = t[k].len < t[k - 1].len ? t[k].len : t[k - 1].len;
		while (l < m && t[k].bytes[l] == t[k - 1].bytes[l])
			l++;
		lcp[k] = (uint16_t)l;
	}
}

/* A token's bytes inside a string, from a character boundary: 1 ordinary
 * characters only (a UTF-8 character may be left open at the end), 2 it
 * holds a '"', '\\' or control byte (must be walked), 0 never valid. */
static int str_class(const uint8_t *b, uint32_t n)
{
	int need = 0, special = 0;
	uint8_t lo = 0x80, hi = 0xBF;
	for (uint32_t i = 0; i < n; i++) {
		uint8_t c = b[i];
		if (need) {
			if (c < lo || c > hi)
				return special ? 2 : 0;
			need--;
			lo = 0x80;
			hi = 0xBF;
			continue;
		}
		if (c == '"' || c == '\\' || c < 0x20)
			return 2; /* what follows depends on the state: walk it */
		if (c < 0x80)
			continue;
		const int len = unicode_utf8_lead(c, &lo, &hi);
		if (len < 2)
			return 0;
		need = len - 1;
	}
	return 1;
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
	fill_lcp(v->tok, v->lcp, v->n);
	v->str_plain = calloc((size_t)(n_vocab + 63) / 64, sizeof *v->str_plain);
	v->str_tok = calloc((size_t)v->n + 1, sizeof *v->str_tok);
	v->str_lcp = calloc((size_t)v->n + 1, sizeof *v->str_lcp);
	if (!v->str_plain || !v->str_tok || !v->str_lcp) {
		grammar_vocab_free(v);
		return coli_err_set(err, -ENOMEM, "out of memory (grammar vocabulary)");
	}
	for (int k = 0; k < v->n; k++) {
		int c = str_class(v->tok[k].bytes, v->tok[k].len);
		if (c == 1)
			v->str_plain[v->tok[k].id >> 6] |= 1ULL << (v->tok[k].id & 63);
		else if (c == 2)
			v->str_tok[v->n_str++] = v->tok[k];
	}
	fill_lcp(v->str_tok, v->str_lcp, v->n_str);
	*out = v;
	return 0;
}

void grammar_vocab_free(grammar_vocab *v)
{
	if (!v)
		return;
	free(v->tok);
	free(v->lcp);
	free(v->str_plain);
	free(v->str_tok);
	free(v->str_lcp);
	free(v);
}

/* Walk the sorted tokens tok[0..n) like a trie; set the allowed ones. */
static int walk(const vtok *tok, const uint16_t *lcp, int n, grammar_matcher *m, uint64_t *mask)
{
	grammar_state st[MASK_MAX_TOKEN + 1];
	size_t mark[MASK_MAX_TOKEN + 1];
	const size_t base = grammar_scratch_mark(m);
	st[0] = *grammar_matcher_state(m);
	int depth = 0, allowed = 0;
	for (int k = 0; k < n;) {
		const vtok *t = &tok[k];
		/* keep st[0..l]: mark[d] is where st[d + 1]'s frames begin */
		int l = lcp[k] < depth ? lcp[k] : depth;
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
			while (k < n && lcp[k] > depth)
				k++;
			grammar_scratch_release(m, mark[depth]);
			continue;
		}
		mask[t->id >> 6] |= 1ULL << (t->id & 63);
		allowed++;
	}
	grammar_scratch_release(m, base);
	return allowed;
}

int grammar_mask_compute(const grammar_vocab *v, grammar_matcher *m, uint64_t *mask)
{
	const size_t words = (size_t)(v->n_vocab + 63) / 64;
	int allowed;
	if (grammar_matcher_plain_text(m)) {
		memcpy(mask, v->str_plain, sizeof *mask * words);
		allowed = 0;
		for (size_t i = 0; i < words; i++)
			allowed += __builtin_popcountll(mask[i]);
		allowed += walk(v->str_tok, v->str_lcp, v->n_str, m, mask);
	} else {
		memset(mask, 0, sizeof *mask * words);
		allowed = walk(v->tok, v->lcp, v->n, m, mask);
	}
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
