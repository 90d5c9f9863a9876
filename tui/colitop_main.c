/* colitop_main.c - `colitop`: the ncurses chat-and-monitor session.
 *
 * Order of things: parse flags; save the terminal's state (before curses
 * changes it: every exit path puts exactly this back); resolve the model
 * (a Hugging Face checkpoint or a stray directory is explained by the
 * engine's open, with the convert command); send diagnostics to the Log pane's ring (never to the
 * terminal curses owns); load the engine (a failure is printed on stderr
 * before the screen opens, and leaves nothing in the cache directory:
 * CACHE_DIR/logs/colitop.log is created only once the model is open);
 * start the HTTP server on the same engine (a busy port is reported in the
 * status line and colitop goes on without it); then run the screen.
 * Quitting cancels the answer in progress, saves the chat session,
 * restores the terminal, stops the server and the engine, and replays the
 * last log lines on stderr. */
#include "config.h"

#include <errno.h>
#include <langinfo.h>
#include <locale.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "kv_cache_dir.h"
#include "util_args.h"
#include "coli_log.h"
#include "engine_flags.h"
#include "model_manifest.h"
#include "model_dir.h"
#include "tui_app.h"
#include "tui_signal.h"
#include "tui_theme.h"

enum { EXIT_OK = 0, EXIT_FAIL = 1, EXIT_USAGE = 2 };

static void usage(FILE *f)
{
	fprintf(f,
		"usage: colitop [--model DIR] [--port N | --no-server] [--host ADDR]\n"
		"               [--api-key-env VAR] [--session NAME] [engine options]\n"
		"  --model DIR          model container (default $COLI_MODEL, then the default model)\n"
		"  --port N             serve the HTTP endpoint on port N, 0 = any free one\n"
		"                       (default 8080; COLI_PORT)\n"
		"  --no-server          do not start the HTTP endpoint\n"
		"  --host ADDR          address to bind (default 127.0.0.1; COLI_HOST)\n"
		"  --api-key-env VAR    require the key held in environment variable VAR\n"
		"                       (COLI_API_KEY_ENV)\n"
		"  --session NAME       chat KV session to resume or create\n"
		"                       (default chat-YYYYMMDD-HHMMSS; COLI_SESSION)\n"
		"  --max-tokens N       longest answer in tokens (default 256)\n"
		"  --temperature T      sampling temperature, 0 = greedy (default 0)\n"
		"  --ignore-eos         answers run to --max-tokens (benchmarks, tests)\n"
		"  --shutdown-grace S   on quit, seconds HTTP requests in flight may take\n"
		"                       before they are stopped (default 5; COLI_SHUTDOWN_GRACE)\n"
		"  -h, --help           this help;  -V, --version  the version\n%s",
		coli_engine_flags_help);
}

typedef struct args {
	const char *model, *host, *key_env, *session;
	long port, max_tokens;
	double temperature, grace;
	int no_server, ignore_eos;
	int version;   /* -V / --version */
} args;

static int parse_env(args *a, coli_err *err)
{
	const char *v;
	if ((v = getenv("COLI_HOST")) && *v)
		a->host = v;
	if ((v = getenv("COLI_API_KEY_ENV")) && *v)
		a->key_env = v;
	if ((v = getenv("COLI_SESSION")) && *v)
		a->session = v;
	if ((v = getenv("COLI_PORT")) && *v && util_parse_int(v, "COLI_PORT", 0, 65535, &a->port, err))
		return -EINVAL;
	if ((v = getenv("COLI_SHUTDOWN_GRACE")) && *v &&
	    util_parse_float(v, "COLI_SHUTDOWN_GRACE", 0, 86400, &a->grace, err))
		return -EINVAL;
	return 0;
}

/* colitop's own flags (coli_cmd_flag_fn). -V prints the version and ends
 * the argument list: the rest is not read, as with --help. */
