/* server_handlers.c - the routes: models, health, metrics, and the three
 * generation APIs (OpenAI chat and completions, Anthropic messages), each
 * streamed or not.
 *
 * Flow of a generation request on its connection thread: parse the body
 * into a srv_request, check the model name, render the chat template and
 * tokenize, check the context, submit (a full queue answers 503 before any
 * byte of the answer is sent), then either wait for the whole answer or hand
 * a content callback to MHD that formats events as they arrive. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>
#include <microhttpd.h>

#include "coli_log.h"
#include "server_internal.h"

/* The names of the model: its id, the --alias names, the model
 * directory's name and "default". */
static int model_named(const coli_server *s, const char *m)
{
	if (!m || !*m || !strcmp(m, s->model_id) || !strcmp(m, "default") ||
	    (s->model_alias[0] && !strcmp(m, s->model_alias)))
		return 1;
	for (int i = 0; s->aliases && s->aliases[i]; i++)
		if (!strcmp(m, s->aliases[i]))
			return 1;
	return 0;
}

/* The policy (coli-serve(1), MODEL NAMES): OpenAI routes serve the
 * model's names, any name with --alias '*' (coli batch: a batch file
 * written for a cloud endpoint runs unchanged); Anthropic routes serve
 * any name, echoed in the answer (Claude Code sends its own names, a
 * small model's for background work). */
static int model_accepted(const coli_server *s, const char *m)
{
	return s->any_model || model_named(s, m);
}

int srv_model_accepted(const coli_server *s, const char *m)
{
	return model_accepted(s, m);
}

int srv_handle_get(coli_server *s, struct MHD_Connection *c, srv_conn *cc)
{
	srv_error e = { 0 };
	switch (cc->route) {
	case SRV_ROUTE_RESPONSE_ID:
		return srv_responses_get(s, c, cc);
	case SRV_ROUTE_HEALTH:
		return srv_respond(s, c, cc, 200, "application/json", strdup("{\"status\":\"ok\"}"));
	case SRV_ROUTE_METRICS: {
		coli_draft_stats ds;
		coli_step_stats st;
		coli_engine_draft_stats(s->eng, &ds);
		coli_engine_step_stats(s->eng, &st);
		return srv_respond(s, c, cc, 200, "text/plain; version=0.0.4; charset=utf-8",
				   srv_metrics_with_steps(srv_metrics_with_draft(srv_metrics_render(&s->metrics,
									     coli_engine_queue_len(s->eng),
									     s->xstats),
							  &ds), &st));
	}
	case SRV_ROUTE_MODELS:
		if (!cc->model_path[0]) {
			const char *ids[64];
			int n = 0;
			ids[n++] = s->model_id;
			for (int i = 0; s->aliases && s->aliases[i] && n < 64; i++)
				ids[n++] = s->aliases[i];
			return srv_respond(s, c, cc, 200, "application/json",
					   srv_openai_models_json(ids, n, s->started));
		}
		if (!model_named(s, cc->model_path)) {
			srv_fail(&e, 404, "invalid_request_error", "model_not_found", "model",
				 "the model '%s' does not exist (this server serves '%s')",
				 cc->model_path, s->model_id);
			return srv_respond_error(s, c, cc, &e);
		}
		const char *mid = s->model_id;
		for (int i = 0; s->aliases && s->aliases[i]; i++)
			if (!strcmp(cc->model_path, s->aliases[i]))
				mid = s->aliases[i];
		json_t *j = json_pack("{s:s, s:s, s:I, s:s}", "id", mid, "object", "model",
				      "created", (json_int_t)s->started, "owned_by", "colitop");
		char *body = j ? json_dumps(j, JSON_COMPACT) : NULL;
		json_decref(j);
		return srv_respond(s, c, cc, 200, "application/json", body);
	default:
		srv_fail(&e, 404, "invalid_request_error", "unknown_url", NULL, "unknown URL");
		return srv_respond_error(s, c, cc, &e);
	}
}

