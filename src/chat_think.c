/* chat_think.c - see chat_think.h. */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "chat_think.h"

enum { TH_START, TH_IN, TH_OUT };

void chat_think_init(chat_think *t, int open)
{
	memset(t, 0, sizeof *t);
	t->state = open ? TH_IN : TH_START;
	t->skip_nl = open;
}

void chat_think_free(chat_think *t)
{
	util_buf_free(&t->held);
}

/* The longest tail of s[0..n) that is a proper prefix of m. */
static size_t partial_tail(const char *s, size_t n, const char *m)
{
	size_t ml = strlen(m);
	for (size_t k = ml - 1 < n ? ml - 1 : n; k > 0; k--)
		if (!memcmp(s + n - k, m, k))
			return k;
	return 0;
}

static void emit(chat_think *t, int reasoning, const char *s, size_t n, chat_think_sink fn, void *ctx)
{
	if (t->skip_nl) {
		while (n && *s == '\n') {
			s++;
			n--;
		}
		if (n)
			t->skip_nl = 0;
	}
	if (n)
		fn(ctx, reasoning, s, n);
}

static void consume(chat_think *t, size_t n)
{
	util_buf_consume(&t->held, n);
}

void chat_think_push(chat_think *t, const char *text, size_t len, chat_think_sink fn, void *ctx)
{
	if (util_buf_add(&t->held, text, len)) {
		/* out of memory: route what is held and this piece as they
		 * are (a marker cut across pieces may then show as text) */
		t->oom = 1;
		chat_think_flush(t, fn, ctx);
		emit(t, t->state == TH_IN, text, len, fn, ctx);
		return;
	}
	for (;;) {
		const char *h = t->held.p;
		size_t n = t->held.len;
		if (t->state == TH_OUT) {
			emit(t, 0, h, n, fn, ctx);
			util_buf_clear(&t->held);
			return;
		}
		if (t->state == TH_START) {
			/* does the answer open a thinking block? (leading blanks allowed) */
			size_t ws = 0;
			while (ws < n && (h[ws] == '\n' || h[ws] == ' '))
				ws++;
			size_t rest = n - ws;
			if (rest >= 7 && !memcmp(h + ws, "<think>", 7)) {
				t->state = TH_IN;
				t->seen = 1;
				t->skip_nl = 1;
				consume(t, ws + 7);
				continue;
			}
			if (rest < 7 && !memcmp(h + ws, "<think>", rest))
				return; /* undecided */
			t->state = TH_OUT;
			continue;
		}
		/* TH_IN */
		t->seen = 1;
		const char *end = NULL;
		for (size_t i = 0; i + 8 <= n && !end; i++)
			if (!memcmp(h + i, "</think>", 8))
				end = h + i;
		if (end) {
			size_t e = (size_t)(end - h);
			emit(t, 1, h, e, fn, ctx);
			t->state = TH_OUT;
			t->skip_nl = 1;
			consume(t, e + 8);
			continue;
		}
		size_t keep = partial_tail(h, n, "</think>");
		emit(t, 1, h, n - keep, fn, ctx);
		consume(t, n - keep);
		return;
	}
}

void chat_think_flush(chat_think *t, chat_think_sink fn, void *ctx)
{
	emit(t, t->state == TH_IN, t->held.p ? t->held.p : "", t->held.len, fn, ctx);
	util_buf_clear(&t->held);
}

int chat_think_inside(const chat_think *t)
{
	return t->state == TH_IN;
}

int chat_think_split(const char *text, size_t len, const char **r, size_t *rlen, const char **a,
		     size_t *alen)
{
	const char *end = NULL;
	for (size_t i = 0; i + 8 <= len && !end; i++)
		if (!memcmp(text + i, "</think>", 8))
			end = text + i;
	if (!end)
		return 0;
	const char *s = text, *e = end;
	size_t ws = 0;
	while (s + ws < e && (s[ws] == '\n' || s[ws] == ' '))
		ws++;
	if ((size_t)(e - s) - ws >= 7 && !memcmp(s + ws, "<think>", 7))
		s += ws + 7;   /* the model opened the block itself */
	while (s < e && *s == '\n')
		s++;
	*r = s;
	*rlen = (size_t)(e - s);
	s = end + 8;
	e = text + len;
	while (s < e && *s == '\n')
		s++;
	*a = s;
	*alen = (size_t)(e - s);
	return 1;
}
