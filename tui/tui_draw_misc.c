/* tui_draw_misc.c - the Sessions and Log panes, the status line, the help
 * overlay and the "terminal too small" screen. */
#include "config.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

#include "tui_app.h"
#include "tui_text.h"
#include "tui_theme.h"
#include "util_time.h"

/* A name cut to w columns by eliding its middle: session names differ
 * at the end (chat-YYYYMMDD-HHMMSS), so the tail is kept. */
static void elide(const char *name, int w, int ascii, char *out, size_t cap)
{
	int n = (int)strlen(name);
	if (n <= w || w < 5) {
		snprintf(out, cap, "%.*s", w > 0 ? w : 0, name);
		return;
	}
	int head = w / 3, tail = w - head - 1;
	snprintf(out, cap, "%.*s%s%s", head, name, ascii ? "~" : "\u2026", name + n - tail);
}

/* LAST USED as wide as the pane allows: date and time of day, else the
 * time of day alone for today and the date otherwise. */
static int when_width(int inner, int fixed)
{
	return inner - fixed >= 12 + 16 ? 16 : inner - fixed >= 12 + 11 ? 11 : 5;
}

static void fmt_when(time_t t, int width, char *out, size_t cap)
{
	struct tm tm, today;
	time_t now = time(NULL);
	localtime_r(&t, &tm);
	localtime_r(&now, &today);
	int same_day = tm.tm_year == today.tm_year && tm.tm_yday == today.tm_yday;
	strftime(out, cap, width >= 16 ? "%Y-%m-%d %H:%M" : width >= 11 ? "%m-%d %H:%M" : same_day ? "%H:%M" : "%m-%d",
		 &tm);
}

void tui_draw_sessions(tui_app *a, WINDOW *w)
{
	int h = getmaxy(w), wd = getmaxx(w), inner = wd - 3;
	char title[96];
	if (wd >= 64)
		snprintf(title, sizeof title, "Enter resume  r rename  d delete  n new");
	else
		snprintf(title, sizeof title, "%d on disk", a->n_sess);
	tui_draw_box(a, w, TUI_PANE_SESSIONS, title);
	char line[512], sz[32], when[32], nm[128];
	int avail = h - 2;                        /* rows inside the frame */
	int foot = a->prompt_kind || a->chat.save_err[0] ? 1 : 0;
	int header = avail - foot >= 2;           /* a one-row pane shows the list only */
	int rows = avail - foot - header;
	/* columns: mark, NAME, TOKENS, SIZE, LAST USED */
	const int fixed = 2 + 7 + 10 + 2;
	int ww = when_width(inner, fixed);
	int nw = inner - fixed - ww;
	if (nw > 24)
		nw = 24;
	if (nw < 6)
		nw = 6;
	if (header) {
		snprintf(line, sizeof line, "  %-*s %6s %9s  %s", nw, "NAME", "TOKENS", "SIZE", ww >= 11 ? "LAST USED" : "USED");
		tui_draw_text(a, w, 1, 1, inner, line, tui_attr(TUI_R_DIM));
	}
	if (a->sess_sel >= a->n_sess)
		a->sess_sel = a->n_sess - 1;
	if (a->sess_sel < 0)
		a->sess_sel = 0;
	/* what must be in view: the selection while the pane has the focus,
	 * else the current chat's session */
	int keep = a->sess_sel;
	if (a->focus != TUI_PANE_SESSIONS)
		for (int i = 0; i < a->n_sess; i++)
			if (!strcmp(a->sess[i].name, a->chat.session))
				keep = i;
	int first = rows > 0 && keep >= rows ? keep - rows + 1 : 0;
	for (int y = 0; y < rows && first + y < a->n_sess; y++) {
		const kv_store_entry *s = &a->sess[first + y];
		fmt_when(s->mtime, ww, when, sizeof when);
		tui_fmt_bytes((double)s->bytes, sz, sizeof sz);
		elide(s->name, nw, a->ascii, nm, sizeof nm);
		int cur = !strcmp(s->name, a->chat.session);
		snprintf(line, sizeof line, "%c %-*s %6d %9s  %s%s", cur ? '*' : ' ', nw, nm, s->n_tokens, sz, when,
			 s->status != 0 ? "  (damaged)" : "");
		int at = first + y == a->sess_sel && a->focus == TUI_PANE_SESSIONS ? A_REVERSE : A_NORMAL;
		if (cur)
			at |= A_BOLD;
		wattrset(w, at);
		mvwhline(w, 1 + header + y, 1, ' ', inner + 1);
		tui_draw_text(a, w, 1 + header + y, 1, inner, line, at);
	}
	if (!a->n_sess && rows > 0)
		tui_draw_text(a, w, 1 + header, 2, inner, "no sessions on disk yet", tui_attr(TUI_R_DIM));
	if (a->prompt_kind) {
		const char *label = a->prompt_kind == TUI_PROMPT_RENAME ? "rename to: " : "";
		if (a->prompt_kind == TUI_PROMPT_DELETE) {
			snprintf(line, sizeof line, "delete session %s? (y/n)", a->prompt_target);
			tui_draw_text(a, w, h - 2, 2, inner, line, tui_attr(TUI_R_WARN));
			return;
		}
		int lw = (int)strlen(label);
		tui_draw_text(a, w, h - 2, 2, inner, label, tui_attr(TUI_R_WARN));
		tui_edit_render(&a->prompt, inner - lw - 1, a->ascii, " ", line, sizeof line);
		tui_draw_text(a, w, h - 2, 2 + lw, inner - lw - 1, line, A_NORMAL);
	} else if (a->chat.save_err[0]) {
		/* the figures above are stale: say why */
		snprintf(line, sizeof line, "%s NOT SAVED: %s", a->chat.session, a->chat.save_err);
		tui_draw_text(a, w, h - 2, 2, inner, line, tui_attr(TUI_R_ERROR));
	}
}

