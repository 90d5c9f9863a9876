/* grammar_regex.c - the `pattern` subset, compiled to a Thompson NFA.
 *
 * Subset (anything else is an error naming it): literals (ASCII), `.`,
 * classes `[...]`/`[^...]` with ranges, escapes `\d \D \w \W \s \S` and
 * `\` + punctuation, groups `(...)`/`(?:...)`, `|`, quantifiers `* + ?
 * {n} {n,} {n,m}` (m <= 64), `^` only first and `$` only last. Like JSON
 * Schema, a pattern without `^`/`$` may match anywhere in the string.
 * Matching runs on code points: ASCII ones are themselves, every non-ASCII
 * one is the single symbol GRE_NONASCII. Classes that Python's `re` would
 * extend to non-ASCII letters/digits/spaces (\w, \d, \s and negations) are
 * kept to ASCII here, which only narrows what is generated. */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "grammar_impl.h"

enum { RX_CLASS = 1, RX_CAT, RX_ALT, RX_REP, RX_EMPTY };

typedef struct rx {
	int kind;
	uint64_t cls[2];
	int nonascii;
	int a, b;          /* CAT/ALT children; REP: a = child */
	int min, max;      /* REP; max -1: unbounded */
} rx;

typedef struct rparse {
	const char *p, *end;
	rx node[1024];
	int n;
	gregex *re;
	const char *what;
	coli_err *err;
	int failed;
} rparse;

static int fail(rparse *r, const char *msg)
{
	if (!r->failed)
		coli_err_set(r->err, -EINVAL, "%s: %s", r->what, msg);
	r->failed = 1;
	return -1;
}

static int rx_new(rparse *r, int kind)
{
	if (r->n >= (int)(sizeof r->node / sizeof r->node[0]))
		return fail(r, "pattern too long");
	rx *x = &r->node[r->n];
	memset(x, 0, sizeof *x);
	x->kind = kind;
	return r->n++;
}

static void cls_add(uint64_t *c, int lo, int hi)
{
	for (int i = lo; i <= hi && i < 128; i++)
		c[i >> 6] |= 1ULL << (i & 63);
}

/* \d \w \s and friends into c; returns 1 when the escape was a class. */
static int cls_escape(char e, uint64_t *c, int *neg)
{
	uint64_t t[2] = { 0, 0 };
	switch (e | 0x20) {
	case 'd': cls_add(t, '0', '9'); break;
	case 'w': cls_add(t, '0', '9'); cls_add(t, 'A', 'Z'); cls_add(t, 'a', 'z'); cls_add(t, '_', '_'); break;
	case 's': cls_add(t, ' ', ' '); cls_add(t, '\t', '\r'); break;
	default: return 0;
	}
	*neg = e >= 'A' && e <= 'Z';
	if (*neg) {
		t[0] = ~t[0];
		t[1] = ~t[1];
	}
	c[0] |= t[0];
	c[1] |= t[1];
	return 1;
}

static int escape_char(rparse *r, char e)
{
	if (strchr("\\/.^$|?*+()[]{}-\"'", e))
		return (unsigned char)e;
	if (e == 'n')
		return '\n';
	if (e == 't')
		return '\t';
	return fail(r, "unsupported escape in pattern (supported: \\d \\D \\w \\W \\s \\S \\n \\t and "
		    "escaped punctuation)");
}

