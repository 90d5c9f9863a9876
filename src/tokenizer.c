/* tokenizer.c - encoding: added tokens, then normalize, pre-tokenize and
 * merge what lies between them; plus the small accessors of tokenizer.h.
 *
 * The order follows the reference: added tokens that are matched on raw
 * text ("normalized": false) are split out first, each remaining section is
 * normalized, tokens matched on normalized text are split out of that, and
 * the rest goes through the pre-tokenizer and BPE. Invalid UTF-8 input is
 * not rejected: it is replaced with U+FFFD exactly as a JavaScript string
 * decoded from the same bytes would be, so ids match the reference on the
 * same bytes. */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "tokenizer_impl.h"
#include "util_array.h"
#include "util_unicode.h"

/* Whitespace as JavaScript's String.prototype.trim sees it (the reference
 * strips with trimStart/trimEnd for lstrip/rstrip). */
static int js_space(uint32_t c)
{
	return (c != 0x85 && unicode_is_white_space(c)) || c == 0xFEFF;
}

static size_t trim_end(const char *s, size_t n)
{
	while (n > 0) {
		size_t k = n - 1;
		while (k > 0 && ((uint8_t)s[k] & 0xC0) == 0x80)
			k--;
		uint32_t cp;
		if (unicode_utf8_next((const uint8_t *)s + k, n - k, &cp) <= 0 || !js_space(cp))
			break;
		n = k;
	}
	return n;
}

static size_t trim_start(const char *s, size_t n)
{
	size_t i = 0;
	while (i < n) {
		uint32_t cp;
		int r = unicode_utf8_next((const uint8_t *)s + i, n - i, &cp);
		if (r <= 0 || !js_space(cp))
			break;
		i += (size_t)r;
	}
	return i;
}

typedef struct section {
	size_t off, len;
	int added;     /* index into t->added, or -1 */
} section;

typedef struct sections {
	section *v;
	size_t n, cap;
} sections;

static int sec_push(sections *ss, size_t off, size_t len, int added)
{
	if (util_array_grow(&ss->v, &ss->cap, ss->n + 1, 16))
		return -ENOMEM;
	ss->v[ss->n++] = (section){ off, len, added };
	return 0;
}

/* Split s by the trie's tokens and apply lstrip/rstrip to the neighbours. */
static int split_added(const coli_tokenizer *t, const tok_trie *tr, const char *s, size_t n,
		       sections *ss)
{
	ss->n = 0;
	size_t start = 0, i = 0;
	int rc;
	while (i < n) {
		size_t ml = 0;
		int a = tr->n ? tok_trie_match(tr, s + i, n - i, &ml) : -1;
		if (a < 0) {
			i++;
			continue;
		}
		if (i > start && (rc = sec_push(ss, start, i - start, -1)) < 0)
			return rc;
		if ((rc = sec_push(ss, i, ml, a)) < 0)
			return rc;
		i += ml;
		start = i;
	}
	if (start < n && (rc = sec_push(ss, start, n - start, -1)) < 0)
		return rc;
	for (size_t k = 0; k < ss->n; k++) {
		if (ss->v[k].added < 0)
			continue;
		const tok_added *a = &t->added[ss->v[k].added];
		if (a->lstrip && k > 0 && ss->v[k - 1].added < 0)
			ss->v[k - 1].len = trim_end(s + ss->v[k - 1].off, ss->v[k - 1].len);
		if (a->rstrip && k + 1 < ss->n && ss->v[k + 1].added < 0) {
			size_t d = trim_start(s + ss->v[k + 1].off, ss->v[k + 1].len);
			ss->v[k + 1].off += d;
			ss->v[k + 1].len -= d;
		}
	}
	return 0;
}

/* A whole section that spells an added token is that token (the reference
 * looks every section up in its added-token map). */
static int whole_token(const coli_tokenizer *t, const char *s, size_t n)
{
	size_t ml = 0;
	int a = tok_trie_match(&t->trie_raw, s, n, &ml);
	if (a >= 0 && ml == n)
		return t->added[a].id;
	a = tok_trie_match(&t->trie_norm, s, n, &ml);
	if (a >= 0 && ml == n)
		return t->added[a].id;
	return -1;
}

static int encode_plain(coli_tokenizer *t, const char *s, size_t n, tok_ids *out, coli_err *err)
{
	tok_spans sp = { 0 };
	char *rebuilt = NULL;
	int rc = tok_pretokenize(t, s, n, &rebuilt, &sp, err);
	const char *base = rebuilt ? rebuilt : s;
	for (size_t k = 0; rc == 0 && k < sp.n; k += 2)
		if ((rc = tok_bpe_word(t, base + sp.v[k], sp.v[k + 1], out)) < 0)
			coli_err_set(err, rc, "out of memory");
	free(rebuilt);
	free(sp.v);
	return rc;
}