/* Prompt token ids of a request (chat template + tokenizer, or the
 * completions prompt). */
int srv_build_prompt(coli_server *s, srv_request *r, int **ids, int *n, srv_error *e)
{
	const coli_tokenizer *tok = coli_engine_tokenizer(s->eng);
	coli_err cerr = { 0 };
	*ids = NULL;
	*n = 0;
	if (r->prompt_ids) {
		/* The model's embedding rows bound the ids, not the tokenizer: a
		 * padded vocab (vocab_size > tokenizer size) has rows the
		 * tokenizer never emits, and a client may still send them. */
		int vocab = coli_engine_config(s->eng)->vocab_size;
		for (int i = 0; i < r->n_prompt_ids; i++)
			if (r->prompt_ids[i] >= vocab)
				return srv_fail(e, 400, "invalid_request_error", "invalid_value", "prompt",
						"token id %d is outside the vocabulary (%d)",
						r->prompt_ids[i], vocab);
		*ids = malloc((size_t)r->n_prompt_ids * sizeof **ids);
		if (!*ids)
			return srv_fail(e, 500, "server_error", NULL, NULL, "out of memory");
		memcpy(*ids, r->prompt_ids, (size_t)r->n_prompt_ids * sizeof **ids);
		*n = r->n_prompt_ids;
		return 0;
	}
	if (!tok)
		return srv_fail(e, 500, "server_error", NULL, NULL, "the model has no tokenizer");
	char *text = NULL;
	int bos = -1;
	if (r->prompt) {
		text = strdup(r->prompt);
		bos = coli_tokenizer_bos_id(tok);
	} else {
		if (!s->tpl_ok)
			return srv_fail(e, 500, "server_error", "no_chat_template", NULL,
					"chat template unavailable: %s", s->tpl_err);
		coli_chat_template tpl = s->tpl;
		tpl.enable_thinking = r->enable_thinking;
		tpl.kwargs_json = r->template_kwargs;
		if (coli_chat_render(&tpl, r->msgs, r->n_msgs, r->tools_json, 1, &text, &cerr) < 0)
			return srv_fail(e, 400, "invalid_request_error", "invalid_messages", "messages",
					"cannot render the conversation: %s", cerr.msg);
		r->think_open = text && coli_chat_opens_thinking(text);
	}
	if (!text)
		return srv_fail(e, 500, "server_error", NULL, NULL, "out of memory");
	int *tids = NULL;
	size_t nt = 0;
	int rc = coli_tokenizer_encode(tok, text, strlen(text), &tids, &nt, &cerr);
	free(text);
	if (rc < 0)
		return srv_fail(e, 400, "invalid_request_error", NULL, NULL, "cannot tokenize: %s",
				cerr.msg);
	/* Completions prompts are raw text: add BOS like the model was trained. */
	if (bos >= 0 && (nt == 0 || tids[0] != bos)) {
		int *t2 = realloc(tids, (nt + 1) * sizeof *t2);
		if (!t2) {
			free(tids);
			return srv_fail(e, 500, "server_error", NULL, NULL, "out of memory");
		}
		memmove(t2 + 1, t2, nt * sizeof *t2);
		t2[0] = bos;
		tids = t2;
		nt++;
	}
	*ids = tids;
	*n = (int)nt;
	return 0;
}

int srv_client_fd(struct MHD_Connection *c)
{
	const union MHD_ConnectionInfo *ci =
		MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
	return ci ? ci->connect_fd : -1;
}

#define SHUTDOWN_MSG "the server is shutting down; the request was stopped"

/* ---- streaming ---- */

enum { PH_HEAD = 0, PH_GEN, PH_TAIL, PH_END };