static int parse_class(rparse *r)
{
	int x = rx_new(r, RX_CLASS);
	if (x < 0)
		return -1;
	uint64_t c[2] = { 0, 0 };
	int neg = 0, shorthand = 0;
	if (r->p < r->end && *r->p == '^') {
		neg = 1;
		r->p++;
	}
	int first = 1;
	while (r->p < r->end && (*r->p != ']' || first)) {
		first = 0;
		int lo = (unsigned char)*r->p++;
		if (lo >= 0x80)
			return fail(r, "non-ASCII characters in patterns are not supported");
		if (lo == '\\') {
			if (r->p >= r->end)
				return fail(r, "pattern ends inside a class");
			int n2 = 0;
			if (cls_escape(*r->p, c, &n2)) {
				r->p++;
				shorthand = 1;
				continue;
			}
			if ((lo = escape_char(r, *r->p++)) < 0)
				return -1;
		}
		int hi = lo;
		if (r->p + 1 < r->end && r->p[0] == '-' && r->p[1] != ']') {
			r->p++;
			hi = (unsigned char)*r->p++;
			if (hi == '\\') {
				if (r->p >= r->end || (hi = escape_char(r, *r->p++)) < 0)
					return fail(r, "bad range in a class");
			}
			if (hi >= 0x80 || hi < lo)
				return fail(r, "bad range in a class");
		}
		cls_add(c, lo, hi);
	}
	if (r->p >= r->end)
		return fail(r, "unterminated class in pattern");
	r->p++;
	rx *n = &r->node[x];
	n->cls[0] = neg ? ~c[0] : c[0];
	n->cls[1] = neg ? ~c[1] : c[1];
	/* [^...] takes every non-ASCII character, unless it excluded a
	 * shorthand class that Python extends beyond ASCII */
	n->nonascii = neg && !shorthand;
	return x;
}

static int parse_alt(rparse *r);

static int parse_atom(rparse *r)
{
	char ch = *r->p++;
	int x;
	switch (ch) {
	case '(':
		if (r->p + 1 < r->end && r->p[0] == '?') {
			if (r->p[1] != ':')
				return fail(r, "only (?:...) groups are supported (no lookaround, flags or names)");
			r->p += 2;
		}
		x = parse_alt(r);
		if (x < 0)
			return -1;
		if (r->p >= r->end || *r->p != ')')
			return fail(r, "unbalanced parenthesis in pattern");
		r->p++;
		return x;
	case '[':
		return parse_class(r);
	case '.':
		if ((x = rx_new(r, RX_CLASS)) < 0)
			return -1;
		cls_add(r->node[x].cls, 0, 127);
		r->node[x].cls[0] &= ~(1ULL << '\n');
		r->node[x].nonascii = 1;
		return x;
	case '^':
	case '$':
		return fail(r, "^ and $ are supported only at the start and the end of a pattern");
	case ')':
	case '*':
	case '+':
	case '?':
	case '{':
		return fail(r, "misplaced quantifier or parenthesis in pattern");
	default:
		break;
	}
	if ((unsigned char)ch >= 0x80)
		return fail(r, "non-ASCII characters in patterns are not supported");
	if ((x = rx_new(r, RX_CLASS)) < 0)
		return -1;
	if (ch == '\\') {
		if (r->p >= r->end)
			return fail(r, "pattern ends with a backslash");
		int neg = 0;
		if (cls_escape(*r->p, r->node[x].cls, &neg)) {
			r->p++;
			return x;
		}
		int c = escape_char(r, *r->p++);
		if (c < 0)
			return -1;
		ch = (char)c;
	}
	cls_add(r->node[x].cls, (unsigned char)ch, (unsigned char)ch);
	return x;
}

static int parse_int(rparse *r, int *out)
{
	int v = 0, any = 0;
	while (r->p < r->end && *r->p >= '0' && *r->p <= '9' && v < 100000) {
		v = v * 10 + (*r->p++ - '0');
		any = 1;
	}
	*out = v;
	return any;
}

static int parse_repeat(rparse *r)
{
	int x = parse_atom(r);
	while (x >= 0 && r->p < r->end && strchr("*+?{", *r->p)) {
		int lo = 0, hi = -1;
		char q = *r->p++;
		if (q == '+')
			lo = 1;
		else if (q == '?')
			hi = 1;
		else if (q == '{') {
			if (!parse_int(r, &lo))
				return fail(r, "bad {n,m} quantifier in pattern");
			hi = lo;
			if (r->p < r->end && *r->p == ',') {
				r->p++;
				if (!parse_int(r, &hi))
					hi = -1;
			}
			if (r->p >= r->end || *r->p != '}' || (hi >= 0 && hi < lo))
				return fail(r, "bad {n,m} quantifier in pattern");
			r->p++;
			if (lo > 64 || hi > 64)
				return fail(r, "repetition counts above 64 are not supported in patterns");
		}
		if (r->p < r->end && (*r->p == '?' || *r->p == '+'))
			return fail(r, "lazy and possessive quantifiers are not supported in patterns");
		int rep = rx_new(r, RX_REP);
		if (rep < 0)
			return -1;
		r->node[rep].a = x;
		r->node[rep].min = lo;
		r->node[rep].max = hi;
		x = rep;
	}
	return x;
}

