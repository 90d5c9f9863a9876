/* cmd_chat.c - `coli chat [DIR]`: a plain-terminal chat. Each line read on
 * standard input is a user turn; the conversation is rendered with the
 * model's chat template and the reply streamed to standard output.
 *
 * Without --session every turn submits the whole rendered conversation and
 * the engine reuses the KV prefix it already holds. With --session NAME the
 * engine appends each prompt to the persisted session, so only what the
 * template adds since the last turn is sent; if the template rewrites an
 * earlier turn (some strip past reasoning) that cannot be expressed as an
 * append and the turn is refused with a message. */
#include "config.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "chat_template.h"
#include "cli.h"
#include "cli_util.h"
#include "engine.h"
#include "engine_flags.h"

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
		"/quit or end of input ends. Ctrl-C stops a reply.\n%s",
		coli_engine_flags_help);
}

static volatile sig_atomic_t interrupted;

static void on_sigint(int sig)
{
	(void)sig;
	interrupted = 1;
}

typedef struct history {
	coli_chat_msg *m;
	char **owned;          /* strings we allocated, freed with the history */
	int n, cap;
} history;

static int hist_add(history *h, const char *role, const char *content)
{
	if (h->n == h->cap) {
		int cap = h->cap ? h->cap * 2 : 16;
		coli_chat_msg *m = realloc(h->m, sizeof *m * (size_t)cap);
		if (!m)
			return -ENOMEM;
		h->m = m;
		char **o = realloc(h->owned, sizeof *o * (size_t)cap);
		if (!o)
			return -ENOMEM;
		h->owned = o;
		h->cap = cap;
	}
	char *c = strdup(content);
	if (!c)
		return -ENOMEM;
	memset(&h->m[h->n], 0, sizeof h->m[h->n]);
	h->m[h->n].role = role;
	h->m[h->n].content = c;
	h->owned[h->n++] = c;
	return 0;
}

static void hist_clear(history *h, int keep)
{
	while (h->n > keep)
		free(h->owned[--h->n]);
}

/* Stream one reply; *reply receives its text. */
static int run_turn(coli_engine *e, const int *ids, int n, const coli_gen_params *gp, char **reply,
		    coli_err *err)
{
	coli_request *r = NULL;
	size_t len = 0, cap = 256;
	char *buf = malloc(cap);
	int rc = buf ? coli_engine_submit(e, ids, n, gp, &r, err) : coli_err_set(err, -ENOMEM, "out of memory");
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
		if (len + ev.text_len + 1 > cap) {
			while (len + ev.text_len + 1 > cap)
				cap *= 2;
			char *nb = realloc(buf, cap);
			if (!nb) {
				rc = coli_err_set(err, -ENOMEM, "out of memory");
				goto out;
			}
			buf = nb;
		}
		memcpy(buf + len, ev.text, ev.text_len);
		len += ev.text_len;
	}
	putchar('\n');
	fflush(stdout);
	if (ev.kind == COLI_EV_ERROR) {
		rc = coli_err_set(err, ev.error_code, "%s", ev.message);
		goto out;
	}
	buf[len] = '\0';
	*reply = buf;
	buf = NULL;
out:
	free(buf);
	coli_request_free(r);
	return rc;
}

/* The prompt ids of a turn: the rendered conversation, or in session mode
 * only what follows the text already in the session (*sent). */
static int turn_ids(coli_engine *e, const coli_chat_template *tpl, history *h, const char *session,
		    const char *sent, int **ids, size_t *n, char **full, coli_err *err)
{
	int rc = coli_chat_render(tpl, h->m, h->n, NULL, 1, full, err);
	if (rc)
		return rc;
	const char *text = *full;
	if (session) {
		size_t k = strlen(sent);
		if (strncmp(*full, sent, k))
			return coli_err_set(err, -EINVAL,
					    "session %s: the chat template rewrote an earlier turn, which cannot be "
					    "appended to the session (use /reset or run without --session)", session);
		text += k;
	}
	return coli_tokenizer_encode(coli_engine_tokenizer(e), text, strlen(text), ids, n, err);
}

