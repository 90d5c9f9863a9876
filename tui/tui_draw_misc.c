/* tui_draw_misc.c - the Sessions and Log panes, the status line, the help
 * overlay and the "terminal too small" screen. */
#include "config.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

#include "tui_app.h"
#include "tui_text.h"
#include "tui_theme.h"

void tui_draw_sessions(tui_app *a, WINDOW *w)
{
	int h = getmaxy(w), wd = getmaxx(w), inner = wd - 3;
	tui_draw_box(a, w, TUI_PANE_SESSIONS, "Enter resume  r rename  d delete  n new");
	char line[512], sz[32], when[32];
	int rows = h - 3;   /* header + prompt/hint line */
	snprintf(line, sizeof line, "  %-24s %7s %10s  %s", "NAME", "TOKENS", "SIZE", "LAST USED");
	tui_draw_text(a, w, 1, 1, inner, line, tui_attr(TUI_R_DIM));
	if (a->sess_sel >= a->n_sess)
		a->sess_sel = a->n_sess - 1;
	if (a->sess_sel < 0)
		a->sess_sel = 0;
	int first = a->sess_sel >= rows ? a->sess_sel - rows + 1 : 0;
	for (int y = 0; y < rows && first + y < a->n_sess; y++) {
		const kv_store_entry *s = &a->sess[first + y];
		struct tm tm;
		localtime_r(&s->mtime, &tm);
		strftime(when, sizeof when, "%Y-%m-%d %H:%M", &tm);
		tui_fmt_bytes((double)s->bytes, sz, sizeof sz);
		int cur = !strcmp(s->name, a->chat.session);
		snprintf(line, sizeof line, "%c %-24.24s %7d %10s  %s%s", cur ? '*' : ' ', s->name, s->n_tokens,
			 sz, when, s->status != 0 ? "  (damaged)" : "");
		int at = first + y == a->sess_sel && a->focus == TUI_PANE_SESSIONS ? A_REVERSE : A_NORMAL;
		if (cur)
			at |= A_BOLD;
		wattrset(w, at);
		mvwhline(w, 2 + y, 1, ' ', inner + 1);
		tui_draw_text(a, w, 2 + y, 1, inner, line, at);
	}
	if (!a->n_sess)
		tui_draw_text(a, w, 2, 2, inner, "no sessions on disk yet", tui_attr(TUI_R_DIM));
	if (a->prompt_kind) {
		size_t from;
		int col;
		const char *label = a->prompt_kind == TUI_PROMPT_RENAME ? "rename to: " : "";
		if (a->prompt_kind == TUI_PROMPT_DELETE) {
			snprintf(line, sizeof line, "delete session %s? (y/n)", a->prompt_target);
			tui_draw_text(a, w, h - 2, 2, inner, line, tui_attr(TUI_R_WARN));
			return;
		}
		int lw = (int)strlen(label);
		tui_draw_text(a, w, h - 2, 2, inner, label, tui_attr(TUI_R_WARN));
		tui_edit_view(&a->prompt, inner - lw - 1, a->ascii, &from, &col);
		tui_draw_text(a, w, h - 2, 2 + lw, inner - lw - 1, a->prompt.buf + from, A_NORMAL);
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
	char line[TUI_LOG_WIDTH];
	for (int y = 0; y < rows && a->log_scroll + y < n; y++) {
		int lvl = tui_log_get(a->log, a->log_scroll + y, line, sizeof line);
		int at = lvl >= 3 ? tui_attr(TUI_R_ERROR) : lvl == 2 ? tui_attr(TUI_R_WARN) : (int)A_NORMAL;
		tui_draw_text(a, w, 1 + y, 2, inner, line, at);
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
	if (a->server_addr[0])
		snprintf(srv, sizeof srv, "%s served %lu queue %d", a->server_addr, coli_engine_served(a->eng),
			 coli_engine_queue_len(a->eng));
	else
		snprintf(srv, sizeof srv, "%s", a->server_note[0] ? a->server_note : "no server");
	const char *hint = a->msg[0] && tui_now() < a->msg_until ? a->msg
			 : "F1/? help  Tab pane  z zoom  Esc stop  F10/q quit";
	snprintf(line, sizeof line, " %s [%s] | RSS %s | %s | session %s | %s", a->model_name, a->quant,
		 rss, srv, a->chat.session, hint);
	int at = tui_attr(TUI_R_STATUS);
	wattrset(w, at);
	mvwhline(w, 0, 0, ' ', wd);
	tui_draw_text(a, w, 0, 0, wd, line, at);
}

static const char *const help_lines[] = {
	"colitop keys",
	"",
	"F1, ?        this help (any key closes it)",
	"Tab, S-Tab   next / previous pane    mouse click: focus a pane",
	"z, F2        zoom the focused pane (again: back; F2 in Chat)",
	"F10, q       quit (q when not typing in Chat)",
	"Ctrl-L       redraw the screen",
	"",
	"Chat         Enter send   Esc, Ctrl-C stop the answer",
	"             Left/Right Home/End Ctrl-A/E  Ctrl-K/U/W kill",
	"             Up/Down history   PgUp/PgDn scroll",
	"Routing      Up/Down scroll layers",
	"Expert map   Up/Down scroll   a affinity order on/off",
	"Sessions     Up/Down select   Enter resume   r rename",
	"             d delete (asks)  n new chat session",
	"Log          Up/Down PgUp/PgDn scroll   End follow",
	"",
	"Expert map: colour = tier (pinned, cached, disk),",
	"brightness = heat, reverse = routed in this turn.",
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
