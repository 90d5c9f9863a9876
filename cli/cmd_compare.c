/* cmd_compare.c - `coli compare PROMPTS --remote URL --remote-model ID`:
 * the local-versus-cloud dual run.
 *
 * Each prompt goes to the local side, then to the remote, one request at a
 * time (so the local /metrics deltas belong to that request and neither side
 * competes with the other for this machine's CPU or network), both
 * streamed. --rounds repeats the whole set: the first local round of a cold
 * model reads its experts from disk, later rounds show the hot cache.
 * The local side is a running endpoint, or with --model a server this
 * command starts in-process on a free loopback port for the run. */
#include "config.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <curl/curl.h>
#include <jansson.h>

#include "cli.h"
#include "util_args.h"
#include "coli_log.h"
#include "compare.h"
#include "engine.h"
#include "engine_flags.h"
#include "server.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: coli compare PROMPTS --remote URL --remote-model ID [options]\n"
		"  PROMPTS              text file (one prompt a line) or JSONL ({\"messages\"} or\n"
		"                       {\"prompt\"}, optional \"id\", \"system\", \"response_format\")\n"
		"  --remote URL         the remote OpenAI-compatible base URL (with or without /v1)\n"
		"  --remote-model ID    model name sent to the remote\n"
		"  --key-env VAR        environment variable holding the remote's API key\n"
		"  --local URL          the local endpoint (default http://127.0.0.1:8080/v1)\n"
		"  --model DIR          serve DIR in-process for the run instead (engine options apply)\n"
		"  --local-model ID     model name sent to the local side (default \"default\")\n"
		"  --local-key-env VAR  environment variable holding the local endpoint's key\n"
		"  --rounds N           run the prompt set N times (default 1)\n"
		"  --max-tokens N       per request (default 256; 0 = the server's default)\n"
		"  --temperature T      per request (default 0)\n"
		"  --timeout S          per request, seconds (default 300)\n"
		"  --json               parse both answers as JSON and diff them field by field\n"
		"  --format F           table | markdown | csv | jsonl (default: table on a\n"
		"                       terminal, markdown otherwise)\n%s",
		coli_engine_flags_help);
}

struct cmp_args {
	const char *prompts, *remote, *remote_model, *key_env, *local, *model_dir, *local_model,
		*local_key_env, *format;
	long rounds, max_tokens, timeout;
	double temperature;
	int json;
};

/* compare's own flags (coli_cmd_flag_fn). */
static int compare_flag(void *ctx, int argc, char **argv, int *i, coli_err *err)
{
	struct cmp_args *a = ctx;
	const char *s = argv[*i];
	int has = *i + 1 < argc;
	const char **str = !strcmp(s, "--remote")        ? &a->remote
			   : !strcmp(s, "--remote-model")  ? &a->remote_model
			   : !strcmp(s, "--key-env")       ? &a->key_env
			   : !strcmp(s, "--local")         ? &a->local
			   : !strcmp(s, "--model")         ? &a->model_dir
			   : !strcmp(s, "--local-model")   ? &a->local_model
			   : !strcmp(s, "--local-key-env") ? &a->local_key_env
			   : !strcmp(s, "--format")        ? &a->format
							    : NULL;
	if (str && has)
		*str = argv[++*i];
	else if (!strcmp(s, "--rounds") && has)
		return util_parse_int(argv[++*i], s, 1, 1000, &a->rounds, err) ? -EINVAL : 1;
	else if (!strcmp(s, "--max-tokens") && has)
		return util_parse_int(argv[++*i], s, 0, 1 << 20, &a->max_tokens, err) ? -EINVAL : 1;
	else if (!strcmp(s, "--timeout") && has)
		return util_parse_int(argv[++*i], s, 1, 86400, &a->timeout, err) ? -EINVAL : 1;
	else if (!strcmp(s, "--temperature") && has)
		return util_parse_float(argv[++*i], s, 0, 2, &a->temperature, err) ? -EINVAL : 1;
	else if (!strcmp(s, "--json"))
		a->json = 1;
	else
		return 0;
	return 1;
}

static int parse_args(int argc, char **argv, coli_engine_flags *fl, struct cmp_args *a,
		      int *help, coli_err *err)
{
	int rr = coli_engine_flags_parse_args(fl, NULL, argc, argv, compare_flag, a, &a->prompts, err);
	if (rr < 0)
		return rr;
	if (rr == COLI_ARGS_HELP) {
		*help = 1;
		return 0;
	}
	if (!a->prompts)
		return coli_err_set(err, -EINVAL, "PROMPTS missing (see --help)");
	if (!a->remote || !a->remote_model)
		return coli_err_set(err, -EINVAL, "--remote URL and --remote-model ID are required");
	if (a->local && a->model_dir)
		return coli_err_set(err, -EINVAL, "--local and --model exclude each other");
	return 0;
}

