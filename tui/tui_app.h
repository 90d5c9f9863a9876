/* tui_app.h - colitop's state, shared by the loop (tui_app.c), the
 * telemetry sampler (tui_sample.c) and the pane drawers (tui_draw_*.c).
 *
 * Owner: the main (TUI) thread, the only thread touching curses. The engine
 * and the HTTP server run on their own threads; the TUI reads their
 * snapshots (expert_stats, queue length, request events) without blocking.
 *
 * Redraw policy: each pane has a dirty bit, set when its inputs change
 * (a new snapshot differing from the last, a key, a resize). A frame with
 * no dirty bit draws nothing, so an idle colitop only wakes at 10 Hz to
 * take a snapshot and compare. */
#ifndef COLI_TUI_APP_H
#define COLI_TUI_APP_H

#include <curses.h>
#include <stdatomic.h>

#include "chat_template.h"
#include "engine.h"
#include "expert_store_stats.h"
#include "kv_store.h"
#include "server.h"
#include "tui_affinity.h"
#include "tui_atlas.h"
#include "tui_chat.h"
#include "tui_edit.h"
#include "tui_layout.h"
#include "tui_log.h"

#define TUI_HIST_SECONDS 120   /* sparkline history, one sample per second */
/* Key codes colitop defines (define_key) for bracketed paste. */
#define TUI_KEY_PASTE_BEGIN (KEY_MAX + 1)
#define TUI_KEY_PASTE_END (KEY_MAX + 2)
/* The chat input holds at least this many bytes (more when the context
 * is long: 16 bytes per token of context). */
#define TUI_INPUT_MIN ((size_t)1 << 20)
#define TUI_DIRTY_STATUS (1u << TUI_PANE_COUNT)
#define TUI_DIRTY_ALL ((1u << (TUI_PANE_COUNT + 1)) - 1)

/* The Expert map's column order (key a cycles): expert id, clusters of
 * the recorded history (tui_atlas.h), co-activation of the routing
 * sampled since colitop started (tui_affinity.h). */
enum tui_order { TUI_ORDER_ID = 0, TUI_ORDER_HISTORY, TUI_ORDER_LIVE };

enum tui_prompt_kind { TUI_PROMPT_NONE = 0, TUI_PROMPT_RENAME, TUI_PROMPT_DELETE };

typedef struct tui_series {
	double v[TUI_HIST_SECONDS];   /* ring, newest at (head - 1) */
	int head, n;
} tui_series;

typedef struct tui_app {
	/* engine side (not owned here) */
	coli_engine *eng;
	const expert_stats *xs;
	coli_chat_template tpl;
	int tpl_ok;
	coli_gen_params gen;
	/* facts for the status line */
	char model_name[256], quant[64], kv_dir[4200];
	char server_addr[160];    /* "http://127.0.0.1:8080" or "" */
	char server_note[200];    /* why there is no server */
	_Atomic unsigned long served_ext;   /* external generation requests (HTTP threads add) */
	int default_model;        /* running the embedded demo model */
	tui_log *log;
	/* screen */
	int ascii;                /* locale is not UTF-8: ASCII glyphs */
	tui_layout lay;
	WINDOW *win[TUI_PANE_COUNT];
	WINDOW *status, *keys;
	int focus, zoom, help;
	unsigned dirty;
	int quit;
	double ctrl_c_at;         /* last Ctrl-C while idle: a second one quits */
	int pasting;              /* between ESC[200~ and ESC[201~ */
	size_t paste_bytes, paste_refused;
	/* chat */
	tui_chat chat;
	tui_edit edit;
	int chat_scroll;          /* display lines up from the bottom */
	int think_shown;          /* thinking expanded (F5), else one line each */
	unsigned chat_seen;       /* chat.version last drawn */
	/* telemetry */
	int n_layers, n_experts, first_moe, has_shared;
	expert_stats_summary sum, prev_sum;
	int have_sum;
	expert_stats_layer *layers;     /* (n_layers) */
	expert_stats_expert *experts;   /* (n_layers, n_experts) */
	unsigned char *routed_turn;     /* (n_layers, n_experts) routed in this turn */
	float heat_max;
	tui_series s_hit, s_bw[EXPERT_STATS_MAX_DRIVES], s_tok;
	double bytes_per_token, iops_1s;
	uint64_t last_tokens, last_bytes, last_hits, last_lookups;
	double t_second, t_experts, t_aff, t_sessions;
	tui_affinity aff;
	int order_mode;           /* enum tui_order */
	tui_atlas atlas;          /* recorded profiles: history order, conversation view */
	int conv_on;              /* the Expert map shows the conversation view (key c) */
	double t_conv;
	int routing_scroll, experts_scroll, log_scroll, log_follow;
	unsigned log_seen;
	/* sessions */
	kv_store_entry *sess;
	int n_sess, sess_sel;
	int prompt_kind;
	tui_edit prompt;
	char prompt_target[KV_NAME_MAX + 1];
	char msg[256];            /* transient status message */
	double msg_until;
} tui_app;

/* tui_app.c */
int tui_app_run(tui_app *a);
void tui_app_message(tui_app *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* tui_sample.c: take a snapshot; sets dirty bits for what changed. */
int tui_sample_init(tui_app *a);
void tui_sample_free(tui_app *a);
void tui_sample(tui_app *a, double now);
void tui_series_push(tui_series *s, double v);
/* Key a: the Expert map's next column order (id, history, live). */
void tui_order_next(tui_app *a);
/* The last n samples, oldest first, into out; returns how many. */
int tui_series_last(const tui_series *s, int n, double *out);

/* tui_sessions.c */
void tui_sessions_refresh(tui_app *a);
void tui_sessions_key(tui_app *a, int key);
void tui_sessions_prompt_key(tui_app *a, int key, const char *utf8);
int tui_sessions_switch(tui_app *a, const char *name);

/* Drawing (tui_draw_*.c); each draws one pane into its window. */
void tui_draw_box(tui_app *a, WINDOW *w, int pane, const char *extra);
void tui_draw_text(tui_app *a, WINDOW *w, int y, int x, int width, const char *s, int attr);
void tui_draw_chat(tui_app *a, WINDOW *w);
void tui_draw_routing(tui_app *a, WINDOW *w);
void tui_draw_experts(tui_app *a, WINDOW *w);
void tui_draw_conv(tui_app *a, WINDOW *w);    /* tui_draw_atlas.c */
void tui_draw_cache(tui_app *a, WINDOW *w);
void tui_draw_io(tui_app *a, WINDOW *w);
void tui_draw_sessions(tui_app *a, WINDOW *w);
void tui_draw_log(tui_app *a, WINDOW *w);
void tui_draw_status(tui_app *a, WINDOW *w);
void tui_draw_keys(tui_app *a, WINDOW *w);
void tui_draw_help(tui_app *a);
void tui_draw_too_small(tui_app *a);

#endif
