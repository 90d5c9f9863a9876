/* tui_app.c - the colitop loop: input, layout, dirty-pane redraw.
 *
 * One frame per key or per 100 ms (curses' read timeout): drain the chat
 * request's events without blocking, sample telemetry, redraw only the
 * panes whose dirty bit is set, then wait for the next key. Generation and
 * HTTP run on the engine's and libmicrohttpd's threads and never wait for
 * this loop. */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <wchar.h>

#include "tui_app.h"
#include "tui_signal.h"
#include "tui_theme.h"
#include "util_unicode.h"
#include "util_time.h"

void tui_app_message(tui_app *a, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(a->msg, sizeof a->msg, fmt, ap);
	va_end(ap);
	a->msg_until = coli_now_s() + 5.0;
	a->dirty |= TUI_DIRTY_STATUS;
}

static void windows_free(tui_app *a)
{
	for (int i = 0; i < TUI_PANE_COUNT; i++) {
		if (a->win[i])
			delwin(a->win[i]);
		a->win[i] = NULL;
	}
	if (a->status)
		delwin(a->status);
	if (a->keys)
		delwin(a->keys);
	a->status = a->keys = NULL;
}

static void relayout(tui_app *a)
{
	int rows, cols;
	getmaxyx(stdscr, rows, cols);
	windows_free(a);
	tui_layout_compute(rows, cols, a->zoom, &a->lay);
	clear();
	wnoutrefresh(stdscr);
	if (!a->lay.too_small) {
		for (int i = 0; i < TUI_PANE_COUNT; i++) {
			const tui_rect *r = &a->lay.pane[i];
			if (r->h > 0 && r->w > 0)
				a->win[i] = newwin(r->h, r->w, r->y, r->x);
		}
		a->status = newwin(1, a->lay.status.w, a->lay.status.y, 0);
		a->keys = newwin(1, a->lay.keys.w, a->lay.keys.y, 0);
		if (!a->win[a->focus])
			a->focus = TUI_PANE_CHAT;
	}
	a->dirty = TUI_DIRTY_ALL;
}

static void draw(tui_app *a)
{
	if (a->lay.too_small) {
		if (a->dirty) {
			curs_set(0);
			tui_draw_too_small(a);
			doupdate();
		}
		a->dirty = 0;
		return;
	}
	if (a->help)
		a->dirty = TUI_DIRTY_ALL;   /* the overlay sits on top of everything */
	if (!a->dirty)
		return;
	typedef void (*drawer)(tui_app *, WINDOW *);
	static const drawer fn[TUI_PANE_COUNT] = {
		tui_draw_chat, tui_draw_routing, tui_draw_experts, tui_draw_cache,
		tui_draw_io, tui_draw_sessions, tui_draw_log,
	};
	for (int i = 1; i < TUI_PANE_COUNT; i++)
		if (a->win[i] && (a->dirty & 1u << i)) {
			fn[i](a, a->win[i]);
			wnoutrefresh(a->win[i]);
		}
	if (a->status && (a->dirty & TUI_DIRTY_STATUS)) {
		tui_draw_status(a, a->status);
		wnoutrefresh(a->status);
		tui_draw_keys(a, a->keys);
		wnoutrefresh(a->keys);
	}
	/* the chat goes last so the terminal cursor ends on its input line */
	if (a->win[TUI_PANE_CHAT]) {
		if (a->dirty & 1u << TUI_PANE_CHAT)
			tui_draw_chat(a, a->win[TUI_PANE_CHAT]);
		wnoutrefresh(a->win[TUI_PANE_CHAT]);
	}
	int cursor = a->focus == TUI_PANE_CHAT && a->win[TUI_PANE_CHAT] && !a->help;
	if (a->help)
		tui_draw_help(a);
	curs_set(cursor ? 1 : 0);
	doupdate();
	a->dirty = 0;
}

static void focus_step(tui_app *a, int dir)
{
	int f = a->focus;
	for (int k = 0; k < TUI_PANE_COUNT; k++) {
		f = (f + dir + TUI_PANE_COUNT) % TUI_PANE_COUNT;
		if (a->zoom >= 0 || a->win[f])
			break;
	}
	a->focus = f;
	if (a->zoom >= 0) {
		a->zoom = f;
		relayout(a);
	}
	a->dirty = TUI_DIRTY_ALL;
}

