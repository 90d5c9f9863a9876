/* chat_jinja_lex.c - the Jinja lexer with Hugging Face's whitespace
 * settings: trim_blocks (the newline after a block or comment tag goes),
 * lstrip_blocks (spaces and tabs before a block or comment tag on its own
 * line go), "-" on a tag strips all whitespace on that side, "+" keeps
 * it. As in Jinja, newlines are normalised to "\n" and one trailing
 * newline of the template is dropped; a tag's closer only counts outside
 * brackets, so {{ {'a': {'b': 1}} }} reads as one expression. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chat_jinja.h"
#include "util_array.h"
#include "util_unicode.h"

/* Python's str.isspace() for the code point at s; its length in *len. */
int jj_py_space(const char *s, size_t n, size_t *len)
{
	uint32_t cp;
	int r = unicode_utf8_next((const uint8_t *)s, n, &cp);
	if (r <= 0)
		return 0;
	*len = (size_t)r;
	if (cp < 0x80)
		return (cp >= 9 && cp <= 13) || (cp >= 0x1c && cp <= 0x20);
	return cp == 0x85 || cp == 0xa0 || cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200a) ||
	       cp == 0x2028 || cp == 0x2029 || cp == 0x202f || cp == 0x205f || cp == 0x3000;
}

static size_t rstrip_len(const char *s, size_t n)
{
	size_t keep = 0, i = 0, l;
	while (i < n) {
		if (jj_py_space(s + i, n - i, &l)) {
			i += l;
		} else {
			size_t step = 1;
			while (i + step < n && ((unsigned char)s[i + step] & 0xC0) == 0x80)
				step++;
			i += step;
			keep = i;
		}
	}
	return keep;
}

static size_t skip_ws(const char *s, size_t n, size_t i)
{
	size_t l;
	while (i < n && jj_py_space(s + i, n - i, &l))
		i += l;
	return i;
}

typedef struct lexer {
	const char *s;
	size_t n, pos;
	int line;
	jj_token *t;
	size_t nt, cap;
	coli_err *err;
} lexer;

static int push(lexer *L, int type, const char *s, size_t n)
{
	if (util_array_grow(&L->t, &L->cap, L->nt + 1, 256))
		return coli_err_set(L->err, -ENOMEM, "out of memory");
	jj_token *k = &L->t[L->nt++];
	memset(k, 0, sizeof *k);
	k->type = type;
	k->line = L->line;
	k->s = malloc(n + 1);
	if (!k->s)
		return coli_err_set(L->err, -ENOMEM, "out of memory");
	memcpy(k->s, s, n);
	k->s[n] = '\0';
	k->n = n;
	return 0;
}

static int lines_in(const char *s, size_t n)
{
	int k = 0;
	for (size_t i = 0; i < n; i++)
		k += s[i] == '\n';
	return k;
}