typedef struct srv_stream {
	coli_server *s;
	srv_conn *cc;    /* lives until the request completes, after the stream */
	srv_request req;
	srv_gen gen;
	srv_stream_ctx ctx;
	int anthropic;
	int phase;
	util_buf out;     /* formatted bytes not yet handed to MHD */
	util_buf piece;   /* text of the latest step */
	/* Anthropic: blocks are opened as their content comes (no empty text
	 * block before a tool call); message_start waits for the request's
	 * first event, when the cached prefix is known, so its usage is the
	 * one message_delta repeats */
	int started;     /* message_start sent */
	int n_blocks;    /* content blocks opened */
	int open;        /* the last block is open: OPEN_TEXT, OPEN_THINKING */
	int pinged;      /* the ping after the first block start (Anthropic's order) */
	srv_usage start_usage;
} srv_stream;

enum { OPEN_NONE = 0, OPEN_TEXT, OPEN_THINKING };

static void a_close(srv_stream *st)
{
	if (st->open == OPEN_THINKING)
		srv_anthropic_ev_signature(&st->out, st->n_blocks - 1);
	if (st->open)
		srv_anthropic_ev_block_stop(&st->out, st->n_blocks - 1);
	st->open = OPEN_NONE;
}

static void a_ping_once(srv_stream *st)
{
	if (!st->pinged)
		srv_anthropic_ev_ping(&st->out);
	st->pinged = 1;
}

static void a_open_text(srv_stream *st)
{
	if (st->open == OPEN_TEXT)
		return;
	a_close(st);
	srv_anthropic_ev_block_start_text(&st->out, st->n_blocks++);
	st->open = OPEN_TEXT;
	a_ping_once(st);
}

static void a_start(srv_stream *st)
{
	if (st->started)
		return;
	int cached = coli_request_cached_tokens(st->gen.req);
	st->start_usage.prompt = st->gen.n_prompt;
	st->start_usage.cached = cached > 0 ? cached : 0;
	srv_anthropic_ev_start(&st->out, &st->ctx, &st->start_usage);
	if (st->req.show_thinking) {
		/* thinking first (it may stay empty), then the text */
		srv_anthropic_ev_block_start_thinking(&st->out, st->n_blocks++);
		st->open = OPEN_THINKING;
		a_ping_once(st);
	}
	st->started = 1;
}

/* Tool calls as far as they are parsed (srv_tc_stream): Anthropic's
 * tool_use blocks (the tag is the block index + 1) or OpenAI's tool_calls
 * deltas. */
static int call_start(void *ctx, int i, srv_tc_call *c)
{
	srv_stream *st = ctx;
	if (!st->anthropic) {
		srv_openai_chunk_tool_start(&st->out, &st->ctx, i, c);
		return 1;
	}
	a_close(st);
	int tag = ++st->n_blocks;
	srv_anthropic_ev_tool_start(&st->out, tag - 1, c->id, c->name);
	a_ping_once(st);
	return tag;
}

static void call_args(void *ctx, int i, srv_tc_call *c, const char *p, size_t n)
{
	srv_stream *st = ctx;
	if (st->anthropic)
		srv_anthropic_ev_tool_delta(&st->out, c->announced - 1, p, n);
	else
		srv_openai_chunk_tool_args(&st->out, &st->ctx, i, p, n);
}

static void call_end(void *ctx, int i, srv_tc_call *c)
{
	srv_stream *st = ctx;
	(void)i;
	if (st->anthropic)
		srv_anthropic_ev_block_stop(&st->out, c->announced - 1);
}

static void stream_calls(srv_stream *st)
{
	srv_tc_sink k = { st, call_start, call_args, call_end };
	srv_tc_stream(&st->gen.tc, &k);
}