static int encode_section(coli_tokenizer *t, const char *s, size_t n, tok_ids *out, coli_err *err)
{
	char *norm = NULL;
	size_t nl;
	sections ss = { 0 };
	int rc = tok_normalize(t, s, n, &norm, &nl, err);
	if (rc < 0)
		return rc;
	if (!nl)
		goto out;
	if ((rc = split_added(t, &t->trie_norm, norm, nl, &ss)) < 0) {
		coli_err_set(err, rc, "out of memory");
		goto out;
	}
	for (size_t k = 0; k < ss.n && rc == 0; k++) {
		const section *c = &ss.v[k];
		int id = c->added >= 0 ? t->added[c->added].id : (c->len ? whole_token(t, norm + c->off, c->len) : -1);
		if (c->len == 0)
			continue;
		if (id >= 0)
			rc = tok_ids_push(out, id);
		else
			rc = encode_plain(t, norm + c->off, c->len, out, err);
	}
out:
	free(ss.v);
	free(norm);
	return rc;
}

int coli_tokenizer_encode(const coli_tokenizer *tc, const char *text, size_t len, int **ids,
			  size_t *n_ids, coli_err *err)
{
	/* The BPE cache is the only state encode touches; it has its own lock. */
	coli_tokenizer *t = (coli_tokenizer *)tc;
	*ids = NULL;
	*n_ids = 0;
	char *clean = NULL;
	tok_ids out = { 0 };
	sections ss = { 0 };
	int rc = 0;
	if (!unicode_utf8_valid((const uint8_t *)text, len)) {
		clean = malloc(len * 3 + 1);
		if (!clean)
			return coli_err_set(err, -ENOMEM, "out of memory");
		len = unicode_utf8_lossy((const uint8_t *)text, len, 1, (uint8_t *)clean, NULL);
		text = clean;
	}
	if ((rc = split_added(t, &t->trie_raw, text, len, &ss)) < 0) {
		coli_err_set(err, rc, "out of memory");
		goto out;
	}
	for (size_t k = 0; k < ss.n && rc == 0; k++) {
		const section *c = &ss.v[k];
		if (c->len == 0)
			continue;
		int id = c->added >= 0 ? t->added[c->added].id : whole_token(t, text + c->off, c->len);
		if (id >= 0)
			rc = tok_ids_push(&out, id);
		else
			rc = encode_section(t, text + c->off, c->len, &out, err);
		if (rc == -ENOMEM)
			coli_err_set(err, rc, "out of memory");
	}
	if (rc == 0) {
		*ids = out.v;
		*n_ids = out.n;
		out.v = NULL;
	}
out:
	free(out.v);
	free(ss.v);
	free(clean);
	return rc;
}

int coli_tokenizer_vocab_size(const coli_tokenizer *t)
{
	return t->n_ids;
}

int coli_tokenizer_check_vocab(const coli_tokenizer *t, int model_vocab, coli_err *err)
{
	if (t->n_ids > model_vocab)
		return coli_err_set(err, -EINVAL, "%s: the tokenizer's ids go up to %d, beyond the model's "
				    "vocab_size %d (a tokenizer of another model?)", t->dir, t->n_ids - 1,
				    model_vocab);
	return 0;
}

int coli_tokenizer_token_id(const coli_tokenizer *t, const char *token)
{
	return tok_strmap_get(&t->names, token, strlen(token));
}

int coli_tokenizer_bos_id(const coli_tokenizer *t)
{
	return t->bos_id;
}

int coli_tokenizer_eos_id(const coli_tokenizer *t)
{
	return t->eos_id;
}

int coli_tokenizer_is_special(const coli_tokenizer *t, int id)
{
	return id >= 0 && id < t->n_ids && (t->flags[id] & TOK_F_SPECIAL);
}

const char *coli_tokenizer_token_text(const coli_tokenizer *t, int id)
{
	return id >= 0 && id < t->n_ids ? t->text[id] : NULL;
}

const uint8_t *coli_tokenizer_token_bytes(const coli_tokenizer *t, int id, size_t *len)
{
	if (id < 0 || id >= t->n_ids || !t->text[id] || (t->flags[id] & TOK_F_ADDED))
		return NULL;
	*len = t->text_len[id];
	return (const uint8_t *)t->text[id];
}

const char *coli_tokenizer_chat_template(const coli_tokenizer *t)
{
	return t->chat_template;
}

const char *coli_tokenizer_chat_template_tool_use(const coli_tokenizer *t)
{
	return t->chat_template_tool_use;
}