/* A string literal, decoded as Python's unicode-escape does. */
static int lex_string(lexer *L)
{
	char q = L->s[L->pos++];
	util_buf b = { 0 };
	while (L->pos < L->n && L->s[L->pos] != q) {
		char c = L->s[L->pos++];
		if (c != '\\' || L->pos >= L->n) {
			L->line += c == '\n';
			util_buf_add(&b, &c, 1);
			continue;
		}
		c = L->s[L->pos++];
		const char *simple = strchr("nrtabfv\\'\"", c);
		if (simple && c) {
			static const char out[] = "\n\r\t\a\b\f\v\\'\"";
			util_buf_add(&b, &out[simple - "nrtabfv\\'\""], 1);
		} else if (c == 'x' || c == 'u' || c == 'U') {
			int w = c == 'x' ? 2 : c == 'u' ? 4 : 8;
			uint32_t cp = 0;
			for (int k = 0; k < w; k++, L->pos++) {
				char h = L->pos < L->n ? L->s[L->pos] : 0;
				int d = h >= '0' && h <= '9' ? h - '0' : h >= 'a' && h <= 'f' ? h - 'a' + 10
					: h >= 'A' && h <= 'F' ? h - 'A' + 10 : -1;
				if (d < 0) {
					free(b.p);
					return coli_err_set(L->err, -EINVAL, "template line %d: bad \\%c escape", L->line, c);
				}
				cp = cp * 16 + (uint32_t)d;
			}
			uint8_t u[4];
			int k = unicode_utf8_put(cp, u);
			util_buf_add(&b, (const char *)u, k > 0 ? (size_t)k : 0);
		} else if (c == '\n') {
			L->line++;
		} else if (c >= '0' && c <= '7') {
			unsigned v = (unsigned)(c - '0');
			for (int k = 0; k < 2 && L->pos < L->n && L->s[L->pos] >= '0' && L->s[L->pos] <= '7'; k++)
				v = v * 8 + (unsigned)(L->s[L->pos++] - '0');
			uint8_t u[4];
			int k = unicode_utf8_put(v, u);
			util_buf_add(&b, (const char *)u, k > 0 ? (size_t)k : 0);
		} else {
			util_buf_add(&b, "\\", 1);
			util_buf_add(&b, &c, 1);
		}
	}
	if (L->pos >= L->n) {
		free(b.p);
		return coli_err_set(L->err, -EINVAL, "template line %d: unterminated string", L->line);
	}
	L->pos++;
	int rc = push(L, JT_STRING, b.p ? b.p : "", b.len);
	free(b.p);
	return rc || b.oom ? (rc ? rc : coli_err_set(L->err, -ENOMEM, "out of memory")) : 0;
}

/* The tokens inside a tag, up to its closer ("}}" or "%}"). Returns the
 * position after the closer and its whitespace effect; sets *strip_after
 * (1: "-" closer, all whitespace after goes) and *trim (plain "%}"). */
static int lex_tag(lexer *L, int is_block, int *strip_after, int *plus)
{
	const char *close = is_block ? "%}" : "}}";
	int depth = 0;
	for (;;) {
		while (L->pos < L->n && strchr(" \t\n\r", L->s[L->pos])) {
			L->line += L->s[L->pos] == '\n';
			L->pos++;
		}
		if (L->pos >= L->n)
			return coli_err_set(L->err, -EINVAL, "template line %d: unclosed %s tag", L->line,
					    is_block ? "{%" : "{{");
		const char *p = L->s + L->pos;
		size_t left = L->n - L->pos;
		if (depth == 0) {
			if ((p[0] == '-' || p[0] == '+') && left >= 3 && !memcmp(p + 1, close, 2)) {
				*strip_after = p[0] == '-';
				*plus = p[0] == '+';
				L->pos += 3;
				return 0;
			}
			if (left >= 2 && !memcmp(p, close, 2)) {
				L->pos += 2;
				return 0;
			}
		}
		char c = p[0];
		int rc;
		if (c == '\'' || c == '"') {
			rc = lex_string(L);
		} else if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_') {
			size_t k = 1;
			while (k < left && ((p[k] >= 'a' && p[k] <= 'z') || (p[k] >= 'A' && p[k] <= 'Z') ||
					    (p[k] >= '0' && p[k] <= '9') || p[k] == '_'))
				k++;
			rc = push(L, JT_NAME, p, k);
			L->pos += k;
		} else if (c >= '0' && c <= '9') {
			size_t k = 0;
			int is_float = 0;
			while (k < left && ((p[k] >= '0' && p[k] <= '9') || p[k] == '_'))
				k++;
			if (k + 1 < left && p[k] == '.' && p[k + 1] >= '0' && p[k + 1] <= '9') {
				is_float = 1;
				for (k++; k < left && ((p[k] >= '0' && p[k] <= '9') || p[k] == '_'); k++)
					;
			}
			if (k < left && (p[k] == 'e' || p[k] == 'E')) {
				size_t e = k + 1;
				if (e < left && (p[e] == '+' || p[e] == '-'))
					e++;
				if (e < left && p[e] >= '0' && p[e] <= '9') {
					is_float = 1;
					for (k = e; k < left && p[k] >= '0' && p[k] <= '9'; k++)
						;
				}
			}
			char num[64];
			size_t m = 0;
			for (size_t i = 0; i < k && m + 1 < sizeof num; i++)
				if (p[i] != '_')
					num[m++] = p[i];
			num[m] = '\0';
			rc = push(L, is_float ? JT_FLOAT : JT_INT, p, k);
			if (!rc) {
				L->t[L->nt - 1].f = strtod(num, NULL);
				L->t[L->nt - 1].i = strtoll(num, NULL, 10);
			}
			L->pos += k;
		} else {
			static const char *const two[] = { "//", "**", "==", "!=", "<=", ">=", NULL };
			size_t k = 0;
			for (int i = 0; two[i]; i++)
				if (left >= 2 && !memcmp(p, two[i], 2))
					k = 2;
			if (!k && strchr("+-*/%~<>=.,:|()[]{}!", c))
				k = 1;
			if (!k)
				return coli_err_set(L->err, -EINVAL, "template line %d: unexpected character '%c'",
						    L->line, c);
			if (c == '(' || c == '[' || c == '{')
				depth++;
			else if ((c == ')' || c == ']' || c == '}') && depth > 0)
				depth--;
			rc = push(L, JT_OP, p, k);
			L->pos += k;
		}
		if (rc)
			return rc;
	}
}