static int parse_format(const char *s, int *fmt, coli_err *err)
{
	if (!s)
		*fmt = isatty(STDOUT_FILENO) ? CMP_FMT_TABLE : CMP_FMT_MARKDOWN;
	else if (!strcmp(s, "table"))
		*fmt = CMP_FMT_TABLE;
	else if (!strcmp(s, "markdown"))
		*fmt = CMP_FMT_MARKDOWN;
	else if (!strcmp(s, "csv"))
		*fmt = CMP_FMT_CSV;
	else if (!strcmp(s, "jsonl"))
		*fmt = CMP_FMT_JSONL;
	else
		return coli_err_set(err, -EINVAL, "--format %s: table, markdown, csv or jsonl", s);
	return 0;
}

/* The key from its variable; the value never leaves this process except
 * in the Authorization header. */
static int key_from_env(const char *var, const char *flag, const char **key, coli_err *err)
{
	*key = NULL;
	if (!var)
		return 0;
	const char *v = getenv(var);
	if (!v || !*v)
		return coli_err_set(err, -EINVAL, "%s %s: the variable is unset or empty", flag, var);
	*key = v;
	return 0;
}

/* Leaf counter for one prompt, forwarding to the run's field tally. */
typedef struct leaf_tally {
	cmp_fields *fields;
	int total, agree;
} leaf_tally;

static void leaf_note(void *arg, const char *path, int equal)
{
	leaf_tally *t = arg;
	t->total++;
	t->agree += equal != 0;
	cmp_fields_note(t->fields, path, equal);
}

typedef struct run {
	cmp_row *rows;             /* rounds * prompts * 2 */
	cmp_result *res;
	cmp_diff **diffs;          /* per (round, prompt) */
	int *n_diffs;
	cmp_fields fields;
} run;

static void json_compare(run *R, int k, cmp_row *lr, cmp_row *rr)
{
	json_t *lj = lr->r->ok ? cmp_json_extract(lr->r->text.p, lr->r->text.len) : NULL;
	json_t *rj = rr->r->ok ? cmp_json_extract(rr->r->text.p, rr->r->text.len) : NULL;
	lr->json_parsed = lj != NULL;
	rr->json_parsed = rj != NULL;
	if (lj && rj) {
		leaf_tally t = { .fields = &R->fields };
		cmp_json_diff(lj, rj, &R->diffs[k], &R->n_diffs[k], leaf_note, &t);
		lr->json_fields = rr->json_fields = t.total;
		lr->json_agree = rr->json_agree = t.agree;
	} else if (lr->r->ok && rr->r->ok) {
		/* a side without JSON: one "unparsed" line says which */
		cmp_diff *d = calloc(1, sizeof *d);
		if (d) {
			d->path = strdup("$");
			d->kind = CMP_DIFF_UNPARSED;
			d->local = strdup(lj ? "(JSON)" : "(no JSON)");
			d->remote = strdup(rj ? "(JSON)" : "(no JSON)");
			R->diffs[k] = d;
			R->n_diffs[k] = 1;
		}
	}
	json_decref(lj);
	json_decref(rj);
}

static void run_one(const cmp_endpoint *ep, int local, const char *body, cmp_result *r)
{
	cmp_xstats before = { 0 }, after = { 0 };
	if (local)
		cmp_xstats_fetch(ep, &before);
	cmp_chat_stream(ep, body, r);
	if (local) {
		cmp_xstats_fetch(ep, &after);
		r->xstats_valid = before.valid && after.valid;
		double h = after.hits - before.hits, m = after.misses - before.misses;
		r->hit_valid = r->xstats_valid && h + m > 0;
		r->hit_rate = r->hit_valid ? h / (h + m) : 0;
		r->bytes_read = r->xstats_valid ? after.bytes - before.bytes : 0;
	}
}

