/* tui_draw_chat.c - pane frames, text output, and the Chat pane
 * (scrollback wrapped by display width, figures line, input line). */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tui_app.h"
#include "tui_text.h"
#include "tui_theme.h"
#include "util_time.h"

void tui_draw_text(tui_app *a, WINDOW *w, int y, int x, int width, const char *s, int attr)
{
	char buf[2048];
	if (width <= 0)
		return;
	tui_text_fit(s, strlen(s), width, a->ascii, buf, sizeof buf);
	wattrset(w, attr);
	mvwaddstr(w, y, x, buf);
	wattrset(w, A_NORMAL);
}

void tui_draw_box(tui_app *a, WINDOW *w, int pane, const char *extra)
{
	int h, wd;
	getmaxyx(w, h, wd);
	(void)h;
	werase(w);
	int focused = a->focus == pane;
	wattrset(w, tui_attr(focused ? TUI_R_FOCUS : TUI_R_BORDER));
	if (a->ascii)
		wborder(w, '|', '|', '-', '-', '+', '+', '+', '+');
	else
		box(w, 0, 0);
	wattrset(w, A_NORMAL);
	char title[64];
	snprintf(title, sizeof title, " %s%s ", tui_pane_name(pane), a->zoom == pane ? " (zoom)" : "");
	tui_draw_text(a, w, 0, 2, wd - 4, title, tui_attr(focused ? TUI_R_FOCUS : TUI_R_TITLE));
	if (extra && *extra) {
		int tw = tui_text_width(title, strlen(title), a->ascii);
		int ew = tui_text_width(extra, strlen(extra), a->ascii) + 2;
		int room = wd - 4 - tw - 1;
		if (room > 3) {
			if (ew > room)
				ew = room;
			char e[256];
			snprintf(e, sizeof e, " %s ", extra);
			tui_draw_text(a, w, 0, wd - 2 - ew, ew, e, tui_attr(TUI_R_DIM));
		}
	}
}

/* One display line of the transcript: a piece of a message's answer, the
 * one-line head of its thinking, or a line of the thinking (expanded). */
enum { PART_TEXT = 0, PART_THINK_HEAD, PART_THINK };

typedef struct chat_line {
	int msg;
	int part;
	tui_line ln;
} chat_line;

/* Appends the wrapped lines of s[0..n) as `part` of message i to out
 * (when out is not NULL); returns how many there are. */
static int wrap_part(const tui_app *a, const char *s, size_t n, int width, int i, int part, chat_line *out)
{
	int k = tui_wrap(s, n, width, a->ascii, NULL, 0);
	if (!out)
		return k;
	tui_line *ls = calloc((size_t)k, sizeof *ls);
	if (!ls)
		return -1;
	tui_wrap(s, n, width, a->ascii, ls, k);
	for (int j = 0; j < k; j++)
		out[j] = (chat_line){ i, part, ls[j] };
	free(ls);
	return k;
}

/* The display lines of message i (out NULL: count them). A thinking
 * answer starts with the head line; its thinking follows, indented,
 * only when expanded; an answer still empty takes no line after it. */
static int msg_lines(const tui_app *a, int i, int tw, chat_line *out)
{
	const tui_msg *m = &a->chat.msgs[i];
	int k = 0;
	/* a block closed at once (no thinking text) shows nothing, unless
	 * the model is still in it */
	int live = tui_chat_busy(&a->chat) && i == a->chat.n - 1 && !m->text.len;
	if (m->has_think && (m->think.len || live)) {
		if (out)
			out[k] = (chat_line){ i, PART_THINK_HEAD, { 0, 0, 0 } };
		k++;
		if (a->think_shown && m->think.len) {
			int n = wrap_part(a, m->think.p, m->think.len, tw - 2, i, PART_THINK, out ? out + k : NULL);
			if (n < 0)
				return -1;
			k += n;
		}
		if (!m->text.len)
			return k;
	}
	int n = wrap_part(a, m->text.p, m->text.len, tw, i, PART_TEXT, out ? out + k : NULL);
	return n < 0 ? -1 : k + n;
}

/* The collapsed (or expanded) thinking as one line: "▸ thinking (312
 * tokens)"; while the model is still thinking, the end of its latest line
 * follows, so the line moves as it streams. */