static void stream_tail(srv_stream *st)
{
	srv_result res;
	srv_gen_result(&st->gen, &st->req, "", 0, &res);
	if (st->gen.finish == SRV_FINISH_SHUTDOWN) {
		/* the stream ends with an error event the SDKs raise, not a
		 * silent cut they would take for a network failure */
		if (st->anthropic)
			srv_anthropic_ev_error(&st->out, "overloaded_error", SHUTDOWN_MSG);
		else {
			srv_openai_chunk_error(&st->out, "server_error", SHUTDOWN_MSG);
			srv_sse_done(&st->out);
		}
		return;
	}
	if (st->gen.finish == SRV_FINISH_ERROR) {
		if (st->anthropic)
			srv_anthropic_ev_error(&st->out, "api_error", st->gen.errmsg);
		else {
			srv_openai_chunk_error(&st->out, "server_error", st->gen.errmsg);
			srv_sse_done(&st->out);
		}
		return;
	}
	if (st->anthropic) {
		/* the input counts message_start gave (the same request) */
		res.usage.prompt = st->start_usage.prompt;
		res.usage.cached = st->start_usage.cached;
	}
	srv_metrics_generation(&st->s->metrics, &res.usage, st->gen.ttft_ms, st->gen.tps);
	st->cc->usage = res.usage;
	stream_calls(st);
	if (st->anthropic) {
		if (!st->n_blocks || (st->open == OPEN_THINKING && !st->gen.tc.n_calls))
			a_open_text(st);   /* an empty answer still has its text block */
		a_close(st);
		srv_anthropic_ev_delta(&st->out, &res);
		srv_anthropic_ev_stop(&st->out);
		return;
	}
	/* the calls went out as they were generated */
	res.n_calls = 0;
	srv_openai_chunk_finish(&st->out, &st->ctx, &res);
	if (st->req.include_usage)
		srv_openai_chunk_usage(&st->out, &st->ctx, &res.usage);
	srv_sse_done(&st->out);
}

/* Produce the next bytes (srv_queue_stream's step): 0, 1 once all is
 * sent, -1 to end the response with an error (client gone). */
static int stream_step(void *cls)
{
	srv_stream *st = cls;
	switch (st->phase) {
	case PH_HEAD:
		if (!st->anthropic)
			srv_openai_chunk_role(&st->out, &st->ctx);
		st->phase = PH_GEN;
		return 0;
	case PH_GEN: {
		util_buf_clear(&st->piece);
		int rc = srv_gen_next(&st->gen, &st->piece);
		if (rc < 0)
			return -1;
		if (st->gen.idle) {
			/* long prefill or a busy queue: keep proxies and clients
			 * from timing out (SSE comments are ignored by clients) */
			if (st->anthropic && st->started)
				srv_anthropic_ev_ping(&st->out);
			else
				util_buf_puts(&st->out, ": keepalive\n\n");
			return 0;
		}
		if (st->anthropic)
			a_start(st);
		if (st->gen.reason_step.len) {
			if (!st->anthropic)
				srv_openai_chunk_reasoning(&st->out, &st->ctx, st->gen.reason_step.p,
							   st->gen.reason_step.len);
			else if (st->open == OPEN_THINKING)
				srv_anthropic_ev_thinking(&st->out, st->n_blocks - 1, st->gen.reason_step.p,
							  st->gen.reason_step.len);
		}
		if (st->anthropic && st->piece.len)
			a_open_text(st);
		if (!st->anthropic && st->gen.want_lp && st->gen.n_lp > st->gen.lp_sent &&
		    (st->piece.len || rc == 0)) {
			/* the log-probabilities of the tokens since the last chunk */
			srv_result res;
			srv_gen_result(&st->gen, &st->req, "", 0, &res);
			srv_openai_chunk_text_lp(&st->out, &st->ctx, st->piece.p ? st->piece.p : "", st->piece.len,
						 &res, st->gen.lp_sent);
			st->gen.lp_sent = st->gen.n_lp;
		} else if (st->piece.len) {
			if (st->anthropic)
				srv_anthropic_ev_text(&st->out, st->n_blocks - 1, st->piece.p, st->piece.len);
			else
				srv_openai_chunk_text(&st->out, &st->ctx, st->piece.p, st->piece.len);
		}
		if (rc > 0)
			stream_calls(st);
		if (rc == 0)
			st->phase = PH_TAIL;
		return 0;
	}
	case PH_TAIL:
		stream_tail(st);
		st->phase = PH_END;
		return 0;
	default:
		return 1;   /* PH_END: nothing more */
	}
}