int cmd_compare(int argc, char **argv)
{
	coli_err err = { 0 };
	coli_engine_flags fl;
	struct cmp_args a = { .local_model = "default", .rounds = 1, .max_tokens = 256,
			      .timeout = 300 };
	cmp_prompts ps = { 0 };
	coli_engine *e = NULL;
	coli_server *srv = NULL;
	run R = { 0 };
	int help = 0, fmt = 0, status = COLI_EXIT_FAIL, curl_ok = 0, n = 0;
	char *bodies[2] = { 0 };
	if (coli_engine_flags_init(&fl, &err)) {
		cli_errorf("compare", "%s", err.msg);
		return COLI_EXIT_USAGE;
	}
	cmp_endpoint L = { .name = "local" }, Rm = { .name = "remote" };
	if (parse_args(argc, argv, &fl, &a, &help, &err))
		goto usage_err;
	if (help) {
		usage(stdout);
		status = COLI_EXIT_OK;
		goto out;
	}
	if (parse_format(a.format, &fmt, &err) ||
	    key_from_env(a.key_env, "--key-env", &Rm.key, &err) ||
	    key_from_env(a.local_key_env, "--local-key-env", &L.key, &err) ||
	    cmp_base_url(a.remote, Rm.base, sizeof Rm.base, &err) ||
	    (!a.model_dir && cmp_base_url(a.local ? a.local : "http://127.0.0.1:8080/v1", L.base,
					  sizeof L.base, &err)))
		goto usage_err;
	if (cmp_prompts_read(a.prompts, &ps, &err))
		goto usage_err;
	L.model = a.local_model;
	L.key_env = a.local_key_env;
	L.timeout_s = (int)a.timeout;
	Rm.model = a.remote_model;
	Rm.key_env = a.key_env;
	Rm.timeout_s = (int)a.timeout;
	signal(SIGPIPE, SIG_IGN);
	if (curl_global_init(CURL_GLOBAL_DEFAULT)) {
		coli_err_set(&err, -EIO, "libcurl initialisation failed");
		goto fail;
	}
	curl_ok = 1;
	if (a.model_dir) {
		fl.opts.model_dir = a.model_dir;
		coli_server_opts so;
		coli_server_opts_default(&so);
		so.port = 0;
		so.model_dir = a.model_dir;
		if (coli_engine_new(&fl.opts, &e, &err) || coli_server_start(e, &so, &srv, &err))
			goto fail;
		snprintf(L.base, sizeof L.base, "http://127.0.0.1:%d/v1", coli_server_port(srv));
	}

	n = (int)a.rounds * ps.n;
	R.rows = calloc((size_t)n * 2, sizeof *R.rows);
	R.res = calloc((size_t)n * 2, sizeof *R.res);
	R.diffs = calloc((size_t)n, sizeof *R.diffs);
	R.n_diffs = calloc((size_t)n, sizeof *R.n_diffs);
	if (!R.rows || !R.res || !R.diffs || !R.n_diffs) {
		coli_err_set(&err, -ENOMEM, "out of memory");
		goto fail;
	}
	int progress = isatty(STDERR_FILENO), all_ok = 1;
	for (int round = 1, k = 0; round <= a.rounds; round++) {
		for (int i = 0; i < ps.n; i++, k++) {
			bodies[0] = cmp_request_body(&ps.p[i], L.model, a.temperature, (int)a.max_tokens);
			bodies[1] = cmp_request_body(&ps.p[i], Rm.model, a.temperature, (int)a.max_tokens);
			if (progress)
				fprintf(stderr, "\r\033[Kcompare: round %d/%ld, prompt %d/%d", round,
					a.rounds, i + 1, ps.n);
			for (int side = 0; side < 2; side++) {
				cmp_row *w = &R.rows[2 * k + side];
				run_one(side ? &Rm : &L, !side, bodies[side], &R.res[2 * k + side]);
				*w = (cmp_row){ .round = round, .id = ps.p[i].id,
						.side = side ? "remote" : "local", .r = &R.res[2 * k + side],
						.json = a.json };
				all_ok &= w->r->ok;
			}
			free(bodies[0]);
			free(bodies[1]);
			bodies[0] = bodies[1] = NULL;
			if (a.json)
				json_compare(&R, k, &R.rows[2 * k], &R.rows[2 * k + 1]);
		}
	}
	if (progress)
		fprintf(stderr, "\r\033[K");
	cmp_format_rows(stdout, fmt, R.rows, 2 * n);
	cmp_format_errors(stdout, fmt, R.rows, 2 * n);
	if (a.json) {
		int nd = 0;
		for (int k = 0; k < n; k++)
			nd += R.n_diffs[k];
		cmp_diff_row *dr = calloc((size_t)(nd ? nd : 1), sizeof *dr);
		if (dr) {
			int j = 0;
			for (int k = 0; k < n; k++)
				for (int d = 0; d < R.n_diffs[k]; d++)
					dr[j++] = (cmp_diff_row){ .round = R.rows[2 * k].round,
								  .id = R.rows[2 * k].id,
								  .d = &R.diffs[k][d] };
			cmp_format_diffs(stdout, fmt, dr, nd);
			free(dr);
		}
		cmp_format_fields(stdout, fmt, &R.fields);
	}
	fflush(stdout);
	status = all_ok ? COLI_EXIT_OK : COLI_EXIT_FAIL;
	goto out;
usage_err:
	cli_errorf("compare", "%s", err.msg);
	status = COLI_EXIT_USAGE;
	goto out;
fail:
	cli_errorf("compare", "%s", err.msg);
out:
	for (int k = 0; k < 2 * n && R.res; k++)
		cmp_result_free(&R.res[k]);
	for (int k = 0; k < n && R.diffs; k++)
		cmp_diffs_free(R.diffs[k], R.n_diffs[k]);
	free(R.rows);
	free(R.res);
	free(R.diffs);
	free(R.n_diffs);
	cmp_fields_free(&R.fields);
	coli_server_stop(srv);
	coli_engine_free(e);
	if (curl_ok)
		curl_global_cleanup();
	cmp_prompts_free(&ps);
	coli_engine_flags_free(&fl);
	return status;
}