static void send_line(tui_app *a)
{
	if (tui_chat_busy(&a->chat)) {
		tui_app_message(a, "an answer is being generated: Esc stops it");
		return;
	}
	if (!a->edit.len)
		return;
	if (!a->tpl_ok) {
		tui_app_message(a, "this model has no supported chat template: chat is disabled");
		return;
	}
	char *line = tui_edit_take(&a->edit);
	if (!line)
		return;
	coli_err err = { 0 };
	if (a->routed_turn)
		memset(a->routed_turn, 0, (size_t)a->n_layers * (size_t)a->n_experts);
	if (tui_chat_send(&a->chat, a->eng, &a->tpl, line, &a->gen, &err)) {
		/* nothing was sent: the text stays in the input to be cut down */
		tui_app_message(a, "not sent: %s", err.msg);
		tui_log_add(a->log, 3, "chat: %s", err.msg);
		tui_edit_set(&a->edit, line);
	}
	free(line);
	a->chat_scroll = 0;
}

static void chat_key(tui_app *a, int key, int is_char, const char *utf8)
{
	a->dirty |= 1u << TUI_PANE_CHAT;
	if (is_char && utf8) {
		tui_edit_insert(&a->edit, utf8, strlen(utf8));
		return;
	}
	static const struct { int key, op; } map[] = {
		{ KEY_LEFT, TUI_EDIT_LEFT }, { KEY_RIGHT, TUI_EDIT_RIGHT },
		{ KEY_HOME, TUI_EDIT_HOME }, { 1, TUI_EDIT_HOME },
		{ KEY_END, TUI_EDIT_END }, { 5, TUI_EDIT_END },
		{ KEY_BACKSPACE, TUI_EDIT_BACKSPACE }, { 127, TUI_EDIT_BACKSPACE }, { 8, TUI_EDIT_BACKSPACE },
		{ KEY_DC, TUI_EDIT_DELETE }, { 4, TUI_EDIT_DELETE },
		{ 11, TUI_EDIT_KILL_END }, { 21, TUI_EDIT_KILL_START }, { 23, TUI_EDIT_KILL_WORD },
		{ KEY_UP, TUI_EDIT_HIST_PREV }, { KEY_DOWN, TUI_EDIT_HIST_NEXT },
	};
	for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
		if (map[i].key == key) {
			tui_edit_op(&a->edit, map[i].op);
			return;
		}
	int page = a->win[TUI_PANE_CHAT] ? getmaxy(a->win[TUI_PANE_CHAT]) - 5 : 10;
	switch (key) {
	case '\n':
	case '\r':
	case KEY_ENTER:
		send_line(a);
		break;
	case 27:
		tui_chat_stop(&a->chat);
		break;
	case KEY_PPAGE:
		a->chat_scroll += page > 1 ? page : 1;
		break;
	case KEY_NPAGE:
		a->chat_scroll -= page > 1 ? page : 1;
		if (a->chat_scroll < 0)
			a->chat_scroll = 0;
		break;
	default:
		break;
	}
}

static void pane_key(tui_app *a, int key)
{
	int step = key == KEY_UP ? -1 : key == KEY_DOWN ? 1 : key == KEY_PPAGE ? -10 : key == KEY_NPAGE ? 10 : 0;
	switch (a->focus) {
	case TUI_PANE_ROUTING:
		a->routing_scroll += step;
		if (a->routing_scroll < 0)
			a->routing_scroll = 0;
		break;
	case TUI_PANE_EXPERTS:
		a->experts_scroll += step;
		if (a->experts_scroll < 0)
			a->experts_scroll = 0;
		if (key == 'a')
			tui_order_next(a);
		if (key == 'c') {
			a->conv_on = !a->conv_on;
			a->t_conv = 0; /* read the profiles at the next sample */
			tui_app_message(a, "expert map: %s", a->conv_on ? "this conversation against every recorded request"
								   : "tiers and heat");
		}
		break;
	case TUI_PANE_SESSIONS:
		tui_sessions_key(a, key);
		break;
	case TUI_PANE_LOG:
		if (step) {
			a->log_follow = 0;
			a->log_scroll += step;
			if (a->log_scroll < 0)
				a->log_scroll = 0;
		}
		if (key == KEY_END)
			a->log_follow = 1;
		if (key == KEY_HOME) {
			a->log_follow = 0;
			a->log_scroll = 0;
		}
		break;
	default:
		break;
	}
	a->dirty |= 1u << a->focus;
}

/* Ctrl-C: stops an answer being generated; while idle the first one
 * says how to quit and a second within 3 s quits (htop users expect
 * Ctrl-C to end the program; a stray one in the middle of typing should
 * not). */