void tui_draw_log(tui_app *a, WINDOW *w)
{
	int h = getmaxy(w), wd = getmaxx(w), inner = wd - 3;
	int n = tui_log_count(a->log), rows = h - 2;
	char extra[48] = "";
	if (!a->log_follow)
		snprintf(extra, sizeof extra, "scrolled (End follows)");
	tui_draw_box(a, w, TUI_PANE_LOG, extra);
	int max_scroll = n > rows ? n - rows : 0;
	if (a->log_follow || a->log_scroll > max_scroll)
		a->log_scroll = max_scroll;
	char line[TUI_LOG_WIDTH], part[TUI_LOG_WIDTH * 4];
	if (a->zoom != TUI_PANE_LOG) {
		for (int y = 0; y < rows && a->log_scroll + y < n; y++) {
			int lvl = tui_log_get(a->log, a->log_scroll + y, line, sizeof line);
			int at = lvl >= 3 ? tui_attr(TUI_R_ERROR) : lvl == 2 ? tui_attr(TUI_R_WARN) : (int)A_NORMAL;
			tui_draw_text(a, w, 1 + y, 2, inner, line, at);
		}
		return;
	}
	/* zoomed: long lines wrap, continuation lines indented under the
	 * message. Following, the newest entries fill the pane from the
	 * bottom; scrolled, entries from log_scroll fill it from the top. */
	const int ind = 11;   /* "HH:MM:SS L " */
	int first = a->log_scroll;
	if (a->log_follow) {
		int used = 0;
		first = n;
		while (first > 0) {
			tui_log_get(a->log, first - 1, line, sizeof line);
			int k = 1 + (tui_text_width(line, strlen(line), a->ascii) > inner
				     ? tui_wrap(line + ind, strlen(line + ind), inner - ind, a->ascii, NULL, 0) - 1 : 0);
			if (used + k > rows)
				break;
			used += k;
			first--;
		}
	}
	int y = 0;
	for (int i = first; i < n && y < rows; i++) {
		int lvl = tui_log_get(a->log, i, line, sizeof line);
		int at = lvl >= 3 ? tui_attr(TUI_R_ERROR) : lvl == 2 ? tui_attr(TUI_R_WARN) : (int)A_NORMAL;
		if (tui_text_width(line, strlen(line), a->ascii) <= inner || strlen(line) <= (size_t)ind) {
			tui_draw_text(a, w, 1 + y++, 2, inner, line, at);
			continue;
		}
		tui_line ls[64];
		int k = tui_wrap(line + ind, strlen(line + ind), inner - ind, a->ascii, ls, 64);
		for (int j = 0; j < k && j < 64 && y < rows; j++) {
			snprintf(part, sizeof part, "%-*.*s%.*s", ind, j ? 0 : ind, line, (int)ls[j].len,
				 line + ind + ls[j].off);
			tui_draw_text(a, w, 1 + y++, 2, inner, part, at);
		}
	}
}