static int parse_cat(rparse *r)
{
	int x = rx_new(r, RX_EMPTY);
	while (x >= 0 && r->p < r->end && *r->p != '|' && *r->p != ')') {
		int y = parse_repeat(r);
		if (y < 0)
			return -1;
		int c = rx_new(r, RX_CAT);
		if (c < 0)
			return -1;
		r->node[c].a = x;
		r->node[c].b = y;
		x = c;
	}
	return x;
}

static int parse_alt(rparse *r)
{
	int x = parse_cat(r);
	while (x >= 0 && r->p < r->end && *r->p == '|') {
		r->p++;
		int y = parse_cat(r);
		if (y < 0)
			return -1;
		int a = rx_new(r, RX_ALT);
		if (a < 0)
			return -1;
		r->node[a].a = x;
		r->node[a].b = y;
		x = a;
	}
	return x;
}

/* NFA construction backwards: gen(x, next) returns a state that matches x
 * and then continues at next. */
static int st_new(rparse *r)
{
	gregex *re = r->re;
	if (re->n >= GRAMMAR_RE_STATES)
		return fail(r, "pattern too complex (more than 256 automaton states)");
	gre_state *s = &re->st[re->n];
	memset(s, 0, sizeof *s);
	s->next = s->eps[0] = s->eps[1] = -1;
	return re->n++;
}

static int gen(rparse *r, int x, int next)
{
	const rx *n = &r->node[x];
	int s, a;
	switch (n->kind) {
	case RX_EMPTY:
		return next;
	case RX_CLASS:
		if ((s = st_new(r)) < 0)
			return -1;
		r->re->st[s].consumes = 1;
		r->re->st[s].cls[0] = n->cls[0];
		r->re->st[s].cls[1] = n->cls[1];
		r->re->st[s].nonascii = (uint8_t)n->nonascii;
		r->re->st[s].next = (int16_t)next;
		return s;
	case RX_CAT:
		a = gen(r, n->b, next);
		return a < 0 ? -1 : gen(r, n->a, a);
	case RX_ALT:
		if ((s = st_new(r)) < 0)
			return -1;
		if ((a = gen(r, n->a, next)) < 0)
			return -1;
		r->re->st[s].eps[0] = (int16_t)a;
		if ((a = gen(r, n->b, next)) < 0)
			return -1;
		r->re->st[s].eps[1] = (int16_t)a;
		return s;
	default: /* RX_REP */
		break;
	}
	int tail = next;
	if (n->max < 0) {
		/* x* : loop state */
		if ((s = st_new(r)) < 0)
			return -1;
		if ((a = gen(r, n->a, s)) < 0)
			return -1;
		r->re->st[s].eps[0] = (int16_t)a;
		r->re->st[s].eps[1] = (int16_t)next;
		tail = s;
	} else {
		for (int i = n->min; i < n->max; i++) {
			/* optional copies: x? x? ... */
			if ((s = st_new(r)) < 0)
				return -1;
			if ((a = gen(r, n->a, tail)) < 0)
				return -1;
			r->re->st[s].eps[0] = (int16_t)a;
			r->re->st[s].eps[1] = (int16_t)next;
			tail = s;
		}
	}
	for (int i = 0; i < n->min; i++)
		if ((tail = gen(r, n->a, tail)) < 0)
			return -1;
	return tail;
}