static void ctrl_c(tui_app *a)
{
	double now = coli_now_s();
	if (tui_chat_busy(&a->chat)) {
		tui_chat_stop(&a->chat);
		a->ctrl_c_at = 0;
		return;
	}
	if (a->ctrl_c_at > 0 && now - a->ctrl_c_at < 3.0) {
		a->quit = 1;
		return;
	}
	a->ctrl_c_at = now;
	tui_app_message(a, "press Ctrl-C again to quit (or F10)");
}

/* One byte-or-character of a bracketed paste: everything is text, Enter
 * included (a newline of the pasted block). */
static void paste_char(tui_app *a, int is_char, int key, const char *utf8)
{
	char nl[2] = { '\n', 0 };
	const char *t = is_char ? utf8 : (key == '\r' || key == '\n' || key == KEY_ENTER) ? nl
				  : key == '\t' ? "\t" : NULL;
	if (!t)
		return;   /* other controls and function keys inside a paste are dropped */
	size_t n = strlen(t);
	if (a->prompt_kind) {
		if (*t != '\n' && *t != '\t')
			tui_edit_insert(&a->prompt, t, n);
		a->dirty |= 1u << TUI_PANE_SESSIONS;
		return;
	}
	/* a refusal is counted and said when the paste ends, never silent */
	if (a->paste_refused || tui_edit_insert(&a->edit, t, n))
		a->paste_refused += n;
	else
		a->paste_bytes += n;
	a->dirty |= 1u << TUI_PANE_CHAT;
}

static void paste_end(tui_app *a)
{
	a->pasting = 0;
	if (a->paste_refused)
		tui_app_message(a, "paste: %zu bytes did not fit and were not inserted (the input holds %zu bytes)",
				a->paste_refused, a->edit.max);
	else if (a->paste_bytes)
		tui_app_message(a, "pasted %zu bytes; Enter sends them as one message", a->paste_bytes);
	a->paste_bytes = a->paste_refused = 0;
}

static void handle_key(tui_app *a, int rc, wint_t wch)
{
	int is_char = rc == OK;
	int key = (int)wch;
	char utf8[8] = "";
	if (is_char && wch >= 32 && wch != 127) {
		int n = unicode_utf8_put((uint32_t)wch, (uint8_t *)utf8);
		utf8[n] = 0;
	} else if (is_char) {
		is_char = 0;   /* a control character: handled as a key */
	}
	if (!is_char && key == KEY_RESIZE) {
		relayout(a);
		return;
	}
	if (!is_char && key == TUI_KEY_PASTE_BEGIN) {
		a->pasting = 1;
		a->paste_bytes = a->paste_refused = 0;
		if (!a->prompt_kind && a->focus != TUI_PANE_CHAT && a->win[TUI_PANE_CHAT]) {
			a->focus = TUI_PANE_CHAT;   /* a paste is always meant for the input */
			a->dirty = TUI_DIRTY_ALL;
		}
		return;
	}
	if (!is_char && key == TUI_KEY_PASTE_END) {
		paste_end(a);
		return;
	}
	if (a->pasting) {
		paste_char(a, is_char, key, utf8);
		return;
	}
	if (!is_char && key == KEY_F(10)) {
		a->quit = 1;
		return;
	}
	if (!is_char && key == 3) {
		ctrl_c(a);
		return;
	}
	if (a->help) {   /* any key closes the help */
		a->help = 0;
		a->dirty = TUI_DIRTY_ALL;
		return;
	}
	if (a->lay.too_small) {
		if (key == 'q')
			a->quit = 1;
		return;
	}
	if (a->prompt_kind) {
		tui_sessions_prompt_key(a, key, is_char ? utf8 : NULL);
		return;
	}
	if (!is_char && key == KEY_F(1)) {
		a->help = 1;
		return;
	}
	if (!is_char && key == KEY_F(2)) {   /* zoom that works while typing */
		a->zoom = a->zoom >= 0 ? -1 : a->focus;
		relayout(a);
		return;
	}
	if (!is_char && key == KEY_F(3)) {   /* the Sessions pane (again: back to Chat) */
		a->focus = a->focus == TUI_PANE_SESSIONS ? TUI_PANE_CHAT : TUI_PANE_SESSIONS;
		if (a->zoom >= 0) {
			a->zoom = a->focus;
			relayout(a);
		}
		a->dirty = TUI_DIRTY_ALL;
		return;
	}
	if (!is_char && key == KEY_F(4)) {   /* next pane, like Tab */
		focus_step(a, 1);
		return;
	}
	if ((!is_char && key == KEY_F(5)) || (is_char && key == 't' && a->focus != TUI_PANE_CHAT)) {
		/* a thinking model's reasoning: one line per answer <-> all of it */
		a->think_shown = !a->think_shown;
		tui_app_message(a, "thinking: %s", a->think_shown ? "expanded" : "collapsed (F5 expands)");
		a->dirty = TUI_DIRTY_ALL;
		return;
	}
	if ((!is_char && key == KEY_F(6)) || (is_char && key == 'm' && a->focus != TUI_PANE_CHAT)) {
		/* MTP drafting for the next answers: auto <-> off */
		a->gen.draft = a->gen.draft == COLI_DRAFT_OFF ? COLI_DRAFT_AUTO : COLI_DRAFT_OFF;
		tui_app_message(a, "MTP drafting: %s", a->gen.draft == COLI_DRAFT_OFF ? "off" : "auto");
		a->dirty = TUI_DIRTY_ALL;
		return;
	}
	if (!is_char && key == KEY_MOUSE) {
		MEVENT me;
		if (getmouse(&me) == OK && (me.bstate & (BUTTON1_PRESSED | BUTTON1_CLICKED | BUTTON1_RELEASED))) {
			int p = tui_layout_hit(&a->lay, me.y, me.x);
			if (p >= 0 && p != a->focus) {
				a->focus = p;
				a->dirty = TUI_DIRTY_ALL;
			}
		}
		return;
	}
	if (key == '\t' && !is_char) {
		focus_step(a, 1);
		return;
	}
	if (key == KEY_BTAB) {
		focus_step(a, -1);
		return;
	}
	if (key == 12 && !is_char) {   /* Ctrl-L */
		clearok(curscr, TRUE);
		a->dirty = TUI_DIRTY_ALL;
		return;
	}
	if (a->focus == TUI_PANE_CHAT) {
		chat_key(a, key, is_char, is_char ? utf8 : NULL);
		return;
	}
	/* not typing: single-letter commands */
	if (is_char && (key == 'q' || key == 'Q')) {
		a->quit = 1;
	} else if (is_char && (key == '?' || key == 'h')) {
		a->help = 1;
	} else if (is_char && key == 'z') {
		a->zoom = a->zoom >= 0 ? -1 : a->focus;
		relayout(a);
	} else if (key == 27) {
		tui_chat_stop(&a->chat);
	} else {
		pane_key(a, key);
	}
}

