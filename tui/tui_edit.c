/* tui_edit.c - see tui_edit.h. */
#include "config.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tui_edit.h"
#include "tui_text.h"
#include "util_array.h"

void tui_edit_init(tui_edit *e, size_t max)
{
	memset(e, 0, sizeof *e);
	e->max = max;
}

void tui_edit_free(tui_edit *e)
{
	for (int i = 0; i < e->n_hist; i++)
		free(e->hist[i]);
	free(e->buf);
	free(e->draft);
	size_t max = e->max;
	memset(e, 0, sizeof *e);
	e->max = max;
}

/* Byte i of the text (i < len). */
static char at(const tui_edit *e, size_t i)
{
	return i < e->gap ? e->buf[i] : e->buf[i + (e->gap_end - e->gap)];
}

static int is_cont(char c)
{
	return ((unsigned char)c & 0xC0) == 0x80;
}

static size_t prev_cp(const tui_edit *e, size_t pos)
{
	if (pos == 0)
		return 0;
	pos--;
	while (pos > 0 && is_cont(at(e, pos)))
		pos--;
	return pos;
}

static size_t next_cp(const tui_edit *e, size_t pos)
{
	if (pos >= e->len)
		return e->len;
	pos++;
	while (pos < e->len && is_cont(at(e, pos)))
		pos++;
	return pos;
}

/* Decode the code point at pos; returns its length in bytes. */
static size_t cp_at(const tui_edit *e, size_t pos, uint32_t *cp)
{
	char tmp[4];
	size_t n = 0;
	for (; n < 4 && pos + n < e->len; n++)
		tmp[n] = at(e, pos + n);
	return tui_utf8_next(tmp, n, cp);
}

/* Move the gap so it starts at byte pos of the text. */
static void gap_to(tui_edit *e, size_t pos)
{
	size_t gl = e->gap_end - e->gap;
	if (pos < e->gap)
		memmove(e->buf + pos + gl, e->buf + pos, e->gap - pos);
	else if (pos > e->gap)
		memmove(e->buf + e->gap, e->buf + e->gap_end, pos - e->gap);
	e->gap = pos;
	e->gap_end = pos + gl;
}

/* Make the gap at least n bytes (plus one for a NUL at the end). Growth
 * doubles, so a long paste costs O(1) amortized per byte. */
static int gap_reserve(tui_edit *e, size_t n)
{
	if (e->gap_end - e->gap >= n + 1)
		return 0;
	size_t cap = e->cap;
	if (util_array_grow(&e->buf, &cap, e->len + n + 1, 256))
		return -ENOMEM;
	size_t tail = e->cap - e->gap_end;
	memmove(e->buf + cap - tail, e->buf + e->gap_end, tail);
	e->gap_end = cap - tail;
	e->cap = cap;
	return 0;
}

static void cut(tui_edit *e, size_t from, size_t to)
{
	if (to <= from)
		return;
	gap_to(e, from);
	e->gap_end += to - from;
	e->len -= to - from;
	if (e->cur > to)
		e->cur -= to - from;
	else if (e->cur > from)
		e->cur = from;
}

int tui_edit_insert(tui_edit *e, const char *s, size_t n)
{
	if (e->len + n > e->max)
		return -ENOSPC;
	if (gap_reserve(e, n))
		return -ENOMEM;
	gap_to(e, e->cur);
	memcpy(e->buf + e->gap, s, n);
	e->gap += n;
	e->len += n;
	e->cur += n;
	return 0;
}

const char *tui_edit_text(tui_edit *e)
{
	if (gap_reserve(e, 0))
		return NULL;
	gap_to(e, e->len);
	e->buf[e->len] = 0;
	return e->buf;
}

size_t tui_edit_lines(const tui_edit *e)
{
	size_t n = 0;
	for (size_t i = 0; i < e->len; i++)
		n += at(e, i) == '\n';
	return n;
}

int tui_edit_set(tui_edit *e, const char *s)
{
	size_t all = strlen(s), n = all < e->max ? all : e->max;
	while (n > 0 && n < all && is_cont(s[n]))   /* never keep half a character */
		n--;
	e->len = e->cur = 0;
	e->gap = 0;
	e->gap_end = e->cap;
	return tui_edit_insert(e, s, n);
}

static void history(tui_edit *e, int dir)
{
	int to = e->hist_pos + dir;
	if (to < 0 || to > e->n_hist)
		return;
	if (e->hist_pos == e->n_hist) {
		const char *t = tui_edit_text(e);
		char *d = t ? strdup(t) : NULL;
		if (!d)
			return;
		free(e->draft);
		e->draft = d;
	}
	e->hist_pos = to;
	tui_edit_set(e, to == e->n_hist ? (e->draft ? e->draft : "") : e->hist[to]);
}