static long rss_bytes(void)
{
	long pages = 0, rss = 0;
	FILE *f = fopen("/proc/self/statm", "r");
	if (!f)
		return -1;
	if (fscanf(f, "%ld %ld", &pages, &rss) != 2)
		rss = -1;
	fclose(f);
	return rss < 0 ? -1 : rss * 4096;
}

void tui_draw_status(tui_app *a, WINDOW *w)
{
	int wd = getmaxx(w);
	char line[1024], rss[32], srv[256];
	long r = rss_bytes();
	if (r >= 0)
		tui_fmt_bytes((double)r, rss, sizeof rss);
	else
		snprintf(rss, sizeof rss, "n/a");
	coli_step_stats st;
	coli_engine_step_stats(a->eng, &st);
	if (a->server_addr[0])
		snprintf(srv, sizeof srv, "%s served %lu running %d queued %d%s rows/step %d chat %lu",
			 a->server_addr, atomic_load_explicit(&a->served_ext, memory_order_relaxed), st.active,
			 st.queued, st.waiting_kv ? " (KV full)" : "", st.last_rows, a->chat.turns);
	else
		snprintf(srv, sizeof srv, "%s", a->server_note[0] ? a->server_note : "no server");
	int at = tui_attr(TUI_R_STATUS);
	wattrset(w, at);
	mvwhline(w, 0, 0, ' ', wd);
	if (a->msg[0] && coli_now_s() < a->msg_until) {
		/* a message takes the whole line: it is what the user must read */
		snprintf(line, sizeof line, " %s", a->msg);
		tui_draw_text(a, w, 0, 0, wd, line, at | A_BOLD);
		return;
	}
	if (a->chat.save_err[0]) {
		/* a session that is not being written goes first: every figure
		 * about it on screen is stale */
		snprintf(line, sizeof line, " session %s NOT SAVED: %s | %s [%s]", a->chat.session, a->chat.save_err,
			 a->model_name, a->quant);
		tui_draw_text(a, w, 0, 0, wd, line, tui_attr(TUI_R_ERROR) | A_BOLD);
		return;
	}
	snprintf(line, sizeof line, " %s [%s] | RSS %s | %s | session %s", a->model_name, a->quant, rss, srv,
		 a->chat.session);
	if (tui_text_width(line, strlen(line), a->ascii) > wd)   /* 80 columns: the session name matters more */
		snprintf(line, sizeof line, " %s | RSS %s | %s | %s", a->model_name, rss, srv, a->chat.session);
	tui_draw_text(a, w, 0, 0, wd, line, at);
}

/* htop's F-key row: the keys that work everywhere (from the chat input
 * too), then what the focused pane adds. Always on screen at 80 columns. */