/* "{% raw %}": returns 1 when the tag at pos (after "{%" and sign) is one. */
static int raw_tag(const char *s, size_t n, size_t i, size_t *after, int *strip)
{
	i = skip_ws(s, n, i);
	if (n - i < 3 || memcmp(s + i, "raw", 3))
		return 0;
	i = skip_ws(s, n, i + 3);
	*strip = 0;
	if (i < n && s[i] == '-') {
		*strip = 1;
		i++;
	}
	if (n - i < 2 || memcmp(s + i, "%}", 2))
		return 0;
	*after = i + 2;
	return 1;
}

static int lex_all(lexer *L)
{
	const char *s = L->s;
	size_t n = L->n;
	int line_starting = 1;
	while (L->pos < n) {
		size_t q = L->pos;
		const char *tag = NULL;
		while (q + 1 < n) {
			if (s[q] == '{' && (s[q + 1] == '{' || s[q + 1] == '%' || s[q + 1] == '#')) {
				tag = s + q;
				break;
			}
			q++;
		}
		size_t tlen = tag ? q - L->pos : n - L->pos;
		char kind = tag ? tag[1] : 0;
		char sign = tag && q + 2 < n ? s[q + 2] : 0;
		if (sign != '-' && sign != '+')
			sign = 0;
		const char *text = s + L->pos;
		if (sign == '-') {
			tlen = rstrip_len(text, tlen);
		} else if (tag && sign != '+' && kind != '{') {
			size_t l = tlen;
			while (l > 0 && text[l - 1] != '\n')
				l--;
			if (l > 0 || line_starting) {
				size_t e = skip_ws(text, tlen, l);
				if (e == tlen)
					tlen = l;
			}
		}
		if (tlen && push(L, JT_TEXT, text, tlen))
			return -ENOMEM;
		L->line += lines_in(s + L->pos, (size_t)((tag ? q : n) - L->pos));
		if (!tag) {
			L->pos = n;
			break;
		}
		L->pos = q + 2 + (sign ? 1 : 0);
		int strip_after = 0, plus = 0, rc;
		size_t after;
		int raw_strip;
		if (kind == '#') {
			const char *e = NULL;
			for (size_t k = L->pos; k + 1 < n; k++)
				if (s[k] == '#' && s[k + 1] == '}') {
					e = s + k;
					break;
				}
			if (!e)
				return coli_err_set(L->err, -EINVAL, "template line %d: unclosed comment", L->line);
			size_t end = (size_t)(e - s);
			L->line += lines_in(s + L->pos, end - L->pos);
			strip_after = end > L->pos && s[end - 1] == '-';
			plus = end > L->pos && s[end - 1] == '+';
			L->pos = end + 2;
			kind = '%';
		} else if (kind == '%' && raw_tag(s, n, L->pos, &after, &raw_strip)) {
			/* the text up to {% endraw %} is data; lstrip_blocks and "-"
			 * apply to the text before the end tag */
			size_t k = raw_strip ? skip_ws(s, n, after) : after, body = k, eb = 0, ee = 0;
			for (; k + 1 < n; k++) {
				if (s[k] != '{' || s[k + 1] != '%')
					continue;
				size_t j = k + 2;
				if (j < n && (s[j] == '-' || s[j] == '+'))
					j++;
				j = skip_ws(s, n, j);
				if (n - j >= 6 && !memcmp(s + j, "endraw", 6)) {
					eb = k;
					ee = j + 6;
					break;
				}
			}
			if (!ee)
				return coli_err_set(L->err, -EINVAL, "template line %d: {%% raw %%} without {%% endraw %%}", L->line);
			size_t rl = eb - body;
			char es = s[eb + 2];
			if (es == '-') {
				rl = rstrip_len(s + body, rl);
			} else if (es != '+') {
				size_t l = rl;
				while (l > 0 && s[body + l - 1] != '\n')
					l--;
				if (skip_ws(s + body, rl, l) == rl)
					rl = l;
			}
			if (rl && push(L, JT_TEXT, s + body, rl))
				return -ENOMEM;
			L->line += lines_in(s + L->pos, eb - L->pos);
			L->pos = skip_ws(s, n, ee);
			if (L->pos < n && (s[L->pos] == '-' || s[L->pos] == '+')) {
				strip_after = s[L->pos] == '-';
				plus = s[L->pos] == '+';
				L->pos++;
			}
			if (n - L->pos < 2 || memcmp(s + L->pos, "%}", 2))
				return coli_err_set(L->err, -EINVAL, "template line %d: bad endraw tag", L->line);
			L->pos += 2;
		} else {
			int is_block = kind == '%';
			if (push(L, is_block ? JT_BLOCK_BEGIN : JT_VAR_BEGIN, "", 0))
				return -ENOMEM;
			if ((rc = lex_tag(L, is_block, &strip_after, &plus)))
				return rc;
			if (push(L, is_block ? JT_BLOCK_END : JT_VAR_END, "", 0))
				return -ENOMEM;
		}
		line_starting = 0;
		if (strip_after) {
			size_t e = skip_ws(s, n, L->pos);
			line_starting = e > L->pos && s[e - 1] == '\n';
			L->line += lines_in(s + L->pos, e - L->pos);
			L->pos = e;
		} else if (kind == '%' && !plus && L->pos < n && s[L->pos] == '\n') {
			L->pos++;
			L->line++;
			line_starting = 1;
		}
	}
	return push(L, JT_EOF, "", 0);
}

int jj_lex(const char *src, jj_token **toks, size_t *n, coli_err *err)
{
	*toks = NULL;
	*n = 0;
	size_t len = strlen(src);
	char *s = malloc(len + 1);
	if (!s)
		return coli_err_set(err, -ENOMEM, "out of memory");
	size_t m = 0;
	for (size_t i = 0; i < len; i++) {
		if (src[i] == '\r') {
			s[m++] = '\n';
			if (i + 1 < len && src[i + 1] == '\n')
				i++;
		} else {
			s[m++] = src[i];
		}
	}
	if (m && s[m - 1] == '\n')
		m--;
	s[m] = '\0';
	lexer L = { .s = s, .n = m, .line = 1, .err = err };
	int rc = lex_all(&L);
	free(s);
	if (rc) {
		if (rc == -ENOMEM && !err->msg[0])
			coli_err_set(err, -ENOMEM, "out of memory");
		jj_tokens_free(L.t, L.nt);
		return rc;
	}
	*toks = L.t;
	*n = L.nt;
	return 0;
}

void jj_tokens_free(jj_token *t, size_t n)
{
	for (size_t i = 0; t && i < n; i++)
		free(t[i].s);
	free(t);
}