static void closure_of(gregex *re, int s, gbits *out)
{
	if (s < 0 || gbits_has(out, s))
		return;
	gbits_set(out, s);
	closure_of(re, re->st[s].eps[0], out);
	closure_of(re, re->st[s].eps[1], out);
}

int gregex_compile(const char *pattern, gregex *re, const char *what, coli_err *err)
{
	memset(re, 0, sizeof *re);
	rparse *r = calloc(1, sizeof *r);
	re->st = calloc(GRAMMAR_RE_STATES, sizeof *re->st);
	if (!r || !re->st) {
		free(r);
		free(re->st);
		re->st = NULL;
		return coli_err_set(err, -ENOMEM, "out of memory");
	}
	size_t len = strlen(pattern);
	r->p = pattern;
	r->end = pattern + len;
	r->re = re;
	r->what = what;
	r->err = err;
	int anchor_start = len > 0 && pattern[0] == '^';
	int anchor_end = len > 0 && pattern[len - 1] == '$' && (len < 2 || pattern[len - 2] != '\\');
	if (anchor_start)
		r->p++;
	if (anchor_end)
		r->end--;
	int rc = -EINVAL;
	int x = parse_alt(r);
	if (x >= 0 && r->p != r->end)
		x = fail(r, "unbalanced parenthesis in pattern");
	/* "^a|b$" anchors only its outer alternatives */
	if (x >= 0 && r->node[x].kind == RX_ALT && (anchor_start || anchor_end))
		x = fail(r, "an anchored pattern with a top-level | is not supported (group the alternatives)");
	/* unanchored ends: .* around the pattern */
	int any = -1;
	if (x >= 0 && (!anchor_start || !anchor_end) && (any = rx_new(r, RX_CLASS)) >= 0) {
		cls_add(r->node[any].cls, 0, 127);
		r->node[any].nonascii = 1;
	}
	int star = any >= 0 ? rx_new(r, RX_REP) : -1;
	if (star >= 0) {
		r->node[star].a = any;
		r->node[star].max = -1;
	}
	if (x >= 0 && !anchor_start && star >= 0) {
		int c = rx_new(r, RX_CAT);
		if (c >= 0) {
			r->node[c].a = star;
			r->node[c].b = x;
		}
		x = c;
	}
	if (x >= 0 && !anchor_end && star >= 0) {
		int c = rx_new(r, RX_CAT);
		if (c >= 0) {
			r->node[c].a = x;
			r->node[c].b = star;
		}
		x = c;
	}
	int fin = x >= 0 ? st_new(r) : -1;
	int start = fin >= 0 ? gen(r, x, fin) : -1;
	if (start >= 0) {
		re->final = fin;
		re->closure = calloc((size_t)re->n, sizeof *re->closure);
		if (!re->closure) {
			coli_err_set(err, -ENOMEM, "out of memory");
			rc = -ENOMEM;
		} else {
			for (int s = 0; s < re->n; s++)
				closure_of(re, s, &re->closure[s]);
			re->start = re->closure[start];
			rc = 0;
		}
	}
	free(r);
	if (rc)
		gregex_free(re);
	return rc;
}

void gregex_free(gregex *re)
{
	free(re->st);
	free(re->closure);
	memset(re, 0, sizeof *re);
}

int gregex_step(const gregex *re, const gbits *in, int sym, gbits *out)
{
	memset(out, 0, sizeof *out);
	int any = 0;
	for (int w = 0; w < GRAMMAR_RE_STATES / 64; w++) {
		uint64_t bits = in->w[w];
		while (bits) {
			int s = w * 64 + __builtin_ctzll(bits);
			bits &= bits - 1;
			const gre_state *st = &re->st[s];
			if (!st->consumes)
				continue;
			int ok = sym == GRE_NONASCII ? st->nonascii : (int)(st->cls[sym >> 6] >> (sym & 63)) & 1;
			if (!ok)
				continue;
			const gbits *c = &re->closure[st->next];
			for (int k = 0; k < GRAMMAR_RE_STATES / 64; k++)
				out->w[k] |= c->w[k];
			any = 1;
		}
	}
	return any;
}
