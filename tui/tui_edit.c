/* tui_edit.c - see tui_edit.h. */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "tui_edit.h"
#include "tui_text.h"

void tui_edit_init(tui_edit *e)
{
	memset(e, 0, sizeof *e);
}

void tui_edit_free(tui_edit *e)
{
	for (int i = 0; i < e->n_hist; i++)
		free(e->hist[i]);
	e->n_hist = 0;
}

static int is_cont(char c)
{
	return ((unsigned char)c & 0xC0) == 0x80;
}

static size_t prev_cp(const tui_edit *e, size_t at)
{
	if (at == 0)
		return 0;
	at--;
	while (at > 0 && is_cont(e->buf[at]))
		at--;
	return at;
}

static size_t next_cp(const tui_edit *e, size_t at)
{
	if (at >= e->len)
		return e->len;
	at++;
	while (at < e->len && is_cont(e->buf[at]))
		at++;
	return at;
}

static void cut(tui_edit *e, size_t from, size_t to)
{
	memmove(e->buf + from, e->buf + to, e->len - to);
	e->len -= to - from;
	e->buf[e->len] = 0;
	if (e->cur > to)
		e->cur -= to - from;
	else if (e->cur > from)
		e->cur = from;
}

int tui_edit_insert(tui_edit *e, const char *s, size_t n)
{
	if (e->len + n + 1 > TUI_EDIT_MAX)
		return -ENOSPC;
	memmove(e->buf + e->cur + n, e->buf + e->cur, e->len - e->cur);
	memcpy(e->buf + e->cur, s, n);
	e->len += n;
	e->cur += n;
	e->buf[e->len] = 0;
	return 0;
}

void tui_edit_set(tui_edit *e, const char *s)
{
	size_t n = strlen(s);
	if (n >= TUI_EDIT_MAX)
		n = TUI_EDIT_MAX - 1;
	while (n > 0 && is_cont(s[n]))   /* never keep half a character */
		n--;
	memcpy(e->buf, s, n);
	e->buf[n] = 0;
	e->len = e->cur = n;
}

static void history(tui_edit *e, int dir)
{
	int to = e->hist_pos + dir;
	if (to < 0 || to > e->n_hist)
		return;
	if (e->hist_pos == e->n_hist)
		memcpy(e->draft, e->buf, e->len + 1);
	e->hist_pos = to;
	tui_edit_set(e, to == e->n_hist ? e->draft : e->hist[to]);
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
		while (p > 0 && (e->buf[p - 1] == ' ' || e->buf[p - 1] == '\t'))
			p--;
		while (p > 0 && e->buf[p - 1] != ' ' && e->buf[p - 1] != '\t')
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
	char *line = malloc(e->len + 1);
	if (!line)
		return NULL;
	memcpy(line, e->buf, e->len + 1);
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
	e->len = e->cur = 0;
	e->buf[0] = 0;
	e->draft[0] = 0;
	return line;
}

void tui_edit_view(const tui_edit *e, int width, int ascii, size_t *first, int *cursor_col)
{
	size_t f = 0;
	if (width < 1)
		width = 1;
	/* keep the cursor inside the field, on its last column at most */
	while (f < e->cur && tui_text_width(e->buf + f, e->cur - f, ascii) > width - 1)
		f = next_cp(e, f);
	*first = f;
	*cursor_col = tui_text_width(e->buf + f, e->cur - f, ascii);
}