static int blank(char c)
{
	return c == ' ' || c == '\t' || c == '\n';
}

void tui_edit_op(tui_edit *e, int op)
{
	size_t p;
	switch (op) {
	case TUI_EDIT_LEFT:
		e->cur = prev_cp(e, e->cur);
		break;
	case TUI_EDIT_RIGHT:
		e->cur = next_cp(e, e->cur);
		break;
	case TUI_EDIT_HOME:
		e->cur = 0;
		break;
	case TUI_EDIT_END:
		e->cur = e->len;
		break;
	case TUI_EDIT_BACKSPACE:
		cut(e, prev_cp(e, e->cur), e->cur);
		break;
	case TUI_EDIT_DELETE:
		cut(e, e->cur, next_cp(e, e->cur));
		break;
	case TUI_EDIT_KILL_END:
		cut(e, e->cur, e->len);
		break;
	case TUI_EDIT_KILL_START:
		cut(e, 0, e->cur);
		break;
	case TUI_EDIT_KILL_WORD:
		/* like a shell: skip blanks left of the cursor, then the word */
		p = e->cur;
		while (p > 0 && blank(at(e, p - 1)))
			p--;
		while (p > 0 && !blank(at(e, p - 1)))
			p--;
		cut(e, p, e->cur);
		break;
	case TUI_EDIT_HIST_PREV:
		history(e, -1);
		break;
	case TUI_EDIT_HIST_NEXT:
		history(e, +1);
		break;
	default:
		break;
	}
}

char *tui_edit_take(tui_edit *e)
{
	const char *t = tui_edit_text(e);
	char *line = t ? strdup(t) : NULL;
	if (!line)
		return NULL;
	if (e->len && (!e->n_hist || strcmp(e->hist[e->n_hist - 1], line))) {
		char *h = strdup(line);
		if (h) {
			if (e->n_hist == TUI_HIST_MAX) {
				free(e->hist[0]);
				memmove(e->hist, e->hist + 1, sizeof(char *) * (TUI_HIST_MAX - 1));
				e->n_hist--;
			}
			e->hist[e->n_hist++] = h;
		}
	}
	e->hist_pos = e->n_hist;
	e->len = e->cur = e->gap = 0;
	e->gap_end = e->cap;
	free(e->draft);
	e->draft = NULL;
	return line;
}

/* Columns a code point takes in the field: a newline shows as one glyph,
 * other controls as a space. */
static int field_width(uint32_t cp, int ascii)
{
	if (cp == '\n' || cp == '\t' || cp < 0x20 || cp == 0x7f)
		return 1;
	return tui_cp_width(cp, ascii);
}

int tui_edit_render(const tui_edit *e, int width, int ascii, const char *nl_glyph, char *out, size_t cap)
{
	if (width < 1)
		width = 1;
	/* first byte shown: walk left from the cursor while the text fits in
	 * width - 1 columns (the cursor's own cell is the last) */
	size_t f = e->cur;
	int cols = 0;
	while (f > 0) {
		size_t p = prev_cp(e, f);
		uint32_t cp;
		cp_at(e, p, &cp);
		int w = field_width(cp, ascii);
		if (cols + w > width - 1)
			break;
		cols += w;
		f = p;
	}
	int cursor = cols;
	/* then the characters from there that fit in the field */
	size_t o = 0, i = f;
	cols = 0;
	char tmp[8];
	while (i < e->len && o + 8 < cap) {
		uint32_t cp;
		size_t k = cp_at(e, i, &cp);
		int w = field_width(cp, ascii);
		if (cols + w > width)
			break;
		size_t tn;
		if (cp == '\n') {
			tn = strlen(nl_glyph);
			if (tn > sizeof tmp - 1)
				tn = sizeof tmp - 1;
			memcpy(tmp, nl_glyph, tn);
		} else {
			for (tn = 0; tn < k; tn++)
				tmp[tn] = at(e, i + tn);
		}
		/* tui_text_fit does the replacing of controls and of what the
		 * terminal cannot print; the widths agree with field_width */
		char one[16];
		tui_text_fit(tmp, tn, 2, ascii, one, sizeof one);
		size_t on = strlen(one);
		if (o + on + 1 > cap)
			break;
		memcpy(out + o, one, on);
		o += on;
		cols += w;
		i += k;
	}
	if (cap)
		out[o < cap ? o : cap - 1] = 0;
	return cursor;
}
