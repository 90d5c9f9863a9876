/* tokenizer_pretok.c - normalization (utf8proc) and pre-tokenization
 * (PCRE2) of the text between added tokens.
 *
 * Patterns in tokenizer.json are written for Oniguruma (the Rust
 * reference); PCRE2 with UTF+UCP agrees on the constructs real files use
 * except \s: Oniguruma's \s is the Unicode White_Space property (it
 * includes U+0085), PCRE2's is Z + ASCII space controls. We rewrite \s and
 * \S to \p{White_Space} / \P{White_Space}, as the JS reference does. */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

#include "tokenizer_impl.h"
#include "util_array.h"

pcre2_code *tok_regex_compile(const char *pattern, int literal, coli_err *err)
{
	size_t n = strlen(pattern);
	char *tr = malloc(n * 8 + 1);
	if (!tr) {
		coli_err_set(err, -ENOMEM, "out of memory");
		return NULL;
	}
	size_t o = 0;
	for (size_t i = 0; i < n; i++) {
		if (!literal && pattern[i] == '\\' && i + 1 < n) {
			char c = pattern[i + 1];
			if (c == 's' || c == 'S') {
				memcpy(tr + o, c == 's' ? "\\p{White_Space}" : "\\P{White_Space}", 15);
				o += 15;
			} else {
				tr[o++] = '\\';
				tr[o++] = c;
			}
			i++;
			continue;
		}
		tr[o++] = pattern[i];
	}
	tr[o] = '\0';
	int ec;
	PCRE2_SIZE eo;
	/* PCRE2 refuses UCP with LITERAL (a literal has no classes anyway) */
	uint32_t opts = PCRE2_UTF | PCRE2_NO_UTF_CHECK | (literal ? PCRE2_LITERAL : PCRE2_UCP);
	pcre2_code *re = pcre2_compile((PCRE2_SPTR)tr, o, opts, &ec, &eo, NULL);
	if (!re) {
		PCRE2_UCHAR msg[256];
		pcre2_get_error_message(ec, msg, sizeof msg);
		coli_err_set(err, -EINVAL, "regex /%s/ does not compile at offset %zu: %s", pattern,
			     (size_t)eo, (char *)msg);
	} else {
		/* JIT is an optimisation only: without it matching is the same */
		(void)pcre2_jit_compile(re, PCRE2_JIT_COMPLETE);
	}
	free(tr);
	return re;
}

int tok_normalize(const coli_tokenizer *t, const char *s, size_t n, char **out, size_t *out_len,
		  coli_err *err)
{
	char *cur = malloc(n + 1);
	if (!cur)
		return coli_err_set(err, -ENOMEM, "out of memory");
	memcpy(cur, s, n);
	cur[n] = '\0';
	size_t len = n;
	for (int i = 0; i < t->n_norm && len > 0; i++) {
		utf8proc_option_t o = UTF8PROC_STABLE;
		switch (t->norm[i]) {
		case TOK_NORM_NFC: o |= UTF8PROC_COMPOSE; break;
		case TOK_NORM_NFD: o |= UTF8PROC_DECOMPOSE; break;
		case TOK_NORM_NFKC: o |= UTF8PROC_COMPOSE | UTF8PROC_COMPAT; break;
		case TOK_NORM_NFKD: o |= UTF8PROC_DECOMPOSE | UTF8PROC_COMPAT; break;
		}
		utf8proc_uint8_t *dst = NULL;
		utf8proc_ssize_t r = utf8proc_map((const utf8proc_uint8_t *)cur, (utf8proc_ssize_t)len, &dst, o);
		free(cur);
		if (r < 0) {
			*out = NULL;
			return coli_err_set(err, -EINVAL, "normalization failed: %s", utf8proc_errmsg(r));
		}
		cur = (char *)dst;
		len = (size_t)r;
	}
	*out = cur;
	*out_len = len;
	return 0;
}

static int spans_push(tok_spans *sp, size_t off, size_t len)
{
	if (util_array_grow(&sp->v, &sp->cap, sp->n + 2, 64))
		return -ENOMEM;
	sp->v[sp->n++] = off;
	sp->v[sp->n++] = len;
	return 0;
}

/* Run one regex over s[off..off+len) as its own subject, calling back for
 * each match/gap segment in order. */