/* MHD destroys the response when the connection ends, finished or not;
 * freeing the generation cancels the engine request if it still runs. */
static void stream_free(void *cls)
{
	srv_stream *st = cls;
	if (!st->gen.done)
		atomic_fetch_add(&st->s->metrics.cancelled, 1);
	srv_gen_free(&st->gen);
	srv_request_free(&st->req);
	util_buf_free(&st->out);
	util_buf_free(&st->piece);
	free(st);
}

#define KEEPALIVE_MS 15000

static int start_stream(coli_server *s, struct MHD_Connection *c, srv_conn *cc, srv_stream *st)
{
	st->gen.keepalive_ms = KEEPALIVE_MS;
	return srv_queue_stream(s, c, cc, &st->out, stream_step, st, stream_free);
}

/* The reader MHD calls: bytes of out, made by step while there are none. */
typedef struct sse_pump {
	coli_server *s;
	util_buf *out;
	int (*step)(void *);
	void *cls;
	void (*free_cb)(void *);
} sse_pump;

static ssize_t pump_read(void *p, uint64_t pos, char *buf, size_t max)
{
	sse_pump *k = p;
	(void)pos;
	while (k->out->len == 0) {
		int rc = k->step(k->cls);
		if (rc > 0)
			return MHD_CONTENT_READER_END_OF_STREAM;
		if (rc < 0 || k->out->oom)
			return MHD_CONTENT_READER_END_WITH_ERROR;
	}
	size_t n = k->out->len < max ? k->out->len : max;
	memcpy(buf, k->out->p, n);
	util_buf_consume(k->out, n);
	return (ssize_t)n;
}

static void pump_free(void *p)
{
	sse_pump *k = p;
	atomic_fetch_sub(&k->s->metrics.active_streams, 1);
	k->free_cb(k->cls);
	free(k);
}

int srv_queue_stream(coli_server *s, struct MHD_Connection *c, srv_conn *cc, util_buf *out,
		     int (*step)(void *), void *cls, void (*free_cb)(void *))
{
	sse_pump *k = malloc(sizeof *k);
	if (!k) {
		free_cb(cls);
		return MHD_NO;
	}
	*k = (sse_pump){ s, out, step, cls, free_cb };
	atomic_fetch_add(&s->metrics.active_streams, 1);   /* pump_free takes it back */
	struct MHD_Response *r = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 4096, pump_read, k, pump_free);
	if (!r) {
		pump_free(k);
		return MHD_NO;
	}
	MHD_add_response_header(r, "Content-Type", "text/event-stream; charset=utf-8");
	MHD_add_response_header(r, "Cache-Control", "no-cache");
	MHD_add_response_header(r, "X-Accel-Buffering", "no");
	srv_add_cors(r);
	int ret = MHD_queue_response(c, 200, r);
	MHD_destroy_response(r);
	cc->done = 1;
	cc->status = 200;
	srv_metrics_request(&s->metrics, cc->route, 200);
	return ret;
}

/* ---- non-streamed ---- */

/* Wait for the whole answer and format it. 0: *body is the 200 answer;
 * 1: e holds the error to answer; 2: the same for an answer cut short by
 * the server stopping (503); -1: the client went away (nobody to answer).
 * Frees st. */
static int whole_answer(coli_server *s, srv_stream *st, srv_error *e, char **body)
{
	util_buf text = { 0 };
	int rc, ret;
	while ((rc = srv_gen_next(&st->gen, &text)) > 0)
		;
	if (rc < 0) {
		atomic_fetch_add(&s->metrics.cancelled, 1);
		ret = -1;
	} else if (st->gen.finish == SRV_FINISH_SHUTDOWN) {
		srv_fail(e, 503, "server_error", "shutting_down", NULL, SHUTDOWN_MSG);
		ret = 2;
	} else if (st->gen.finish == SRV_FINISH_ERROR) {
		srv_fail(e, 500, "server_error", NULL, NULL, "generation failed: %s", st->gen.errmsg);
		ret = 1;
	} else {
		srv_result res;
		srv_gen_result(&st->gen, &st->req, text.p ? text.p : "", text.len, &res);
		srv_metrics_generation(&s->metrics, &res.usage, st->gen.ttft_ms, st->gen.tps);
		st->cc->usage = res.usage;
		*body = st->anthropic ? srv_anthropic_response(&st->ctx, &res)
				      : srv_openai_response(&st->ctx, &res);
		ret = 0;
	}
	util_buf_free(&text);
	srv_gen_free(&st->gen);
	srv_request_free(&st->req);
	free(st);
	return ret;
}