static int chat_loop(coli_engine *e, const coli_chat_template *tpl, history *h, int keep,
		     const coli_gen_params *gp)
{
	char *line = NULL, *sent = strdup("");
	size_t lcap = 0;
	int tty = isatty(STDIN_FILENO), status = COLI_EXIT_OK;
	coli_err err = { 0 };
	while (sent) {
		if (tty) {
			fputs("> ", stdout);
			fflush(stdout);
		}
		ssize_t got = getline(&line, &lcap, stdin);
		if (got < 0)
			break;
		while (got > 0 && (line[got - 1] == '\n' || line[got - 1] == '\r'))
			line[--got] = '\0';
		if (!strcmp(line, "/quit") || !strcmp(line, "/exit"))
			break;
		if (!strcmp(line, "/reset")) {
			hist_clear(h, keep);
			continue;
		}
		if (!got)
			continue;
		int *ids = NULL;
		size_t n = 0;
		char *full = NULL, *reply = NULL;
		if (hist_add(h, "user", line) ||
		    turn_ids(e, tpl, h, gp->session, sent, &ids, &n, &full, &err) ||
		    run_turn(e, ids, (int)n, gp, &reply, &err)) {
			cli_errorf("chat", "%s", err.msg[0] ? err.msg : "out of memory");
			status = COLI_EXIT_FAIL;
			free(ids);
			free(full);
			break;
		}
		free(ids);
		/* what the session now holds: the prompt, then the reply */
		char *ns = malloc(strlen(full) + strlen(reply) + 1);
		if (ns) {
			strcpy(ns, full);
			strcat(ns, reply);
		}
		free(sent);
		sent = ns;
		free(full);
		if (hist_add(h, "assistant", reply)) {
			free(reply);
			break;
		}
		free(reply);
	}
	free(line);
	free(sent);
	return status;
}

int cmd_chat(int argc, char **argv)
{
	coli_err err = { 0 };
	coli_engine_flags fl;
	coli_gen_params gp;
	coli_gen_params_default(&gp);
	gp.max_tokens = 1024;
	const char *dir = NULL, *system_msg = NULL;
	int status = COLI_EXIT_FAIL;
	coli_engine *e = NULL;
	history h = { 0 };
	if (coli_engine_flags_init(&fl, &err)) {
		cli_errorf("chat", "%s", err.msg);
		return COLI_EXIT_USAGE;
	}
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		int rr = coli_engine_flags_parse(&fl, argc, argv, &i, &err);
		if (rr < 0)
			goto usage_err;
		if (rr)
			continue;
		int has = i + 1 < argc;
		long lv;
		double dv;
		if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			usage(stdout);
			status = COLI_EXIT_OK;
			goto out;
		} else if (!strcmp(a, "--system") && has) {
			system_msg = argv[++i];
		} else if (!strcmp(a, "--session") && has) {
			gp.session = argv[++i];
		} else if ((!strcmp(a, "-n") || !strcmp(a, "--max-tokens")) && has) {
			if (cli_parse_int(argv[++i], a, 1, 1 << 24, &lv, &err))
				goto usage_err;
			gp.max_tokens = (int)lv;
		} else if (!strcmp(a, "--temp") && has) {
			if (cli_parse_float(argv[++i], a, 0, 100, &dv, &err))
				goto usage_err;
			gp.temperature = (float)dv;
		} else if (!strcmp(a, "--top-p") && has) {
			if (cli_parse_float(argv[++i], a, 0, 1, &dv, &err))
				goto usage_err;
			gp.top_p = (float)dv;
		} else if (!strcmp(a, "--seed") && has) {
			if (cli_parse_int(argv[++i], a, 0, 0x7fffffffffffffffL, &lv, &err))
				goto usage_err;
			gp.seed = (uint64_t)lv;
		} else if (a[0] != '-' && !dir) {
			dir = a;
		} else {
			coli_err_set(&err, -EINVAL, "unexpected argument '%s' (see --help)", a);
			goto usage_err;
		}
	}
	fl.opts.model_dir = dir;
	if (coli_engine_new(&fl.opts, &e, &err))
		goto fail;
	coli_chat_template tpl;
	const coli_config *cfg = coli_engine_config(e);
	if (coli_chat_template_detect(coli_engine_tokenizer(e), cfg ? cfg->model_type : NULL, &tpl, &err))
		goto fail;
	if (system_msg && hist_add(&h, "system", system_msg)) {
		coli_err_set(&err, -ENOMEM, "out of memory");
		goto fail;
	}
	struct sigaction sa = { 0 }, old;
	sa.sa_handler = on_sigint;
	sigaction(SIGINT, &sa, &old);
	status = chat_loop(e, &tpl, &h, system_msg ? 1 : 0, &gp);
	sigaction(SIGINT, &old, NULL);
	goto out;
usage_err:
	cli_errorf("chat", "%s", err.msg);
	status = COLI_EXIT_USAGE;
	goto out;
fail:
	cli_errorf("chat", "%s", err.msg);
out:
	hist_clear(&h, 0);
	free(h.m);
	free(h.owned);
	coli_engine_free(e);
	coli_engine_flags_free(&fl);
	return status;
}