static int regex_segments(const pcre2_code *re, pcre2_match_data *md, const char *s, size_t off,
			  size_t len, int invert, int behavior, tok_spans *out)
{
	const char *subj = s + off;
	size_t pos = 0, prev = 0;
	/* pending piece for the merge behaviors: [pstart, pend) */
	size_t pstart = 0, pend = 0;
	int have = 0, pend_is_match = 0;
	int rc = 0;
#define EMIT(a, b) do { if ((b) > (a) && (rc = spans_push(out, off + (a), (b) - (a))) < 0) return rc; } while (0)
	for (;;) {
		size_t ms, me;
		int found = 0;
		while (pos <= len) {
			int r = pcre2_match(re, (PCRE2_SPTR)subj, len, pos, PCRE2_NO_UTF_CHECK, md, NULL);
			if (r == PCRE2_ERROR_JIT_STACKLIMIT) /* long runs: the interpreter uses the heap */
				r = pcre2_match(re, (PCRE2_SPTR)subj, len, pos,
						PCRE2_NO_UTF_CHECK | PCRE2_NO_JIT, md, NULL);
			if (r == PCRE2_ERROR_NOMATCH)
				break;
			if (r < 0)
				return -EINVAL;
			PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
			ms = ov[0];
			me = ov[1];
			if (me > ms) {
				found = 1;
				break;
			}
			/* empty match: step one character and look again */
			pos = ms + 1;
			while (pos < len && ((uint8_t)subj[pos] & 0xC0) == 0x80)
				pos++;
		}
		if (!found)
			ms = me = len;
		/* segments: gap [prev, ms) then match [ms, me) */
		for (int k = 0; k < 2; k++) {
			size_t a = k ? ms : prev, b = k ? me : ms;
			if (b <= a)
				continue;
			int is_match = k ^ invert;
			switch (behavior) {
			case TOK_SPLIT_ISOLATED:
				EMIT(a, b);
				break;
			case TOK_SPLIT_REMOVED:
				if (!is_match)
					EMIT(a, b);
				break;
			case TOK_SPLIT_MERGED_PREV:
				/* a match joins the piece before it unless that
				 * piece is itself a match */
				if (is_match && have && !pend_is_match) {
					pend = b;
					pend_is_match = 1;
				} else {
					if (have)
						EMIT(pstart, pend);
					pstart = a, pend = b, have = 1, pend_is_match = is_match;
				}
				break;
			case TOK_SPLIT_MERGED_NEXT:
				/* a match joins the piece after it unless that piece
				 * is itself a match */
				if (have && pend_is_match && !is_match) {
					pend = b;
					pend_is_match = 0;
				} else {
					if (have)
						EMIT(pstart, pend);
					pstart = a, pend = b, have = 1, pend_is_match = is_match;
				}
				break;
			case TOK_SPLIT_CONTIGUOUS:
				if (have && is_match && pend_is_match) {
					pend = b;
				} else {
					if (have)
						EMIT(pstart, pend);
					pstart = a, pend = b, have = 1, pend_is_match = is_match;
				}
				break;
			}
		}
		if (!found)
			break;
		prev = pos = me;
	}
	if (have)
		EMIT(pstart, pend);
#undef EMIT
	return 0;
}

/* Copy s with a space before every piece that does not start with one
 * (ByteLevel add_prefix_space), rewriting the spans. */
static int prefix_spaces(const char *s, tok_spans *sp, char **rebuilt)
{
	size_t total = 0;
	for (size_t i = 0; i < sp->n; i += 2)
		total += sp->v[i + 1] + 1;
	char *nb = malloc(total + 1);
	if (!nb)
		return -ENOMEM;
	size_t o = 0;
	for (size_t i = 0; i < sp->n; i += 2) {
		size_t off = sp->v[i], len = sp->v[i + 1];
		size_t start = o;
		if (s[off] != ' ')
			nb[o++] = ' ';
		memcpy(nb + o, s + off, len);
		o += len;
		sp->v[i] = start;
		sp->v[i + 1] = o - start;
	}
	free(*rebuilt);
	*rebuilt = nb;
	return 0;
}

int tok_pretokenize(const coli_tokenizer *t, const char *s, size_t n, char **rebuilt,
		    tok_spans *spans, coli_err *err)
{
	*rebuilt = NULL;
	tok_spans cur = { 0 }, next = { 0 };
	int rc = 0;
	pcre2_match_data *md = NULL;
	if ((rc = spans_push(&cur, 0, n)) < 0)
		goto out;
	for (int i = 0; i < t->n_pre; i++) {
		const tok_pretok *p = &t->pre[i];
		const char *base = *rebuilt ? *rebuilt : s;
		if (p->kind == TOK_PRE_BYTELEVEL && p->add_prefix_space) {
			if ((rc = prefix_spaces(base, &cur, rebuilt)) < 0)
				goto out;
			base = *rebuilt;
		}
		if (!p->re)
			continue;
		if (!md && !(md = pcre2_match_data_create(4, NULL))) {
			rc = -ENOMEM;
			goto out;
		}
		next.n = 0;
		int beh = p->kind == TOK_PRE_BYTELEVEL ? TOK_SPLIT_ISOLATED : p->behavior;
		for (size_t k = 0; k < cur.n; k += 2)
			if ((rc = regex_segments(p->re, md, base, cur.v[k], cur.v[k + 1],
						 p->invert, beh, &next)) < 0)
				goto out;
		tok_spans tmp = cur;
		cur = next;
		next = tmp;
	}
	for (size_t k = 0; k < cur.n; k += 2)
		if ((rc = spans_push(spans, cur.v[k], cur.v[k + 1])) < 0)
			goto out;
out:
	pcre2_match_data_free(md);
	free(cur.v);
	free(next.v);
	if (rc < 0) {
		free(*rebuilt);
		*rebuilt = NULL;
		return coli_err_set(err, rc, rc == -ENOMEM ? "out of memory" : "pre-tokenizer regex failed (match limit)");
	}
	return 0;
}