static int colitop_flag(void *ctx, int argc, char **argv, int *i, coli_err *err)
{
	args *a = ctx;
	const char *s = argv[*i];
	int has = *i + 1 < argc, rc = 0;
	if (!strcmp(s, "-V") || !strcmp(s, "--version")) {
		a->version = 1;
		*i = argc;
	} else if (!strcmp(s, "--model") && has) {
		a->model = argv[++*i];
	} else if (!strcmp(s, "--port") && has) {
		rc = util_parse_int(argv[++*i], s, 0, 65535, &a->port, err);
		a->no_server = 0;
	} else if (!strcmp(s, "--ignore-eos")) {
		a->ignore_eos = 1;
	} else if (!strcmp(s, "--no-server")) {
		a->no_server = 1;
	} else if (!strcmp(s, "--host") && has) {
		a->host = argv[++*i];
	} else if (!strcmp(s, "--api-key-env") && has) {
		a->key_env = argv[++*i];
	} else if (!strcmp(s, "--session") && has) {
		a->session = argv[++*i];
	} else if (!strcmp(s, "--max-tokens") && has) {
		rc = util_parse_int(argv[++*i], s, 1, 1 << 24, &a->max_tokens, err);
	} else if (!strcmp(s, "--shutdown-grace") && has) {
		rc = util_parse_float(argv[++*i], s, 0, 86400, &a->grace, err);
	} else if (!strcmp(s, "--temperature") && has) {
		rc = util_parse_float(argv[++*i], s, 0.0, 10.0, &a->temperature, err);
	} else {
		return 0;
	}
	return rc < 0 ? rc : 1;
}

static int parse_args(int argc, char **argv, args *a, coli_engine_flags *fl, int *done, coli_err *err)
{
	int rr = coli_engine_flags_parse_args(fl, NULL, argc, argv, colitop_flag, a, NULL, err);
	if (rr < 0)
		return rr;
	if (rr == COLI_ARGS_HELP)
		usage(stdout);
	else if (a->version)
		printf("colitop %s\n", PACKAGE_VERSION);
	*done = rr == COLI_ARGS_HELP || a->version;
	return 0;
}

/* "experts int4-g64" from the manifest, for the status line. */
static void read_quant(const char *model_dir, char *out, size_t cap)
{
	char path[4200];
	json_t *root = NULL;
	snprintf(out, cap, "?");
	snprintf(path, sizeof path, "%s/manifest.json", model_dir);
	if (manifest_load(path, &root, NULL))
		return;
	json_t *q = json_object_get(root, "quant");
	const char *d = json_string_value(json_object_get(q, "dense"));
	const char *x = json_string_value(json_object_get(q, "experts"));
	if (d || x)
		snprintf(out, cap, "%s/%s", d ? d : "?", x ? x : "?");
	json_decref(root);
}

/* libmicrohttpd thread: one Log line per external request; generation
 * requests count as served (chat turns are counted apart). */
static void on_server_event(void *opaque, const coli_server_event *ev)
{
	tui_app *a = opaque;
	int gen = !strcmp(ev->method, "POST") && !strstr(ev->url, "count_tokens");
	if (gen && ev->status == 200)
		atomic_fetch_add_explicit(&a->served_ext, 1, memory_order_relaxed);
	if (gen && ev->status == 200)
		tui_log_add(a->log, 1, "HTTP %s %s %s %d: %d+%d tokens, %.2f s%s", ev->client, ev->method, ev->url,
			    ev->status, ev->prompt_tokens, ev->completion_tokens, ev->seconds,
			    ev->completed ? "" : " (client gone)");
	else
		tui_log_add(a->log, ev->status >= 500 ? 2 : 1, "HTTP %s %s %s %d, %.3f s%s", ev->client, ev->method,
			    ev->url, ev->status, ev->seconds, ev->completed ? "" : " (client gone)");
}

static void start_server(tui_app *a, coli_server **srv, const args *ar, const char *model_dir)
{
	coli_err err = { 0 };
	const char *key = NULL;
	if (ar->key_env) {
		key = getenv(ar->key_env);
		if (!key || !*key) {
			snprintf(a->server_note, sizeof a->server_note, "no server: %s is unset", ar->key_env);
			tui_log_add(a->log, 3, "--api-key-env %s: the variable is unset or empty; not serving",
				    ar->key_env);
			return;
		}
	}
	if (!coli_server_host_is_loopback(ar->host) && !key)
		tui_log_add(a->log, 2, "serving on %s without an API key: anyone who can reach this "
			    "address can use the model (set --api-key-env)", ar->host);
	coli_server_opts so;
	coli_server_opts_default(&so);
	so.host = ar->host;
	so.port = (int)ar->port;
	so.api_key = key;
	so.model_dir = model_dir;
	so.shutdown_grace_ms = (int)(ar->grace * 1000.0 + 0.5);
	so.expert_stats = coli_engine_expert_stats(a->eng);
	so.on_event = on_server_event;
	so.event_opaque = a;
	if (coli_server_start(a->eng, &so, srv, &err)) {
		if (err.code == -EADDRINUSE)
			snprintf(a->server_note, sizeof a->server_note,
				 "port %ld busy: no server (--port 0 picks a free one; --no-server)", ar->port);
		else
			snprintf(a->server_note, sizeof a->server_note, "no server: %.150s", err.msg);
		tui_log_add(a->log, 2, "server: %s%s", err.msg,
			    err.code == -EADDRINUSE ? " (start colitop with --port 0 to pick a free port, "
						      "shown in the status line, or --no-server)" : "");
		*srv = NULL;
		return;
	}
	const char *h = ar->host;
	int v6 = strchr(h, ':') != NULL;
	snprintf(a->server_addr, sizeof a->server_addr, "http://%s%s%s:%d", v6 ? "[" : "", h, v6 ? "]" : "",
		 coli_server_port(*srv));
	tui_log_add(a->log, 1, "serving %s/v1", a->server_addr);
}