static int answer_whole(coli_server *s, struct MHD_Connection *c, srv_conn *cc, srv_stream *st)
{
	srv_error e;
	char *body = NULL;
	int rc = whole_answer(s, st, &e, &body);
	if (rc < 0)
		return MHD_NO;
	if (rc > 0)
		return srv_respond_error(s, c, cc, &e);
	return srv_respond(s, c, cc, 200, "application/json", body);
}

static int parse_body(int route, const char *b, size_t len, srv_request *r, srv_error *e)
{
	switch (route) {
	case SRV_ROUTE_CHAT: return srv_parse_chat(b, len, r, e);
	case SRV_ROUTE_COMPLETIONS: return srv_parse_completions(b, len, r, e);
	case SRV_ROUTE_MESSAGES: return srv_parse_messages(b, len, 0, r, e);
	case SRV_ROUTE_COUNT_TOKENS: return srv_parse_messages(b, len, 1, r, e);
	default:
		return srv_fail(e, 404, "invalid_request_error", "unknown_url", NULL, "unknown URL");
	}
}

/* Everything before the answer, shared by HTTP and coli_server_answer:
 * parse, check the model, build the prompt, check the context, submit.
 * 0: st->gen runs; 1: a count_tokens answer is in *body; -1: e filled.
 * no_stream: an in-process whole answer (batch lines are never streamed). */
static int prepare(coli_server *s, srv_conn *cc, const char *b, size_t len, int fd, int no_stream,
		   srv_stream *st, char **body, srv_error *e)
{
	int *ids = NULL, n_ids = 0, rc = -1, route = cc->route;
	int anthropic = route == SRV_ROUTE_MESSAGES || route == SRV_ROUTE_COUNT_TOKENS;
	st->s = s;
	st->cc = cc;
	st->anthropic = anthropic;
	if (parse_body(route, b, len, &st->req, e))
		goto out;
	if (no_stream) {
		st->req.stream = 0;
		st->req.in_process = 1;
	}
	if (!anthropic && !model_accepted(s, st->req.model)) {
		srv_fail(e, 404, "invalid_request_error", "model_not_found", "model",
			 "the model '%s' does not exist (this server serves '%s')", st->req.model,
			 s->model_id);
		goto out;
	}
	if (srv_build_prompt(s, &st->req, &ids, &n_ids, e))
		goto out;
	if (route == SRV_ROUTE_COUNT_TOKENS) {
		if (asprintf(body, "{\"input_tokens\":%d}", n_ids) < 0)
			*body = NULL;
		rc = 1;
		goto out;
	}
	int ctx = coli_engine_ctx(s->eng);
	if (ctx > 0 && n_ids + 1 > ctx) {
		/* Anthropic's wording, which Claude Code parses to compact */
		if (anthropic)
			srv_fail(e, 400, "invalid_request_error", "context_length_exceeded", "messages",
				 "prompt is too long: %d tokens > %d maximum", n_ids, ctx - 1);
		else
			srv_fail(e, 400, "invalid_request_error", "context_length_exceeded", "messages",
				 "the prompt is %d tokens; this server's context is %d tokens", n_ids, ctx);
		goto out;
	}
	srv_make_id(st->ctx.id, sizeof st->ctx.id,
		    anthropic ? "msg_" : route == SRV_ROUTE_CHAT ? "chatcmpl-" : "cmpl-");
	st->ctx.created = (long long)time(NULL);
	st->ctx.chat = route == SRV_ROUTE_CHAT;
	/* Anthropic echoes the client's model name: cut on a character
	 * boundary, or every event of the stream would fail to encode */
	const char *mname = anthropic && st->req.model ? st->req.model : s->model_id;
	srv_utf8_copy(st->ctx.model, sizeof st->ctx.model, mname, strlen(mname));
	if (srv_gen_start(&st->gen, s->eng, ids, n_ids, &st->req, s->ignore_eos, fd, &s->stopping,
			  e)) {
		if (anthropic && !strcmp(e->code, "context_length_exceeded"))
			srv_fail(e, 400, "invalid_request_error", "context_length_exceeded", "messages",
				 "prompt is too long: %d tokens > %d maximum", n_ids, ctx > 0 ? ctx - 1 : n_ids);
		if (e->status == 503)
			atomic_fetch_add(&s->metrics.rejected_busy, 1);
		goto out;
	}
	rc = 0;
out:
	free(ids);
	return rc;
}

