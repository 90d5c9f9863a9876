/* cmd_chat.c - `coli chat [DIR]`: a plain-terminal chat. Each line read on
 * standard input is a user turn; the reply streams to standard output and
 * its token count, speed and time to first token follow on standard error.
 * On a terminal the line is edited with libedit (arrows, history, Ctrl-A/E
 * and friends); in a pipe lines are read as they come.
 *
 * Without --session every turn submits the whole rendered conversation and
 * the engine reuses the KV prefix it already holds. With --session NAME the
 * conversation is a persisted KV session: each turn sends only its own
 * rendered messages (coli_chat_render_turn), and the visible transcript is
 * kept beside the session (chat_transcript.h), so colitop and `coli chat`
 * continue the same conversation after a restart without re-prefill. */
#include "config.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <editline/readline.h>

#include "chat_template.h"
#include "chat_transcript.h"
#include "cli.h"
#include "cli_args.h"
#include "cli_json.h"
#include "util_args.h"
#include "util_buf.h"
#include "engine.h"
#include "engine_flags.h"
#include "kv_file.h"
#include "kv_store.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: coli chat [DIR] [options] [engine options]\n"
		"  --system TEXT       system message\n"
		"  --session NAME      continue (and persist) the KV session NAME\n"
		"  -n, --max-tokens N  longest reply (default 1024)\n"
		"  --temp T            temperature (default 0 = greedy)\n"
		"  --top-p P           nucleus sampling (default 1 = off)\n"
		"  --seed S            sampling seed (default 0)\n"
		"Lines on standard input are user turns; /reset forgets the conversation,\n"
		"/quit or end of input (Ctrl-D) ends. Ctrl-C stops a reply.\n%s%s",
		cli_json_flags_help, coli_engine_flags_help);
}

static volatile sig_atomic_t interrupted;

static void on_sigint(int sig)
{
	(void)sig;
	interrupted = 1;
}

typedef struct chat {
	coli_engine *e;
	coli_chat_template tpl;
	coli_gen_params gp;
	const char *system_msg;
	chat_transcript t;
	char kv_dir[4200];
	int has_history;       /* session mode: the session holds tokens */
	int tty_in, tty_err;
} chat;

/* Stream one reply; *reply receives its text, *finish how it ended. */
static int run_turn(chat *c, const int *ids, int n, char **reply, int *finish, coli_err *err)
{
	coli_request *r = NULL;
	util_buf buf = { 0 };
	int rc = coli_engine_submit(c->e, ids, n, &c->gp, &r, err);
	if (rc)
		goto out;
	coli_event ev;
	interrupted = 0;
	for (;;) {
		if (!coli_request_next(r, &ev, 100)) {
			if (interrupted)
				coli_request_cancel(r);
			continue;
		}
		if (ev.kind != COLI_EV_TEXT)
			break;
		fwrite(ev.text, 1, ev.text_len, stdout);
		fflush(stdout);
		if (util_buf_add(&buf, ev.text, ev.text_len)) {
			rc = coli_err_set(err, -ENOMEM, "out of memory");
			goto out;
		}
	}
	putchar('\n');
	fflush(stdout);
	if (ev.kind == COLI_EV_ERROR) {
		rc = coli_err_set(err, ev.error_code, "%s", ev.message);
		goto out;
	}
	if (c->tty_err)
		fprintf(stderr, "[%d tokens, %.1f tok/s, first token %.0f ms, %d of %d prompt tokens cached]\n",
			ev.completion_tokens, ev.decode_tps, ev.ttft_ms, ev.cached_tokens, ev.prompt_tokens);
	if (!(*reply = util_buf_steal(&buf, NULL))) {
		rc = coli_err_set(err, -ENOMEM, "out of memory");
		goto out;
	}
	*finish = ev.finish;
out:
	util_buf_free(&buf);
	coli_request_free(r);
	return rc;
}