static int session_tokens(const char *kv_dir, const char *name)
{
	kv_store_entry *list = NULL;
	int n = 0, tok = 0;
	if (kv_store_list(kv_dir, &list, &n, NULL))
		return 0;
	for (int i = 0; i < n; i++)
		if (!strcmp(list[i].name, name))
			tok = list[i].n_tokens;
	free(list);
	return tok;
}

/* newterm rather than initscr: initscr exits the process when the
 * terminal cannot be set up; here that is an error reported like any other. */
static int screen_open(SCREEN **scr, coli_err *err)
{
	const char *term = getenv("TERM");
	*scr = newterm(NULL, stdout, stdin);
	if (!*scr)
		return coli_err_set(err, -ENOTTY, "cannot use the terminal (TERM=%s)", term ? term : "unset");
	tui_signal_install();
	/* bracketed paste: the terminal wraps a paste in ESC[200~ .. ESC[201~,
	 * so a pasted block arrives as one text with its newlines, never as
	 * lines sent one by one */
	define_key("\033[200~", TUI_KEY_PASTE_BEGIN);
	define_key("\033[201~", TUI_KEY_PASTE_END);
	fputs("\033[?2004h", stdout);
	fflush(stdout);
	raw();
	noecho();
	nonl();
	keypad(stdscr, TRUE);
	set_escdelay(25);
	timeout(100);
	mousemask(BUTTON1_PRESSED | BUTTON1_CLICKED, NULL);
	mouseinterval(0);
	tui_theme_init();
	return 0;
}