void tui_draw_keys(tui_app *a, WINDOW *w)
{
	static const char *const fk[][2] = {
		{ "F1", "Help" }, { "F2", "Zoom" }, { "F3", "Sessions" }, { "F4", "Pane" }, { "F10", "Quit" },
	};
	const char *ctx = "";
	switch (a->focus) {
	case TUI_PANE_CHAT:
		if (tui_chat_has_think(&a->chat))
			ctx = tui_chat_busy(&a->chat) ? "Esc stop  F5 thinking" : "Enter send  F5 thinking";
		else
			ctx = tui_chat_busy(&a->chat) ? "Esc stop answer" : "Enter send  Esc stop";
		break;
	case TUI_PANE_EXPERTS:
		ctx = "a order  c conversation  q quit";
		break;
	case TUI_PANE_SESSIONS:
		ctx = "Enter resume r rename d delete n new";
		break;
	case TUI_PANE_LOG:
		ctx = "Up/Dn scroll End follow";
		break;
	default:
		ctx = "Up/Dn scroll  q quit";
		break;
	}
	int wd = getmaxx(w), x = 0;
	wattrset(w, A_NORMAL);
	mvwhline(w, 0, 0, ' ', wd);
	for (size_t i = 0; i < sizeof fk / sizeof fk[0] && x < wd; i++) {
		int kw = (int)strlen(fk[i][0]), lw = (int)strlen(fk[i][1]);
		tui_draw_text(a, w, 0, x, wd - x, fk[i][0], A_BOLD);
		x += kw;
		tui_draw_text(a, w, 0, x, wd - x, fk[i][1], tui_attr(TUI_R_STATUS));
		x += lw + 1;
	}
	if (x + 2 < wd)
		tui_draw_text(a, w, 0, x + 1, wd - x - 1, ctx, tui_attr(TUI_R_DIM));
}

static const char *const help_lines[] = {
	"colitop keys",
	"Everywhere, the chat input included:",
	"F1           this help (any key closes it)",
	"F2           zoom the focused pane (again: back)",
	"F3           the Sessions pane (again: back to Chat)",
	"F4, Tab      next pane (S-Tab previous)  mouse click: focus",
	"F10          quit    Ctrl-C stops an answer; idle, twice quits",
	"Esc          stop the answer    Ctrl-L redraw",
	"F5           thinking: one line / all of it (t outside input)",
	"F6           MTP drafting auto / off (also m outside the chat input)",
	"",
	"Chat input   letters, ? and q are text; Enter sends; a paste",
	"             (even many lines) becomes one message",
	"             Left/Right Home/End Ctrl-A/E  Ctrl-K/U/W kill",
	"             Up/Down history   PgUp/PgDn scroll",
	"Other panes  q quit  ? h help  z zoom",
	"Routing      Up/Down scroll layers",
	"Expert map   Up/Down scroll   a order: id, history, live",
	"             c this conversation against all recorded",
	"Sessions     Up/Down select   Enter resume   r rename",
	"             d delete (asks)  n new chat session",
	"Log          Up/Down PgUp/PgDn scroll   End follow",
	"Expert map: colour (or glyph) = tier: pinned, cached,",
	"disk, in flight (a read under way: ~ in monochrome);",
	"brightness = heat, reverse = routed in this turn.",
	"Order history: clusters of every recorded profile; live:",
	"co-activation since start. Conversation: experts this chat",
	"uses more than all recorded requests, z as coli atlas compare.",
};

void tui_draw_help(tui_app *a)
{
	int n = (int)(sizeof help_lines / sizeof help_lines[0]);
	int hw = 66, hh = n + 2;
	if (hw > COLS)
		hw = COLS;
	if (hh > LINES)
		hh = LINES;
	WINDOW *w = newwin(hh, hw, (LINES - hh) / 2, (COLS - hw) / 2);
	if (!w)
		return;
	werase(w);
	wattrset(w, tui_attr(TUI_R_FOCUS));
	if (a->ascii)
		wborder(w, '|', '|', '-', '-', '+', '+', '+', '+');
	else
		box(w, 0, 0);
	for (int i = 0; i < n && i < hh - 2; i++)
		tui_draw_text(a, w, 1 + i, 2, hw - 4, help_lines[i], i == 0 ? tui_attr(TUI_R_TITLE) : (int)A_NORMAL);
	wnoutrefresh(w);
	delwin(w);
}

void tui_draw_too_small(tui_app *a)
{
	erase();
	char line[128];
	snprintf(line, sizeof line, "terminal too small (need %dx%d, have %dx%d)", TUI_MIN_COLS, TUI_MIN_ROWS,
		 COLS, LINES);
	int y = LINES / 2, x = (COLS - (int)strlen(line)) / 2;
	tui_draw_text(a, stdscr, y < 0 ? 0 : y, x < 0 ? 0 : x, COLS, line, A_BOLD);
	tui_draw_text(a, stdscr, y + 1 < LINES ? y + 1 : 0, 0, COLS, "F10 quits", A_NORMAL);
	wnoutrefresh(stdscr);
}
