/* tui_sessions.c - the Sessions pane's actions: list the KV sessions on
 * disk, resume one in the Chat pane, rename, delete (after y), start a new
 * chat session. kv_store carries the transcript (NAME.chat.json) through
 * rename and rm. The chat's current session is refused: the engine keeps
 * it open under its name. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tui_app.h"

void tui_sessions_refresh(tui_app *a)
{
	kv_store_entry *list = NULL;
	int n = 0;
	coli_err err = { 0 };
	if (kv_store_list(a->kv_dir, &list, &n, &err)) {
		tui_log_add(a->log, 2, "sessions: %s", err.msg);
		return;
	}
	int same = n == a->n_sess && (!n || !memcmp(list, a->sess, sizeof *list * (size_t)n));
	free(a->sess);
	a->sess = list;
	a->n_sess = n;
	if (!same)
		a->dirty |= 1u << TUI_PANE_SESSIONS;
}

static int session_tokens(tui_app *a, const char *name)
{
	for (int i = 0; i < a->n_sess; i++)
		if (!strcmp(a->sess[i].name, name))
			return a->sess[i].n_tokens;
	return 0;
}

int tui_sessions_switch(tui_app *a, const char *name)
{
	coli_err err = { 0 };
	if (tui_chat_busy(&a->chat)) {
		tui_app_message(a, "stop the current answer first (Esc)");
		return -EBUSY;
	}
	if (!kv_store_name_valid(name)) {
		tui_app_message(a, "bad session name '%s'", name);
		return -EINVAL;
	}
	tui_chat_close(&a->chat);
	tui_sessions_refresh(a);
	int tok = session_tokens(a, name);
	if (tui_chat_open(&a->chat, a->kv_dir, name, tok, &err)) {
		tui_log_add(a->log, 2, "%s", err.msg);
		tui_app_message(a, "%s", err.msg);
	}
	tui_log_add(a->log, 1, "chat session %s%s (%d tokens on disk)", name,
		    tok ? " resumed" : " started", tok);
	memset(a->routed_turn, 0, a->routed_turn ? (size_t)a->n_layers * (size_t)a->n_experts : 0);
	a->chat_scroll = 0;
	a->dirty = TUI_DIRTY_ALL;
	return 0;
}

static void do_rename(tui_app *a, const char *to)
{
	coli_err err = { 0 };
	const char *from = a->prompt_target;
	if (!strcmp(from, a->chat.session)) {
		/* the engine holds the chat's session open under its name */
		tui_app_message(a, "%s is the current chat: switch to another session first", from);
		return;
	}
	if (kv_store_rename(a->kv_dir, from, to, &err)) {
		tui_app_message(a, "%s", err.msg);
		return;
	}
	tui_log_add(a->log, 1, "session %s renamed to %s", from, to);
	tui_app_message(a, "renamed %s to %s", from, to);
}

static void do_delete(tui_app *a)
{
	coli_err err = { 0 };
	const char *name = a->prompt_target;
	if (!strcmp(name, a->chat.session)) {
		tui_app_message(a, "%s is the current chat: switch to another session first", name);
		return;
	}
	if (kv_store_rm(a->kv_dir, name, &err)) {
		tui_app_message(a, "%s", err.msg);
		return;
	}
	tui_log_add(a->log, 1, "session %s deleted", name);
	tui_app_message(a, "deleted %s", name);
}

void tui_sessions_prompt_key(tui_app *a, int key, const char *utf8)
{
	a->dirty |= 1u << TUI_PANE_SESSIONS;
	if (a->prompt_kind == TUI_PROMPT_DELETE) {
		if (key == 'y' || key == 'Y')
			do_delete(a);
		a->prompt_kind = TUI_PROMPT_NONE;
		tui_sessions_refresh(a);
		return;
	}
	if (key == 27) {
		a->prompt_kind = TUI_PROMPT_NONE;
		return;
	}
	if (key == '\n' || key == '\r') {
		char *to = tui_edit_take(&a->prompt);
		if (to && *to)
			do_rename(a, to);
		free(to);
		a->prompt_kind = TUI_PROMPT_NONE;
		tui_sessions_refresh(a);
		return;
	}
	if (utf8)
		tui_edit_insert(&a->prompt, utf8, strlen(utf8));
	else if (key == KEY_BACKSPACE || key == 127 || key == 8)
		tui_edit_op(&a->prompt, TUI_EDIT_BACKSPACE);
	else if (key == KEY_LEFT)
		tui_edit_op(&a->prompt, TUI_EDIT_LEFT);
	else if (key == KEY_RIGHT)
		tui_edit_op(&a->prompt, TUI_EDIT_RIGHT);
}

void tui_sessions_key(tui_app *a, int key)
{
	const kv_store_entry *sel = a->sess_sel >= 0 && a->sess_sel < a->n_sess ? &a->sess[a->sess_sel] : NULL;
	a->dirty |= 1u << TUI_PANE_SESSIONS;
	switch (key) {
	case KEY_UP:
		if (a->sess_sel > 0)
			a->sess_sel--;
		break;
	case KEY_DOWN:
		if (a->sess_sel + 1 < a->n_sess)
			a->sess_sel++;
		break;
	case '\n':
	case '\r':
	case KEY_ENTER:
		if (sel && strcmp(sel->name, a->chat.session)) {
			char name[KV_NAME_MAX + 1];
			snprintf(name, sizeof name, "%s", sel->name);
			if (!tui_sessions_switch(a, name))
				a->focus = TUI_PANE_CHAT;
		}
		break;
	case 'r':
		if (sel) {
			snprintf(a->prompt_target, sizeof a->prompt_target, "%s", sel->name);
			tui_edit_set(&a->prompt, sel->name);
			a->prompt_kind = TUI_PROMPT_RENAME;
		}
		break;
	case 'd':
		if (sel) {
			snprintf(a->prompt_target, sizeof a->prompt_target, "%s", sel->name);
			a->prompt_kind = TUI_PROMPT_DELETE;
		}
		break;
	case 'n': {
		char name[KV_NAME_MAX + 1];
		tui_chat_default_name(name, sizeof name);
		if (!strcmp(name, a->chat.session))   /* same second: make it unique */
			snprintf(name + strlen(name), sizeof name - strlen(name), "-2");
		if (!tui_sessions_switch(a, name))
			a->focus = TUI_PANE_CHAT;
		break;
	}
	default:
		break;
	}
}
