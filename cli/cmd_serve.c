/* cmd_serve.c - `coli serve [DIR] [options] [engine options]`: the HTTP
 * endpoint without the TUI. Runs until SIGINT/SIGTERM, then drains: no new
 * connections, in-flight requests get --shutdown-grace seconds, the rest
 * are ended with a final error event or a 503, sessions are flushed by the
 * engine's shutdown, exit 0. SIGHUP reopens --log-file (log rotation) and
 * never stops the server. */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cli_args.h"
#include "util_args.h"
#include "coli_log.h"
#include "engine.h"
#include "engine_flags.h"
#include "server.h"
#include "util_log_ring.h"
#include "util_size_parse.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: coli serve [DIR] [options] [engine options]\n"
		"  --host ADDR          address to bind (default 127.0.0.1; COLI_HOST)\n"
		"  --port N             TCP port, 0 = any free one (default 8080; COLI_PORT)\n"
		"  --api-key-env VAR    require the key held in environment variable VAR\n"
		"                       (COLI_API_KEY_ENV); the key itself never goes on argv\n"
		"  --max-queue N        queued requests before 503 (default 16; COLI_MAX_QUEUE)\n"
		"  --max-body BYTES     request body limit (default 4M; COLI_MAX_BODY)\n"
		"  --timeout S          idle connection timeout in seconds (default 30; COLI_HTTP_TIMEOUT)\n"
		"  --request-timeout S  seconds a connection has to send a complete request\n"
		"                       (default 30; COLI_REQUEST_TIMEOUT)\n"
		"  --max-connections N  simultaneous connections (default 64; COLI_MAX_CONNECTIONS)\n"
		"  --shutdown-grace S   on SIGTERM/SIGINT, seconds in-flight requests may take\n"
		"                       before they are stopped (default 5; COLI_SHUTDOWN_GRACE)\n"
		"  --ignore-eos         generate until max_tokens (benchmarks, tests;\n"
		"                       COLI_IGNORE_EOS=1)\n"
		"  --log-file PATH      append the log to PATH instead of stderr; SIGHUP reopens\n"
		"                       it (COLI_LOG_FILE)\n"
		"  --alias NAME         another name the model answers to (repeatable; '*': any)\n"
		"  -v, --verbose        log each refused request and ignored field (COLI_VERBOSE=1)\n%s",
		coli_engine_flags_help);
}

struct serve_args {
	const char *dir, *host, *key_env, *log_file;
	long port, max_queue, timeout, max_conn, req_timeout;
	double grace;
	int64_t max_body;
	int verbose, ignore_eos;
	const char *aliases[17];   /* --alias, NULL-terminated */
	int n_aliases;
};

/* Environment twins first, so flags override them. */
static int serve_env(struct serve_args *a, coli_err *err)
{
	const char *v;
	if ((v = getenv("COLI_HOST")) && *v)
		a->host = v;
	if ((v = getenv("COLI_API_KEY_ENV")) && *v)
		a->key_env = v;
	if ((v = getenv("COLI_PORT")) && *v && util_parse_int(v, "COLI_PORT", 0, 65535, &a->port, err))
		return -EINVAL;
	if ((v = getenv("COLI_MAX_QUEUE")) && *v &&
	    util_parse_int(v, "COLI_MAX_QUEUE", 1, 1 << 20, &a->max_queue, err))
		return -EINVAL;
	if ((v = getenv("COLI_HTTP_TIMEOUT")) && *v &&
	    util_parse_int(v, "COLI_HTTP_TIMEOUT", 1, 86400, &a->timeout, err))
		return -EINVAL;
	if ((v = getenv("COLI_REQUEST_TIMEOUT")) && *v &&
	    util_parse_int(v, "COLI_REQUEST_TIMEOUT", 1, 86400, &a->req_timeout, err))
		return -EINVAL;
	if ((v = getenv("COLI_MAX_CONNECTIONS")) && *v &&
	    util_parse_int(v, "COLI_MAX_CONNECTIONS", 1, 100000, &a->max_conn, err))
		return -EINVAL;
	if ((v = getenv("COLI_MAX_BODY")) && *v && size_parse(v, "COLI_MAX_BODY", &a->max_body, err))
		return -EINVAL;
	if ((v = getenv("COLI_SHUTDOWN_GRACE")) && *v &&
	    util_parse_float(v, "COLI_SHUTDOWN_GRACE", 0, 86400, &a->grace, err))
		return -EINVAL;
	if ((v = getenv("COLI_LOG_FILE")) && *v)
		a->log_file = v;
	if ((v = getenv("COLI_IGNORE_EOS")) && !strcmp(v, "1"))
		a->ignore_eos = 1;
	if ((v = getenv("COLI_VERBOSE")) && !strcmp(v, "1"))
		a->verbose = 1;
	return 0;
}