/* The prompt text of a turn. */
static int turn_text(chat *c, const char *line, char **text, coli_err *err)
{
	if (!c->gp.session) {
		/* the whole conversation; the engine reuses the prefix it holds */
		return coli_chat_render(&c->tpl, c->t.msgs, c->t.n, NULL, 1, text, err);
	}
	coli_chat_msg m[2];
	int n = 0;
	memset(m, 0, sizeof m);
	if (!c->has_history && c->system_msg) {
		m[n].role = "system";
		m[n++].content = c->system_msg;
	}
	m[n].role = "user";
	m[n++].content = line;
	int unfinished = c->t.last_finish && c->t.last_finish != COLI_FINISH_STOP;
	return coli_chat_render_turn(&c->tpl, m, n, c->has_history, unfinished, text, err);
}

static int one_turn(chat *c, const char *line, coli_err *err)
{
	char *text = NULL, *reply = NULL;
	int *ids = NULL, finish = 0, rc;
	size_t n = 0;
	int mark = c->t.n;
	int first = c->gp.session ? !c->has_history : c->t.n == 0;
	if (first && c->system_msg && chat_transcript_add(&c->t, "system", c->system_msg, strlen(c->system_msg)))
		return coli_err_set(err, -ENOMEM, "out of memory");
	if (chat_transcript_add(&c->t, "user", line, strlen(line)))
		return coli_err_set(err, -ENOMEM, "out of memory");
	if (!(rc = turn_text(c, line, &text, err)))
		/* a template that opens a thinking block: --json constrains the
		 * answer after "</think>", not the thinking */
		c->gp.grammar_after_think = coli_chat_opens_thinking(text);
	if (rc ||
	    (rc = coli_tokenizer_encode(coli_engine_tokenizer(c->e), text, strlen(text), &ids, &n, err)) ||
	    (rc = run_turn(c, ids, (int)n, &reply, &finish, err))) {
		chat_transcript_truncate(&c->t, mark);
		goto out;
	}
	if (chat_transcript_add(&c->t, "assistant", reply, strlen(reply))) {
		rc = coli_err_set(err, -ENOMEM, "out of memory");
		goto out;
	}
	c->t.last_finish = finish;
	c->has_history = 1;
	if (c->gp.session && chat_transcript_save(c->kv_dir, c->gp.session, &c->t, err)) {
		/* the KV session is saved by the engine; only the transcript failed */
		fprintf(stderr, "coli chat: warning: %s\n", err->msg);
		coli_err_clear(err);
	}
out:
	free(text);
	free(ids);
	free(reply);
	return rc;
}

static char *read_line(chat *c)
{
	if (c->tty_in) {
		char *l = readline("> ");
		if (l && *l)
			add_history(l);
		return l;
	}
	char *line = NULL;
	size_t cap = 0;
	ssize_t got = getline(&line, &cap, stdin);
	if (got < 0) {
		free(line);
		return NULL;
	}
	while (got > 0 && (line[got - 1] == '\n' || line[got - 1] == '\r'))
		line[--got] = '\0';
	return line;
}

/* On resuming a session at a terminal: the last turns as they were shown
 * (user lines after the prompt, replies as they streamed), so the user
 * sees where the conversation stands. */
#define CHAT_TAIL_MESSAGES 6

static void print_tail(const chat *c)
{
	int from = c->t.n > CHAT_TAIL_MESSAGES ? c->t.n - CHAT_TAIL_MESSAGES : 0;
	if (from > 0)
		printf("[... %d earlier messages]\n", from);
	for (int i = from; i < c->t.n; i++) {
		const coli_chat_msg *m = &c->t.msgs[i];
		if (!strcmp(m->role, "user"))
			printf("> %s\n", m->content);
		else if (!strcmp(m->role, "assistant"))
			printf("%s\n", m->content);
		else
			printf("[%s] %s\n", m->role, m->content);
	}
	fflush(stdout);
}

/* Session mode: the transcript and whether the session already has tokens. */
static int open_session(chat *c, coli_err *err)
{
	snprintf(c->kv_dir, sizeof c->kv_dir, "%s/kv", coli_engine_cache_dir(c->e));
	int rc = kv_store_name_check(c->gp.session, err);
	if (rc)
		return rc;
	if ((rc = chat_transcript_load(c->kv_dir, c->gp.session, &c->t, err)))
		return rc;
	char path[4400];
	kv_file_report rep;
	if (!kv_store_path(c->kv_dir, c->gp.session, "kv", path, sizeof path, NULL) &&
	    !kv_file_inspect(path, 0, &rep, NULL)) {
		c->has_history = rep.n_tokens > 0;
		if (c->tty_err && rep.n_tokens > 0)
			fprintf(stderr, "[session %s: %d tokens, %d messages; continuing]\n", c->gp.session,
				rep.n_tokens, c->t.n);
		kv_file_report_free(&rep);
	}
	if (!c->has_history)
		chat_transcript_truncate(&c->t, 0);
	else if (c->tty_in)
		print_tail(c);
	return 0;
}