int main(int argc, char **argv)
{
	static tui_app app;   /* large (line editors); zeroed */
	static tui_log log;
	tui_app *a = &app;
	args ar = { .host = "127.0.0.1", .port = 8080, .max_tokens = 256, .grace = 5 };
	coli_engine_flags fl;
	coli_err err = { 0 };
	coli_server *srv = NULL;
	char model_dir[4096], cache_dir[4096], path[4300], session[KV_NAME_MAX + 1];
	int status = EXIT_FAIL, done = 0, log_ok = 0, screen = 0;
	SCREEN *scr = NULL;

	setlocale(LC_ALL, "");
	if (coli_engine_flags_init(&fl, &err)) {
		fprintf(stderr, "colitop: %s\n", err.msg);
		return EXIT_USAGE;
	}
	if (parse_env(&ar, &err) || parse_args(argc, argv, &ar, &fl, &done, &err)) {
		fprintf(stderr, "colitop: %s\n", err.msg);
		status = EXIT_USAGE;
		goto out;
	}
	if (done) {
		status = EXIT_OK;
		goto out;
	}
	if (!isatty(STDIN_FILENO) || !isatty(STDOUT_FILENO)) {
		fprintf(stderr, "colitop: needs a terminal on standard input and output "
				"(coli serve runs the endpoint without one)\n");
		status = EXIT_FAIL;
		goto out;
	}
	if (ar.session && !kv_store_name_valid(ar.session)) {
		fprintf(stderr, "colitop: --session '%s': names are 1..64 characters of [A-Za-z0-9._-]\n",
			ar.session);
		status = EXIT_USAGE;
		goto out;
	}
	/* what the user's terminal was, before anything (curses included)
	 * changes it */
	tui_signal_save_tty();
	/* a Hugging Face checkpoint or a stray directory is explained by the
	 * container open (coli_model_dir_explain), with the convert command */
	if (coli_model_dir_resolve(ar.model, model_dir, sizeof model_dir, &err))
		goto fail;
	if (fl.opts.cache_dir)
		snprintf(cache_dir, sizeof cache_dir, "%s", fl.opts.cache_dir);
	else if (kv_cache_dir(model_dir, cache_dir, sizeof cache_dir, &err))
		goto fail;
	/* the ring first: the log file is created once the model is open,
	 * so a failed open leaves nothing in the cache directory */
	if (tui_log_init(&log, NULL)) {
		coli_err_set(&err, -ENOMEM, "out of memory");
		goto fail;
	}
	log_ok = 1;
	a->log = &log;
	coli_log_set_sink(tui_log_sink, &log);
	tui_log_add(&log, 1, "colitop %s starting on %s", PACKAGE_VERSION, model_dir);

	fl.opts.model_dir = model_dir;
	if (coli_engine_new(&fl.opts, &a->eng, &err))
		goto fail;
	snprintf(path, sizeof path, "%s/logs", cache_dir);
	if (kv_mkdirs(path, &err)) {
		tui_log_add(&log, 2, "%s (logging to the Log pane only)", err.msg);
		coli_err_clear(&err);
	} else {
		snprintf(path, sizeof path, "%s/logs/colitop.log", cache_dir);
		tui_log_open_file(&log, path);
	}
	snprintf(a->model_name, sizeof a->model_name, "%s", coli_engine_model_name(a->eng));
	a->default_model = !(ar.model && *ar.model) && !(getenv("COLI_MODEL") && *getenv("COLI_MODEL"));
	read_quant(model_dir, a->quant, sizeof a->quant);
	/* the engine's cache dir is the truth for sessions (same rule as ours) */
	snprintf(a->kv_dir, sizeof a->kv_dir, "%s/kv", coli_engine_cache_dir(a->eng));
	coli_gen_params_default(&a->gen);
	a->gen.max_tokens = (int)ar.max_tokens;
	a->gen.temperature = (float)ar.temperature;
	a->gen.ignore_eos = ar.ignore_eos;
	if (coli_chat_template_detect(coli_engine_tokenizer(a->eng), coli_engine_config(a->eng)->model_type,
				      &a->tpl, &err) == 0)
		a->tpl_ok = 1;
	else
		tui_log_add(&log, 2, "chat disabled: %s", err.msg);
	coli_err_clear(&err);
	if (tui_sample_init(a)) {
		coli_err_set(&err, -ENOMEM, "out of memory");
		goto fail;
	}
	if (ar.no_server)
		snprintf(a->server_note, sizeof a->server_note, "no server (--no-server)");
	else
		start_server(a, &srv, &ar, model_dir);

	if (ar.session)
		snprintf(session, sizeof session, "%s", ar.session);
	else
		tui_chat_default_name(session, sizeof session);
	int tok = session_tokens(a->kv_dir, session);
	if (tui_chat_open(&a->chat, a->kv_dir, session, tok, &err)) {
		tui_log_add(&log, 2, "%s", err.msg);   /* an unreadable transcript only */
		coli_err_clear(&err);
	}
	tui_log_add(&log, 1, "chat session %s%s (%d tokens on disk)", session, tok ? " resumed" : " new", tok);
	/* a whole document fits: the context's worth of text and more (a
	 * token is rarely over 16 bytes); what does not fit is refused with a
	 * message, never cut silently */
	size_t in_max = (size_t)coli_engine_ctx(a->eng) * 16;
	tui_edit_init(&a->edit, in_max > TUI_INPUT_MIN ? in_max : TUI_INPUT_MIN);
	tui_edit_init(&a->prompt, KV_NAME_MAX);
	const char *cs = nl_langinfo(CODESET);
	a->ascii = !(cs && (!strcmp(cs, "UTF-8") || !strcmp(cs, "utf8")));

	if (screen_open(&scr, &err))
		goto fail;
	screen = 1;
	tui_app_run(a);
	status = EXIT_OK;
	goto out;
fail:
	fprintf(stderr, "colitop: %s\n", err.msg);
out:
	if (a->eng)
		tui_chat_close(&a->chat);
	if (screen) {
		endwin();
		fputs("\033[?2004l", stdout);   /* bracketed paste off */
		fflush(stdout);
	}
	/* exactly the state saved before curses (endwin restores its own
	 * idea of it, which newterm took after changing the terminal) */
	tui_signal_restore_tty();
	if (scr)
		delscreen(scr);
	coli_server_stop(srv);
	coli_engine_free(a->eng);
	coli_log_set_sink(NULL, NULL);
	if (log_ok) {
		if (screen)
			tui_log_replay(&log, stderr, 8);
		tui_log_free(&log);
	}
	tui_sample_free(a);
	free(a->sess);
	tui_edit_free(&a->edit);
	tui_edit_free(&a->prompt);
	coli_engine_flags_free(&fl);
	return status;
}