static void think_head(const tui_app *a, const tui_msg *m, int live, int width, char *out, size_t cap)
{
	const char *arrow = a->think_shown ? (a->ascii ? "-" : "\u25be") : (a->ascii ? "+" : "\u25b8");
	char count[48] = "";
	if (m->think_tokens > 0)
		snprintf(count, sizeof count, " (%d token%s)", m->think_tokens, m->think_tokens == 1 ? "" : "s");
	int n = snprintf(out, cap, "%s thinking%s%s", arrow, live ? "..." : "", count);
	if (!live || a->think_shown || !m->think.len || n < 0 || (size_t)n + 3 >= cap)
		return;
	/* the tail of the last line of the thinking that fits beside */
	const char *t = m->think.p;
	size_t len = m->think.len;
	while (len && (t[len - 1] == '\n' || t[len - 1] == ' '))
		len--;
	size_t from = len;
	while (from && t[from - 1] != '\n')
		from--;
	int room = width - tui_text_width(out, (size_t)n, a->ascii) - 2;
	int w = tui_text_width(t + from, len - from, a->ascii);
	while (from < len && w > room) {   /* drop characters from the front */
		uint32_t cp;
		from += tui_utf8_next(t + from, len - from, &cp);
		w -= tui_cp_width(cp, a->ascii);
	}
	if (room <= 0 || from >= len)
		return;
	out[n++] = ' ';
	out[n++] = ' ';
	tui_text_fit(t + from, len - from, room, a->ascii, out + n, cap - (size_t)n);
}

static int role_attr(int role)
{
	switch (role) {
	case TUI_MSG_USER:
		return tui_attr(TUI_R_USER);
	case TUI_MSG_NOTE:
		return tui_attr(TUI_R_DIM);
	case TUI_MSG_ERROR:
		return tui_attr(TUI_R_ERROR);
	default:
		return tui_attr(TUI_R_ASSISTANT);
	}
}

/* The figures of the turn as two parts that share one line when it is
 * wide enough and take two lines otherwise (80x24 gives the chat 38
 * columns): nothing is cut. Returns the lines used. */
static int draw_figures(tui_app *a, WINDOW *w, int y, int width)
{
	const tui_chat *c = &a->chat;
	char p1[256], p2[256] = "", buf[520];
	if (tui_chat_busy(c)) {
		double t = coli_now_s();
		if (!c->n_streamed) {
			snprintf(p1, sizeof p1, "prefill... %.1f s", t - c->t_submit);
			snprintf(p2, sizeof p2, "(Esc stops)");
		} else {
			double dt = t - c->t_first;
			snprintf(p1, sizeof p1, "generating: %d tok, %.1f tok/s", c->n_streamed,
				 dt > 0 && c->n_streamed > 1 ? (c->n_streamed - 1) / dt : 0.0);
			snprintf(p2, sizeof p2, "TTFT %.0f ms  (Esc stops)", (c->t_first - c->t_submit) * 1000.0);
		}
	} else if (c->have_stats) {
		static const char *const fin[] = { "", "stop", "length", "cancelled", "error" };
		snprintf(p1, sizeof p1, "%.1f tok/s  TTFT %.0f ms  %d tok", c->tps, c->ttft_ms, c->completion_tokens);
		snprintf(p2, sizeof p2, "prompt %d (%d cached)  %s", c->prompt_tokens, c->cached_tokens,
			 fin[c->last_finish >= 0 && c->last_finish < 5 ? c->last_finish : 0]);
	} else if (c->kv_tokens > 0) {
		snprintf(p1, sizeof p1, "session %s: %d tokens on disk", c->session, c->kv_tokens);
		snprintf(p2, sizeof p2, "(resumed, no re-prefill)");
	} else {
		snprintf(p1, sizeof p1, "session %s (new)", c->session);
		snprintf(p2, sizeof p2, "Enter sends");
	}
	/* speculative decoding, where the model can draft: on, its acceptance
	 * and tokens per forward pass, when that fits beside the rest (the
	 * Cache pane always has the full figures and the reason) */
	coli_draft_stats ds;
	coli_engine_draft_stats(a->eng, &ds);
	if (ds.available) {
		char dr[96];
		if (ds.drafted && a->gen.draft != COLI_DRAFT_OFF)
			snprintf(dr, sizeof dr, "  draft %s %.0f%% x%.2f", ds.on ? "on" : "off", 100.0 * ds.acceptance,
				 ds.tokens_per_forward);
		else
			snprintf(dr, sizeof dr, "  draft %s", a->gen.draft == COLI_DRAFT_OFF ? "off" : ds.on ? "on" : "auto");
		/* only where the figures stay on the one line they had */
		size_t len = strlen(p2);
		if (len + strlen(dr) < sizeof p2 &&
		    tui_text_width(p1, strlen(p1), a->ascii) + 2 + tui_text_width(p2, len, a->ascii) +
				    (int)strlen(dr) <= width)
			memcpy(p2 + len, dr, strlen(dr) + 1);
	}
	size_t nl = tui_edit_lines(&a->edit);
	if (a->edit.len > (size_t)width || nl) {
		/* a long or multi-line input: say how much is in it (the field
		 * shows only the part around the cursor) */
		snprintf(p2, sizeof p2, "input %zu lines, %zu bytes", nl + 1, a->edit.len);
	}
	int attr = tui_attr(TUI_R_DIM);
	snprintf(buf, sizeof buf, "%s  %s", p1, p2);
	if (tui_text_width(buf, strlen(buf), a->ascii) <= width) {
		tui_draw_text(a, w, y + 1, 1, width, buf, attr);
		return 1;
	}
	tui_draw_text(a, w, y, 1, width, p1, attr);
	tui_draw_text(a, w, y + 1, 1, width, p2, attr);
	return 2;
}