/* --log-file: the sink appends timestamped lines to a util_log_ring, whose
 * writer thread writes the file: no logging thread (the engine's included)
 * waits for the disk, and a full ring drops lines and says how many.
 * SIGHUP asks the writer to reopen the path, so a rotated file is let go
 * (the daemon convention); a path that cannot be reopened sends the log to
 * stderr until the next SIGHUP. */
static const char *const log_file_levels[4] = { "debug", "info", "warn", "error" };

static void log_file_sink(void *opaque, int level, const char *line)
{
	util_log_ring_append(opaque, level, line);
}

static int log_file_open(util_log_ring **lf, const char *path, coli_err *err)
{
	int rc = util_log_ring_new(path, log_file_levels, 0, lf, err);
	if (rc)
		return coli_err_set(err, rc, "--log-file %s: %s", path, strerror(-rc));
	coli_log_set_sink(log_file_sink, *lf);
	return 0;
}

/* Without --log-file the log goes to stderr, through a ring as well: a
 * stderr piped into a reader that stalls must not stall the engine. The
 * lines are the default sink's ("coli: warning: ..."). */
static const char *const stderr_levels[4] = { "debug", "info", "warning", "error" };

static int log_stderr_open(util_log_ring **lf, coli_err *err)
{
	if (util_log_ring_new_stream(stderr, "coli: ", stderr_levels, 0, lf, err))
		return -1;
	coli_log_set_sink(log_file_sink, *lf);
	return 0;
}

/* After the sink is gone: every line logged is written, then closed. */
static void log_file_close(util_log_ring *lf)
{
	if (!lf)
		return;
	coli_log_set_sink(NULL, NULL);
	util_log_ring_free(lf);
}

/* serve's own flags (coli_cmd_flag_fn). */
static int serve_flag(void *ctx, int argc, char **argv, int *i, coli_err *err)
{
	struct serve_args *a = ctx;
	const char *s = argv[*i];
	int has = *i + 1 < argc;
	if (!strcmp(s, "--host") && has)
		a->host = argv[++*i];
	else if (!strcmp(s, "--port") && has)
		return util_parse_int(argv[++*i], s, 0, 65535, &a->port, err) ? -EINVAL : 1;
	else if (!strcmp(s, "--api-key-env") && has)
		a->key_env = argv[++*i];
	else if (!strcmp(s, "--max-queue") && has)
		return util_parse_int(argv[++*i], s, 1, 1 << 20, &a->max_queue, err) ? -EINVAL : 1;
	else if (!strcmp(s, "--timeout") && has)
		return util_parse_int(argv[++*i], s, 1, 86400, &a->timeout, err) ? -EINVAL : 1;
	else if (!strcmp(s, "--request-timeout") && has)
		return util_parse_int(argv[++*i], s, 1, 86400, &a->req_timeout, err) ? -EINVAL : 1;
	else if (!strcmp(s, "--max-connections") && has)
		return util_parse_int(argv[++*i], s, 1, 100000, &a->max_conn, err) ? -EINVAL : 1;
	else if (!strcmp(s, "--shutdown-grace") && has)
		return util_parse_float(argv[++*i], s, 0, 86400, &a->grace, err) ? -EINVAL : 1;
	else if (!strcmp(s, "--ignore-eos"))
		a->ignore_eos = 1;
	else if (!strcmp(s, "--log-file") && has)
		a->log_file = argv[++*i];
	else if (!strcmp(s, "--max-body") && has)
		return size_parse(argv[++*i], s, &a->max_body, err) ? -EINVAL : 1;
	else if (!strcmp(s, "-v") || !strcmp(s, "--verbose"))
		a->verbose = 1;
	else if (!strcmp(s, "--alias") && has) {
		if (a->n_aliases == 16 || !*argv[*i + 1])
			return coli_err_set(err, -EINVAL, "--alias: %s", *argv[*i + 1] ? "at most 16 names"
					    : "an empty name");
		a->aliases[a->n_aliases++] = argv[++*i];
	} else
		return 0;
	return 1;
}