int tui_app_run(tui_app *a)
{
	a->zoom = -1;
	a->log_follow = 1;
	relayout(a);
	tui_sessions_refresh(a);
	double t_sess = coli_now_s(), t_status = t_sess, t_busy = 0, t_key = 0;
	unsigned chat_v = a->chat.version - 1;
	while (!a->quit) {
		int sig = tui_signal_pending();
		if (sig) {
			tui_log_add(a->log, 1, "signal %d: quitting", sig);
			break;
		}
		double now = coli_now_s();
		int was_busy = tui_chat_busy(&a->chat);
		tui_chat_poll(&a->chat);
		if (a->chat.version != chat_v) {
			chat_v = a->chat.version;
			a->dirty |= 1u << TUI_PANE_CHAT;
		}
		if (tui_chat_busy(&a->chat) && now - t_busy >= 0.5) {
			t_busy = now;   /* live prefill/decode figures */
			a->dirty |= 1u << TUI_PANE_CHAT;
		}
		tui_sample(a, now);
		unsigned lv = tui_log_version(a->log);
		if (lv != a->log_seen) {
			a->log_seen = lv;
			a->dirty |= 1u << TUI_PANE_LOG;
		}
		if (now - t_sess >= 2.0 || (was_busy && !tui_chat_busy(&a->chat))) {
			t_sess = now;
			tui_sessions_refresh(a);
		}
		if (now - t_status >= 2.0) {   /* RSS, queue, message expiry */
			t_status = now;
			a->dirty |= TUI_DIRTY_STATUS;
		}
		draw(a);
		wint_t wch;
		int rc = wget_wch(stdscr, &wch);
		if (rc == ERR) {
			/* a paste whose end marker never came (a terminal that
			 * lost it): after a second of silence keys are keys again */
			if (a->pasting && now - t_key > 1.0)
				paste_end(a);
			continue;
		}
		t_key = now;
		handle_key(a, rc, wch);
		/* take what else is already there before drawing again: a paste
		 * or fast typing costs one frame, not one per character */
		timeout(0);
		for (int k = 0; k < 1 << 16 && !a->quit && (rc = wget_wch(stdscr, &wch)) != ERR; k++)
			handle_key(a, rc, wch);
		timeout(100);
	}
	windows_free(a);
	return 0;
}