static void stream_discard(srv_stream *st)
{
	srv_gen_free(&st->gen);
	srv_request_free(&st->req);
	free(st);
}

int srv_handle_post(coli_server *s, struct MHD_Connection *c, srv_conn *cc)
{
	srv_error e = { 0 };
	char *body = NULL;
	if (cc->route == SRV_ROUTE_RESPONSES)
		return srv_responses_post(s, c, cc);
	srv_stream *st = calloc(1, sizeof *st);
	if (!st)
		return MHD_NO;
	const char *b = cc->body.p ? cc->body.p : "";
	int rc = prepare(s, cc, b, cc->body.len, srv_client_fd(c), 0, st, &body, &e);
	if (rc) {
		stream_discard(st);
		return rc > 0 ? srv_respond(s, c, cc, 200, "application/json", body)
			      : srv_respond_error(s, c, cc, &e);
	}
	if (st->req.stream)
		return start_stream(s, c, cc, st);
	return answer_whole(s, c, cc, st);
}

int coli_server_answer(coli_server *s, const char *path, const char *body, size_t len,
		       int *status, char **out)
{
	srv_error e = { 0 };
	srv_conn cc = { 0 };
	int post = 0, rc;
	*out = NULL;
	cc.route = srv_route_of(path, &cc, &post);
	if (cc.route < 0 || !post) {
		srv_fail(&e, cc.route < 0 ? 404 : 405, "invalid_request_error",
			 cc.route < 0 ? "unknown_url" : "method_not_allowed", NULL,
			 "%s: not a POST route of this server", path);
		goto error;
	}
	if (cc.route == SRV_ROUTE_RESPONSES) {
		rc = srv_responses_answer(s, &cc, body, len, &e, out);
		if (rc < 0)
			return rc;
		if (rc > 0)
			goto error;
		goto done;
	}
	srv_stream *st = calloc(1, sizeof *st);
	if (!st)
		return -ENOMEM;
	rc = prepare(s, &cc, body, len, -1, 1, st, out, &e);
	if (rc) {
		stream_discard(st);
		if (rc < 0)
			goto error;
	} else {
		rc = whole_answer(s, st, &e, out);
		/* stopped (coli_server_interrupt): no answer, the request is
		 * to be run again, not answered with the 503 */
		if (rc < 0 || rc == 2)
			return -ECANCELED;
		if (rc > 0)
			goto error;
	}
done:
	if (!*out)
		return -ENOMEM;
	*status = 200;
	srv_metrics_request(&s->metrics, cc.route, 200);
	return 0;
error:
	*status = e.status;
	*out = cc.route == SRV_ROUTE_MESSAGES || cc.route == SRV_ROUTE_COUNT_TOKENS
		       ? srv_anthropic_error_json(&e) : srv_openai_error_json(&e);
	srv_metrics_request(&s->metrics, cc.route < 0 ? SRV_ROUTE_OTHER : cc.route, e.status);
	return *out ? 0 : -ENOMEM;
}