void tui_draw_chat(tui_app *a, WINDOW *w)
{
	int h, wd;
	getmaxyx(w, h, wd);
	char extra[96];
	snprintf(extra, sizeof extra, "%s%s", a->chat.session, tui_chat_busy(&a->chat) ? " *" : "");
	tui_draw_box(a, w, TUI_PANE_CHAT, extra);
	int inner = wd - 2;
	if (inner < 4 || h < 6)
		return;
	/* the figures take the one or two lines above the input line */
	int fig = draw_figures(a, w, h - 4, inner);
	int rows = h - 3 - fig;
	const tui_chat *c = &a->chat;
	if (!c->n && rows >= 2) {
		/* first start: what this is and where the keys are */
		char hint[512];
		if (a->default_model)
			snprintf(hint, sizeof hint, "The built-in demo: a 14M-parameter model trained on fortunes, "
				 "not an assistant. Try \"Tell me a fortune.\"  F1 help, F10 quit.");
		else
			snprintf(hint, sizeof hint, "%s: type a message, Enter sends.  F1 help, F10 quit.",
				 a->model_name);
		tui_line ls[8];
		int n = tui_wrap(hint, strlen(hint), inner - 2, a->ascii, ls, 8);
		char b[512];
		for (int i = 0; i < n && i < 8 && i < rows; i++) {
			tui_text_fit(hint + ls[i].off, ls[i].len, inner - 2, a->ascii, b, sizeof b);
			tui_draw_text(a, w, 1 + i, 2, inner - 2, b, tui_attr(TUI_R_DIM));
		}
	}
	const int tw = inner - 2;           /* text is indented by 2 */
	int total = 0;
	for (int i = 0; i < c->n; i++)
		total += msg_lines(a, i, tw, NULL) + 1;
	chat_line *lines = calloc((size_t)total + 1, sizeof *lines);
	if (!lines)
		return;
	int k = 0;
	for (int i = 0; i < c->n; i++) {
		int n = msg_lines(a, i, tw, lines + k);
		if (n < 0)
			break;
		k += n;
		lines[k++] = (chat_line){ -1, PART_TEXT, { 0, 0, 0 } };   /* blank between turns */
	}
	total = k;
	int max_scroll = total > rows ? total - rows : 0;
	if (a->chat_scroll > max_scroll)
		a->chat_scroll = max_scroll;
	int first = total - rows - a->chat_scroll;
	if (first < 0)
		first = 0;
	char buf[4096];
	int dim = tui_attr(TUI_R_DIM);
	for (int y = 0; y < rows && first + y < total; y++) {
		const chat_line *L = &lines[first + y];
		if (L->msg < 0)
			continue;
		const tui_msg *m = &c->msgs[L->msg];
		if (L->part == PART_THINK_HEAD) {
			int live = tui_chat_busy(c) && L->msg == c->n - 1 && !m->text.len;
			think_head(a, m, live, tw, buf, sizeof buf);
			tui_draw_text(a, w, 1 + y, 3, tw, buf, dim);
			continue;
		}
		if (L->part == PART_THINK) {
			tui_text_fit(m->think.p + L->ln.off, L->ln.len, tw - 2, a->ascii, buf, sizeof buf);
			tui_draw_text(a, w, 1 + y, 5, tw - 2, buf, dim);
			continue;
		}
		int attr = role_attr(m->role);
		int is_first = L->ln.off == 0;
		const char *mark = m->role == TUI_MSG_USER ? ">" : m->role == TUI_MSG_ERROR ? "!" : " ";
		if (is_first)
			tui_draw_text(a, w, 1 + y, 1, 2, mark, attr | A_BOLD);
		tui_text_fit(m->text.p + L->ln.off, L->ln.len, tw, a->ascii, buf, sizeof buf);
		wattrset(w, attr);
		mvwaddstr(w, 1 + y, 3, buf);
		wattrset(w, A_NORMAL);
	}
	free(lines);
	if (a->chat_scroll > 0) {
		snprintf(buf, sizeof buf, "[%d more below, PgDn]", a->chat_scroll);
		tui_draw_text(a, w, rows, wd - 2 - (int)strlen(buf), (int)strlen(buf), buf, tui_attr(TUI_R_DIM));
	}
	/* input line: the part around the cursor; a newline shows as a glyph */
	int col = tui_edit_render(&a->edit, inner - 2, a->ascii, a->ascii ? "|" : "\u21b5", buf, sizeof buf);
	tui_draw_text(a, w, h - 2, 1, 2, ">", tui_attr(TUI_R_FOCUS));
	mvwaddstr(w, h - 2, 3, buf);
	wmove(w, h - 2, 3 + col);
}
