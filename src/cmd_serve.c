/* cmd_serve.c - `coli serve [DIR] [options] [engine options]`: the HTTP
 * endpoint without the TUI. Runs until SIGINT/SIGTERM, then stops the
 * server (in-flight requests are cancelled) and the engine. */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cli_util.h"
#include "coli_log.h"
#include "engine.h"
#include "engine_flags.h"
#include "server.h"
#include "size_parse.h"

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
		"  --max-connections N  simultaneous connections (default 64; COLI_MAX_CONNECTIONS)\n"
		"  -v, --verbose        log each refused request and ignored field (COLI_VERBOSE=1)\n%s",
		coli_engine_flags_help);
}

struct serve_args {
	const char *dir, *host, *key_env;
	long port, max_queue, timeout, max_conn;
	int64_t max_body;
	int verbose;
};

/* Environment twins first, so flags override them. */
static int serve_env(struct serve_args *a, coli_err *err)
{
	const char *v;
	if ((v = getenv("COLI_HOST")) && *v)
		a->host = v;
	if ((v = getenv("COLI_API_KEY_ENV")) && *v)
		a->key_env = v;
	if ((v = getenv("COLI_PORT")) && *v && cli_parse_int(v, "COLI_PORT", 0, 65535, &a->port, err))
		return -EINVAL;
	if ((v = getenv("COLI_MAX_QUEUE")) && *v &&
	    cli_parse_int(v, "COLI_MAX_QUEUE", 1, 1 << 20, &a->max_queue, err))
		return -EINVAL;
	if ((v = getenv("COLI_HTTP_TIMEOUT")) && *v &&
	    cli_parse_int(v, "COLI_HTTP_TIMEOUT", 1, 86400, &a->timeout, err))
		return -EINVAL;
	if ((v = getenv("COLI_MAX_CONNECTIONS")) && *v &&
	    cli_parse_int(v, "COLI_MAX_CONNECTIONS", 1, 100000, &a->max_conn, err))
		return -EINVAL;
	if ((v = getenv("COLI_MAX_BODY")) && *v && size_parse(v, "COLI_MAX_BODY", &a->max_body, err))
		return -EINVAL;
	if ((v = getenv("COLI_VERBOSE")) && !strcmp(v, "1"))
		a->verbose = 1;
	return 0;
}

int cmd_serve(int argc, char **argv)
{
	coli_err err = { 0 };
	coli_engine_flags fl;
	struct serve_args a = { .host = "127.0.0.1", .port = 8080, .max_queue = 0,
				.timeout = 30, .max_conn = 64, .max_body = 4 << 20 };
	coli_engine *e = NULL;
	coli_server *srv = NULL;
	int status = COLI_EXIT_FAIL;
	if (coli_engine_flags_init(&fl, &err)) {
		cli_errorf("serve", "%s", err.msg);
		return COLI_EXIT_USAGE;
	}
	if (serve_env(&a, &err))
		goto usage_err;
	for (int i = 1; i < argc; i++) {
		const char *s = argv[i];
		int rr = coli_engine_flags_parse(&fl, argc, argv, &i, &err);
		if (rr < 0)
			goto usage_err;
		if (rr)
			continue;
		int has = i + 1 < argc;
		if (!strcmp(s, "--help") || !strcmp(s, "-h")) {
			usage(stdout);
			status = COLI_EXIT_OK;
			goto out;
		} else if (!strcmp(s, "--host") && has) {
			a.host = argv[++i];
		} else if (!strcmp(s, "--port") && has) {
			if (cli_parse_int(argv[++i], s, 0, 65535, &a.port, &err))
				goto usage_err;
		} else if (!strcmp(s, "--api-key-env") && has) {
			a.key_env = argv[++i];
		} else if (!strcmp(s, "--max-queue") && has) {
			if (cli_parse_int(argv[++i], s, 1, 1 << 20, &a.max_queue, &err))
				goto usage_err;
		} else if (!strcmp(s, "--timeout") && has) {
			if (cli_parse_int(argv[++i], s, 1, 86400, &a.timeout, &err))
				goto usage_err;
		} else if (!strcmp(s, "--max-connections") && has) {
			if (cli_parse_int(argv[++i], s, 1, 100000, &a.max_conn, &err))
				goto usage_err;
		} else if (!strcmp(s, "--max-body") && has) {
			if (size_parse(argv[++i], s, &a.max_body, &err))
				goto usage_err;
		} else if (!strcmp(s, "-v") || !strcmp(s, "--verbose")) {
			a.verbose = 1;
		} else if (s[0] != '-' && !a.dir) {
			a.dir = s;
		} else {
			coli_err_set(&err, -EINVAL, "unexpected argument '%s' (see --help)", s);
			goto usage_err;
		}
	}
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

	/* Block the stop signals in every thread we start; main waits for them. */
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
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
	so.max_connections = (int)a.max_conn;
	so.model_dir = a.dir ? a.dir : getenv("COLI_MODEL");
	if (coli_server_start(e, &so, &srv, &err))
		goto fail;
	printf("http://%s%s%s:%d/v1\n", strchr(a.host, ':') ? "[" : "", a.host,
	       strchr(a.host, ':') ? "]" : "", coli_server_port(srv));
	fflush(stdout);
	int sig = 0;
	sigwait(&set, &sig);
	coli_info("serve: %s received, stopping", sig == SIGINT ? "SIGINT" : "SIGTERM");
	status = COLI_EXIT_OK;
	goto out;
usage_err:
	cli_errorf("serve", "%s", err.msg);
	status = COLI_EXIT_USAGE;
	goto out;
fail:
	cli_errorf("serve", "%s", err.msg);
out:
	coli_server_stop(srv);
	coli_engine_free(e);
	coli_engine_flags_free(&fl);
	return status;
}