int cmd_serve(int argc, char **argv)
{
	coli_err err = { 0 };
	coli_engine_flags fl;
	struct serve_args a = { .host = "127.0.0.1", .port = 8080, .max_queue = 0,
				.timeout = 30, .max_conn = 64, .max_body = 4 << 20, .grace = 5, .req_timeout = 30 };
	coli_engine *e = NULL;
	coli_server *srv = NULL;
	util_log_ring *lf = NULL;
	int status = COLI_EXIT_FAIL;
	/* serve's own environment first: its flags override it */
	if (serve_env(&a, &err)) {
		cli_errorf("serve", "%s", err.msg);
		return COLI_EXIT_USAGE;
	}
	if (cli_engine_args("serve", &fl, NULL, argc, argv, serve_flag, &a, &a.dir, usage, &status))
		goto out;
	if (a.max_body < 1024) {
		coli_err_set(&err, -EINVAL, "--max-body: at least 1K");
		goto usage_err;
	}
	const char *key = NULL;
	if (a.key_env) {
		key = getenv(a.key_env);
		if (!key || !*key) {
			coli_err_set(&err, -EINVAL, "--api-key-env %s: the variable is unset or empty",
				     a.key_env);
			goto usage_err;
		}
	}
	if (!coli_server_host_is_loopback(a.host) && !key)
		coli_warn("serve: listening on %s without an API key: anyone who can reach this "
			  "address can use the model (set --api-key-env)", a.host);
	if (a.verbose)
		coli_log_set_level(COLI_LOG_DEBUG);
	if (a.log_file ? log_file_open(&lf, a.log_file, &err) : log_stderr_open(&lf, &err))
		goto usage_err;

	/* Block the signals in every thread we start; main waits for them. */
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	signal(SIGPIPE, SIG_IGN);

	fl.opts.model_dir = a.dir;
	if (a.max_queue)
		fl.opts.max_queue = (int)a.max_queue;
	if (coli_engine_new(&fl.opts, &e, &err))
		goto fail;
	coli_server_opts so;
	coli_server_opts_default(&so);
	so.host = a.host;
	so.port = (int)a.port;
	so.api_key = key;
	so.max_body = (size_t)a.max_body;
	so.timeout_s = (int)a.timeout;
	so.request_timeout_s = (int)a.req_timeout;
	so.max_connections = (int)a.max_conn;
	so.shutdown_grace_ms = (int)(a.grace * 1000.0 + 0.5);
	so.ignore_eos = a.ignore_eos;
	so.model_dir = a.dir ? a.dir : getenv("COLI_MODEL");
	so.aliases = a.aliases;
	if (coli_server_start(e, &so, &srv, &err))
		goto fail;
	printf("http://%s%s%s:%d/v1\n", strchr(a.host, ':') ? "[" : "", a.host,
	       strchr(a.host, ':') ? "]" : "", coli_server_port(srv));
	fflush(stdout);
	int sig = 0;
	while (sigwait(&set, &sig) == 0 && sig == SIGHUP) {
		if (!a.log_file) {
			coli_info("serve: SIGHUP received; no --log-file to reopen");
			continue;
		}
		/* the writer reopens it and says so in the new file */
		coli_info("serve: SIGHUP received; reopening %s", a.log_file);
		util_log_ring_reopen(lf);
	}
	coli_info("serve: %s received, draining (grace %.1f s)", sig == SIGINT ? "SIGINT" : "SIGTERM",
		  a.grace);
	status = COLI_EXIT_OK;
	goto out;
usage_err:
	cli_errorf("serve", "%s", err.msg);
	status = COLI_EXIT_USAGE;
	goto out;
fail:
	if (lf)
		util_log_ring_sync(lf);   /* the log's lines before the error */
	cli_errorf("serve", "%s", err.msg);
out:
	coli_server_stop(srv);
	coli_engine_free(e);
	coli_engine_flags_free(&fl);
	if (status == COLI_EXIT_OK && srv)
		coli_info("serve: stopped");
	log_file_close(lf);
	return status;
}
