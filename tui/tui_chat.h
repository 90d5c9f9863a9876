/* tui_chat.h - the conversation of the Chat pane, bound to a KV session.
 *
 * Each turn renders only the new user message with the model's chat
 * template (coli_chat_render_turn: no BOS once the session has history)
 * and submits it with params.session = NAME: the engine continues the
 * stored history, so a restarted colitop resumes without prefilling the
 * past again. The visible transcript is kept beside the session in
 * KV_DIR/NAME.chat.json (chat_transcript.h, the format `coli chat` shares),
 * written atomically after every answer. A thinking model's reasoning is
 * split out of the answer as it streams (chat_think.h) and kept in the
 * transcript beside it, so a resumed conversation shows it the same way.
 * Owner: the TUI thread. */
#ifndef COLI_TUI_CHAT_H
#define COLI_TUI_CHAT_H

#include <stddef.h>

#include "chat_template.h"
#include "chat_think.h"
#include "coli_err.h"
#include "engine.h"
#include "kv_file.h"
#include "util_buf.h"

enum tui_role_kind { TUI_MSG_USER = 0, TUI_MSG_ASSISTANT, TUI_MSG_NOTE, TUI_MSG_ERROR };

/* A string that grows as the answer streams. */
typedef struct tui_msg {
	int role;            /* enum tui_role_kind */
	util_buf text;       /* UTF-8, NUL-terminated: the answer */
	/* An answer's thinking (a thinking model's "<think>" block, split
	 * out as it streams; shown collapsed to one line unless expanded). */
	int has_think;       /* the answer opened a thinking block */
	util_buf think;      /* UTF-8, NUL-terminated (p NULL while empty) */
	int think_tokens;    /* tokens generated inside the block (0: not known) */
} tui_msg;

typedef struct tui_chat {
	tui_msg *msgs;
	int n, cap;
	char session[KV_NAME_MAX + 1];
	char kv_dir[4200];
	int kv_tokens;           /* tokens of the session on disk (history exists) */
	coli_request *req;       /* the answer being generated, or NULL */
	chat_think think;        /* splits the answer being generated */
	int last_finish;         /* enum coli_finish of the last answer, 0 none */
	/* figures of the last answer (DONE) */
	int have_stats;
	double ttft_ms, tps;
	int prompt_tokens, cached_tokens, completion_tokens;
	/* live figures while generating */
	double t_submit, t_first;
	int n_streamed;
	unsigned version;        /* bumped on every visible change */
	unsigned long turns;     /* answers finished in this colitop (all sessions) */
	char save_err[256];      /* the session or its transcript could not be
				  * written (disk full...); "" when the last save worked */
} tui_chat;

/* Bind to session NAME in kv_dir and load its transcript when present. */
int tui_chat_open(tui_chat *c, const char *kv_dir, const char *session, int kv_tokens,
		  coli_err *err);
/* Cancel the current answer (waiting for it to end), save, free. */
void tui_chat_close(tui_chat *c);
/* Send one user turn. */
int tui_chat_send(tui_chat *c, coli_engine *e, const coli_chat_template *tpl, const char *text,
		  const coli_gen_params *base, coli_err *err);
/* Drain the request's events without blocking; 1 when the transcript or
 * figures changed. */
int tui_chat_poll(tui_chat *c);
/* Esc / Ctrl-C: stop the current answer (it ends with DONE cancelled). */
void tui_chat_stop(tui_chat *c);
int tui_chat_busy(const tui_chat *c);
/* Some answer of the conversation has thinking (F5 shows it). */
int tui_chat_has_think(const tui_chat *c);
int tui_chat_save(const tui_chat *c, coli_err *err);
/* Add a note line (not sent to the model, kept in the transcript). */
void tui_chat_note(tui_chat *c, int role, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* "chat-YYYYMMDD-HHMMSS" for now. */
void tui_chat_default_name(char *out, size_t cap);
#endif