static int chat_loop(chat *c)
{
	coli_err err = { 0 };
	int status = COLI_EXIT_OK, at_eof = 0;
	char *line;
	while ((line = read_line(c)) || !(at_eof = 1)) {
		if (!strcmp(line, "/quit") || !strcmp(line, "/exit")) {
			free(line);
			break;
		}
		if (!strcmp(line, "/reset")) {
			if (c->gp.session)
				fprintf(stderr, "coli chat: /reset does not apply to a persisted session "
						"(start another with --session NAME)\n");
			else
				chat_transcript_truncate(&c->t, 0);
		} else if (*line && one_turn(c, line, &err)) {
			cli_errorf("chat", "%s", err.msg);
			status = COLI_EXIT_FAIL;
			free(line);
			break;
		}
		free(line);
	}
	/* Ctrl-C or Ctrl-D at the prompt: the shell's prompt goes on a line
	 * of its own, not after ours */
	if (c->tty_in && at_eof) {
		putchar('\n');
		fflush(stdout);
	}
	return status;
}

struct chat_flags {
	chat *c;
	cli_json_flags *jf;
};

/* chat's own flags and the JSON-output ones (coli_cmd_flag_fn). */
static int chat_flag(void *ctx, int argc, char **argv, int *i, coli_err *err)
{
	struct chat_flags *cf = ctx;
	const char *a = argv[*i];
	int rr = cli_json_flags_parse(cf->jf, &cf->c->gp, argc, argv, i, err);
	if (rr)
		return rr;
	if (!strcmp(a, "--system") && *i + 1 < argc)
		cf->c->system_msg = argv[++*i];
	else if (!strcmp(a, "--session") && *i + 1 < argc)
		cf->c->gp.session = argv[++*i];
	else
		return 0;
	return 1;
}

int cmd_chat(int argc, char **argv)
{
	coli_err err = { 0 };
	coli_engine_flags fl;
	chat c;
	memset(&c, 0, sizeof c);
	coli_gen_params_default(&c.gp);
	c.gp.max_tokens = 1024;
	const char *dir = NULL;
	int status = COLI_EXIT_FAIL;
	cli_json_flags jf = { 0 };
	struct chat_flags cf = { &c, &jf };
	if (cli_engine_args("chat", &fl, &c.gp, argc, argv, chat_flag, &cf, &dir, usage, &status))
		goto out;
	if (c.gp.session && kv_store_name_check(c.gp.session, &err))
		goto usage_err;
	c.tty_in = isatty(STDIN_FILENO);
	c.tty_err = isatty(STDERR_FILENO);
	fl.opts.model_dir = dir;
	if (coli_engine_new(&fl.opts, &c.e, &err))
		goto fail;
	const coli_config *cfg = coli_engine_config(c.e);
	if (coli_chat_template_detect(coli_engine_tokenizer(c.e), cfg ? cfg->model_type : NULL, &c.tpl, &err))
		goto fail;
	if (c.gp.session && open_session(&c, &err))
		goto fail;
	struct sigaction sa = { 0 }, old;
	sa.sa_handler = on_sigint;
	sigaction(SIGINT, &sa, &old);
	status = chat_loop(&c);
	sigaction(SIGINT, &old, NULL);
	goto out;
usage_err:
	cli_errorf("chat", "%s", err.msg);
	status = COLI_EXIT_USAGE;
	goto out;
fail:
	cli_errorf("chat", "%s", err.msg);
out:
	chat_transcript_free(&c.t);
	coli_engine_free(c.e);
	cli_json_flags_free(&jf);
	coli_engine_flags_free(&fl);
	return status;
}
