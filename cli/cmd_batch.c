/* cmd_batch.c - `coli batch [DIR] IN.jsonl OUT.jsonl`: OpenAI Batch API
 * lines answered by the engine in-process, resumable.
 *
 * Each request goes through the server's own code (coli_server_answer on
 * an offline server): the body in OUT is what POST URL would have answered.
 * --parallel worker threads each take the next request as theirs finishes,
 * so the engine always has up to --parallel sequences in its slots and
 * decodes them together (each expert read once per step serves them all).
 * Admission takes the longest requests first so the slots stay full to the
 * end instead of the last long request running alone.
 *
 * OUT is append-only and doubles as the resume log: one write(2) per
 * finished request. Interrupted (SIGINT/SIGTERM, kill -9), a rerun skips
 * the custom_ids OUT holds and cuts a torn last line. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "cmd_batch_io.h"
#include "cli.h"
#include "util_args.h"
#include "coli_log.h"
#include "engine.h"
#include "engine_flags.h"
#include "expert_store_stats.h"
#include "server.h"
#include "util_time.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: coli batch [DIR] IN.jsonl OUT.jsonl [options] [engine options]\n"
		"  IN.jsonl             OpenAI Batch API input: {custom_id, method, url, body} per line\n"
		"  OUT.jsonl            output, appended; rerunning skips custom_ids already in it\n"
		"  --parallel N|auto    requests in flight together (1-256, default auto: as many\n"
		"                       as a quarter of the memory holds; COLI_PARALLEL)\n"
		"  --label-field FIELD  the routing profile label of each request: the string at\n"
		"                       FIELD (a dotted path) of its input line (coli-atlas(1))\n"
		"  -q, --quiet          no progress line on a terminal\n%s",
		coli_engine_flags_help);
}

/* Shared by the workers and the main thread; guarded by mu. */
typedef struct batch_run {
	coli_server *srv;
	batch_input in;
	int *order, n_order, next;
	int fd;                    /* OUT, O_APPEND */
	pthread_mutex_t mu;
	int n_ok, n_err, n_written, write_failed;
	long long tok_prompt, tok_completion;
	int workers_left;
	int cancelled;
	char write_err[256];
} batch_run;

/* One write per line: a kill can tear at most the line being written,
 * which the next run cuts. */
