/* server_think.c - reasoning split out of the generated text (pure).
 *
 * A thinking block is "<think>" ... "</think>". It is open from the start
 * when the rendered prompt ended with "<think>" (GLM-5), or the model may
 * open it as its first output (DeepSeek-R1 style). Text inside goes to the
 * reasoning, the rest to the answer. A marker may arrive split across
 * pieces (or as a special token's text): the longest tail that could begin
 * it is held until the next piece decides. As the reference templates do,
 * newlines right after "<think>" and right after "</think>" are dropped. */
#include "config.h"

#include <string.h>

#include "server_internal.h"

enum { TH_START, TH_IN, TH_OUT };

void srv_think_init(srv_think *t, int open)
{
	memset(t, 0, sizeof *t);
	t->state = open ? TH_IN : TH_START;
	t->skip_nl = open;
}

void srv_think_free(srv_think *t)
{
	srv_buf_free(&t->held);
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

static void emit(srv_think *t, srv_buf *to, const char *s, size_t n)
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
		srv_buf_add(to, s, n);
}

void srv_think_push(srv_think *t, const char *text, size_t len, srv_buf *reasoning, srv_buf *answer)
{
	srv_buf_add(&t->held, text, len);
	for (;;) {
		const char *h = t->held.p ? t->held.p : "";
		size_t n = t->held.len;
		if (t->state == TH_OUT) {
			emit(t, answer, h, n);
			srv_buf_clear(&t->held);
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
				srv_buf_consume(&t->held, ws + 7);
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
			emit(t, reasoning, h, (size_t)(end - h));
			t->state = TH_OUT;
			t->skip_nl = 1;
			srv_buf_consume(&t->held, (size_t)(end - h) + 8);
			continue;
		}
		size_t keep = partial_tail(h, n, "</think>");
		emit(t, reasoning, h, n - keep);
		srv_buf_consume(&t->held, n - keep);
		return;
	}
}

void srv_think_flush(srv_think *t, srv_buf *reasoning, srv_buf *answer)
{
	const char *h = t->held.p ? t->held.p : "";
	emit(t, t->state == TH_IN ? reasoning : answer, h, t->held.len);
	srv_buf_clear(&t->held);
}

int srv_think_inside(const srv_think *t)
{
	return t->state == TH_IN;
}