static int write_line(batch_run *r, const char *line)
{
	size_t n = strlen(line), off = 0;
	while (off < n) {
		ssize_t w = write(r->fd, line + off, n - off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -(w < 0 ? errno : EIO);
		off += (size_t)w;
	}
	return 0;
}

static void usage_of(const char *body, long long *p, long long *c)
{
	json_t *j = json_loads(body, JSON_ALLOW_NUL, NULL);
	json_t *u = json_object_get(j, "usage");
	/* chat and completions; the Responses API names them input/output */
	*p = json_integer_value(json_object_get(u, "prompt_tokens")) +
	     json_integer_value(json_object_get(u, "input_tokens"));
	*c = json_integer_value(json_object_get(u, "completion_tokens")) +
	     json_integer_value(json_object_get(u, "output_tokens"));
	json_decref(j);
}

static void *worker(void *arg)
{
	batch_run *r = arg;
	for (;;) {
		pthread_mutex_lock(&r->mu);
		int k = r->cancelled || r->write_failed || r->next >= r->n_order ? -1
										   : r->order[r->next++];
		pthread_mutex_unlock(&r->mu);
		if (k < 0)
			break;
		batch_item *it = &r->in.items[k];
		char *line = NULL, *body = NULL;
		int status = 0, rc = 0;
		long long tp = 0, tc = 0;
		if (it->url) {
			rc = coli_server_answer(r->srv, it->url, it->body, strlen(it->body), &status, &body);
			if (rc == -ECANCELED) {
				free(body);
				break;
			}
			if (rc)
				line = batch_output_line(it->custom_id, 0, NULL, "internal_error",
							 strerror(-rc));
			else
				line = batch_output_line(it->custom_id, status, body, NULL, NULL);
			if (!rc && status == 200)
				usage_of(body, &tp, &tc);
		} else {
			line = batch_output_line(it->custom_id, 0, NULL, it->err_code, it->err_msg);
		}
		free(body);
		pthread_mutex_lock(&r->mu);
		int wrc = line ? write_line(r, line) : -ENOMEM;
		if (wrc) {
			if (!r->write_failed)
				snprintf(r->write_err, sizeof r->write_err, "%s", strerror(-wrc));
			r->write_failed = 1;
		} else {
			r->n_written++;
			if (it->url && !rc && status == 200)
				r->n_ok++;
			else
				r->n_err++;
			r->tok_prompt += tp;
			r->tok_completion += tc;
		}
		pthread_mutex_unlock(&r->mu);
		free(line);
	}
	pthread_mutex_lock(&r->mu);
	r->workers_left--;
	pthread_mutex_unlock(&r->mu);
	return NULL;
}

static void hit_and_bytes(coli_engine *e, expert_stats_summary *s)
{
	memset(s, 0, sizeof *s);
	const expert_stats *st = coli_engine_expert_stats(e);
	if (st)
		expert_stats_snapshot(st, s);
}

/* "12.3%" or "n/a" */
static const char *pct(char *buf, size_t n, double v, int valid)
{
	if (valid)
		snprintf(buf, n, "%.1f%%", 100 * v);
	else
		snprintf(buf, n, "n/a");
	return buf;
}

static void progress(batch_run *r, coli_engine *e, int total, double t0, int final)
{
	pthread_mutex_lock(&r->mu);
	int done = r->n_written;
	long long tc = r->tok_completion;
	pthread_mutex_unlock(&r->mu);
	double el = coli_now_s() - t0;
	expert_stats_summary *s = calloc(1, sizeof *s);
	if (!s)
		return;
	hit_and_bytes(e, s);
	coli_step_stats st;
	coli_engine_step_stats(e, &st);
	char eta[32] = "-", hr[16];
	if (done > 0 && done < total)
		snprintf(eta, sizeof eta, "%.0fs", el / done * (total - done));
	/* bytes per generated token: what the drive pays for each */
	double bpt = tc > 0 ? (double)s->bytes_read / (double)tc : 0;
	fprintf(stderr, "\r\033[Kbatch: %d/%d  %.1f tok/s  %.1f MB/tok  hit %s  %d running %d queued%s  "
		"%d rows/step  ETA %s%s",
		done, total, el > 0 ? tc / el : 0.0, bpt / 1e6,
		pct(hr, sizeof hr, s->rows_total ? s->row_hit_rate : s->hit_rate, s->rows_total || s->hit_rate_valid),
		st.active, st.queued, st.waiting_kv ? " (KV full)" : "", st.last_rows, eta, final ? "\n" : "");
	fflush(stderr);
	free(s);
}

struct batch_args {
	const char *dir, *in, *out;
	const char *label_field;   /* --label-field */
	int quiet;
	const char *pos[3];        /* [DIR] IN.jsonl OUT.jsonl, "-" allowed */
	int np;
};

/* batch's own flags and its up to three positional words ("-" is one). */
static int batch_flag(void *ctx, int argc, char **argv, int *i, coli_err *err)
{
	struct batch_args *a = ctx;
	const char *s = argv[*i];
	if (!strcmp(s, "-q") || !strcmp(s, "--quiet")) {
		a->quiet = 1;
		return 1;
	}
	if (!strcmp(s, "--label-field")) {
		if (*i + 1 >= argc || !argv[*i + 1][0])
			return coli_err_set(err, -EINVAL, "--label-field needs a FIELD");
		a->label_field = argv[++*i];
		return 1;
	}
	if ((s[0] != '-' || !s[1]) && a->np < 3) {
		a->pos[a->np++] = s;
		return 1;
	}
	return 0;
}

static int parse_args(int argc, char **argv, coli_engine_flags *fl, struct batch_args *a,
		      int *help, coli_err *err)
{
	int rr = coli_engine_flags_parse_args(fl, NULL, argc, argv, batch_flag, a, NULL, err);
	if (rr < 0)
		return rr;
	if (rr == COLI_ARGS_HELP) {
		*help = 1;
		return 0;
	}
	if (a->np < 2)
		return coli_err_set(err, -EINVAL, "need IN.jsonl and OUT.jsonl (see --help)");
	a->dir = a->np == 3 ? a->pos[0] : NULL;
	a->in = a->pos[a->np - 2];
	a->out = a->pos[a->np - 1];
	return 0;
}

static void summary(batch_run *r, int skipped, double secs, coli_engine *e)
{
	expert_stats_summary *s = calloc(1, sizeof *s);
	if (!s)
		return;
	hit_and_bytes(e, s);
	coli_step_stats st;
	coli_engine_step_stats(e, &st);
	char hr[16], rr[16];
	const double bpt = r->tok_completion > 0 ? (double)s->bytes_read / (double)r->tok_completion : 0;
	fprintf(stderr,
		"batch: %d answered (%d ok, %d errors), %d already in the output, %d left; "
		"%lld prompt + %lld completion tokens in %.1f s (%.1f tok/s); "
		"expert hit rate %s, %.1f MB read\n",
		r->n_written, r->n_ok, r->n_err, skipped, r->n_order - r->n_written, r->tok_prompt,
		r->tok_completion, secs, secs > 0 ? r->tok_completion / secs : 0.0,
		pct(hr, sizeof hr, s->hit_rate, s->hit_rate_valid), (double)s->bytes_read / 1e6);
	/* the throughput figures: bench/batch_parallel.sh reads this line */
	fprintf(stderr,
		"batch: %d slots; %lld steps, %.1f rows/step (%lld prompt rows); %.1f MB read per completion token; "
		"expert uses from RAM %s; disk wait %.1f s of %.1f s\n",
		coli_engine_slots(e), st.steps, st.steps ? (double)st.rows / (double)st.steps : 0.0,
		st.prompt_rows, bpt / 1e6, pct(rr, sizeof rr, s->row_hit_rate, s->rows_total > 0),
		s->wait_seconds, secs);
	free(s);
}

int cmd_batch(int argc, char **argv)
{
	coli_err err = { 0 };
	coli_engine_flags fl;
	struct batch_args a = { 0 };
	coli_engine *e = NULL;
	batch_run r = { .fd = -1 };
	pthread_t *th = NULL;
	int n_th = 0, help = 0, status = COLI_EXIT_FAIL;
	pthread_mutex_init(&r.mu, NULL);
	if (coli_engine_flags_init(&fl, &err)) {
		cli_errorf("batch", "%s", err.msg);
		return COLI_EXIT_USAGE;
	}
	if (parse_args(argc, argv, &fl, &a, &help, &err)) {
		cli_errorf("batch", "%s", err.msg);
		status = COLI_EXIT_USAGE;
		goto out;
	}
	if (help) {
		usage(stdout);
		status = COLI_EXIT_OK;
		goto out;
	}
	int skipped = 0, cut = 0;
	if (batch_input_read(a.in, a.label_field, &r.in, &err)) {
		cli_errorf("batch", "%s", err.msg);
		status = COLI_EXIT_USAGE;
		goto out;
	}
	/* locked before it is read: a second run must not answer the same
	 * requests, nor cut a line the first is writing */
	if ((r.fd = batch_output_open_locked(a.out, &err)) < 0)
		goto fail;
	if (batch_output_scan(a.out, &r.in, &skipped, &cut, &err))
		goto fail;
	if (cut)
		coli_warn("batch: %s: cut a torn last line (%d bytes) left by an interrupted run",
			  a.out, cut);
	if (!(r.order = batch_order(&r.in, &r.n_order))) {
		coli_err_set(&err, -ENOMEM, "out of memory");
		goto fail;
	}
	if (r.n_order == 0) {
		fprintf(stderr, "batch: all %d requests are already answered in %s\n", r.in.n, a.out);
		status = COLI_EXIT_OK;
		goto out;
	}

	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &set, NULL);

	fl.opts.model_dir = a.dir;
	/* documents per hour: as many sequences as the memory holds share
	 * each expert read; drafting trades compute for reads a batch
	 * already shares, so it is off unless asked for */
	if (fl.opts.parallel == 0)
		fl.opts.parallel = COLI_PARALLEL_AUTO;
	if (fl.opts.draft == COLI_DRAFT_UNSET)
		fl.opts.draft = COLI_DRAFT_OFF;
	/* every worker's request is queued or in a slot: never a 503 */
	if (fl.opts.max_queue < COLI_MAX_PARALLEL)
		fl.opts.max_queue = COLI_MAX_PARALLEL;
	if (coli_engine_new(&fl.opts, &e, &err))
		goto fail;
	coli_server_opts so;
	coli_server_opts_default(&so);
	so.model_dir = a.dir ? a.dir : getenv("COLI_MODEL");
	/* a batch file written for a cloud endpoint names the cloud's model:
	 * every line is answered by the one model loaded */
	so.any_model = 1;
	if (coli_server_new_offline(e, &so, &r.srv, &err))
		goto fail;

	n_th = coli_engine_slots(e);
	if (n_th > r.n_order)
		n_th = r.n_order;
	th = calloc((size_t)n_th, sizeof *th);
	if (!th) {
		coli_err_set(&err, -ENOMEM, "out of memory");
		goto fail;
	}
	int tty = !a.quiet && isatty(STDERR_FILENO);
	double t0 = coli_now_s();
	int started = 0;
	/* under the lock: the workers already started decrement it (a data
	 * race ThreadSanitizer found in tests/batch_run.sh) */
	for (; started < n_th; started++) {
		pthread_mutex_lock(&r.mu);
		r.workers_left++;
		pthread_mutex_unlock(&r.mu);
		if (pthread_create(&th[started], NULL, worker, &r)) {
			pthread_mutex_lock(&r.mu);
			r.workers_left--;
			pthread_mutex_unlock(&r.mu);
			break;
		}
	}
	if (!started) {
		coli_err_set(&err, -EAGAIN, "cannot start worker threads");
		goto fail;
	}
	int sig = 0;
	for (;;) {
		pthread_mutex_lock(&r.mu);
		int left = r.workers_left;
		pthread_mutex_unlock(&r.mu);
		if (!left)
			break;
		struct timespec ts = { 0, 500 * 1000 * 1000 };
		int s = sigtimedwait(&set, NULL, &ts);
		if (s > 0 && !sig) {
			sig = s;
			pthread_mutex_lock(&r.mu);
			r.cancelled = 1;
			pthread_mutex_unlock(&r.mu);
			coli_server_interrupt(r.srv);
		}
		if (tty)
			progress(&r, e, r.n_order, t0, 0);
	}
	for (int i = 0; i < started; i++)
		pthread_join(th[i], NULL);
	if (tty)
		progress(&r, e, r.n_order, t0, 1);
	summary(&r, skipped, coli_now_s() - t0, e);
	if (r.write_failed) {
		coli_err_set(&err, -EIO, "%s: write failed: %s (rerun to resume)", a.out, r.write_err);
		goto fail;
	}
	if (sig) {
		coli_err_set(&err, -EINTR, "interrupted by %s; rerun the same command to resume",
			     sig == SIGINT ? "SIGINT" : "SIGTERM");
		goto fail;
	}
	status = r.n_written == r.n_order ? COLI_EXIT_OK : COLI_EXIT_FAIL;
	goto out;
fail:
	cli_errorf("batch", "%s", err.msg);
out:
	free(th);
	coli_server_stop(r.srv);
	coli_engine_free(e);
	if (r.fd >= 0)
		close(r.fd);
	free(r.order);
	batch_input_free(&r.in);
	coli_engine_flags_free(&fl);
	pthread_mutex_destroy(&r.mu);
	return status;
}
