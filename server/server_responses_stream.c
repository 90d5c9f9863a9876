/* server_responses_stream.c - POST /v1/responses: the conversation (a
 * stored one continued from its own KV session), one generation, and the
 * answer as one response object or as the Responses API's event stream.
 *
 * The stream: response.created, response.in_progress, then per output item
 * (reasoning, message, function_call, in that order) output_item.added,
 * its content part and deltas as they are generated, their .done events and
 * output_item.done; it ends with response.completed, response.incomplete
 * (max_output_tokens) or response.failed. Every event carries its
 * sequence_number; there is no [DONE]. A function call's arguments stream
 * as function_call_arguments.delta events while they are generated (the
 * shared srv_tc_stream; DeepSeek's and JSON markup, parsed once complete,
 * arrive in one delta at the end). */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <microhttpd.h>

#include "coli_log.h"
#include "server_responses.h"

#define KEEPALIVE_MS 15000

enum { PH_HEAD = 0, PH_GEN, PH_TAIL, PH_END };

typedef struct resp_stream {
	coli_server *s;
	srv_conn *cc;
	srv_resp q;
	srv_gen gen;
	srv_resp_ids ids;
	int phase, seq;
	int n_items;               /* output items opened */
	int rs_at, msg_at;         /* their output_index, -1 while not open */
	int rs_done, msg_done;
	int finished;              /* the record is written or dropped */
	util_buf out, piece, text;
} resp_stream;

/* One event: its type and sequence_number join the fields of o (taken). */
static void ev(resp_stream *st, const char *type, json_t *o)
{
	if (!o) {
		st->out.oom = 1;
		return;
	}
	json_object_set_new(o, "type", json_string(type));
	json_object_set_new(o, "sequence_number", json_integer(st->seq++));
	char *d = json_dumps(o, JSON_COMPACT);
	json_decref(o);
	if (!d) {
		st->out.oom = 1;
		return;
	}
	util_buf_printf(&st->out, "event: %s\ndata: %s\n\n", type, d);
	free(d);
}

static void ev_response(resp_stream *st, const char *type, json_t *object)
{
	ev(st, type, json_pack("{s:o}", "response", object));
}

static void ev_item(resp_stream *st, const char *type, int index, json_t *item)
{
	ev(st, type, json_pack("{s:i, s:o}", "output_index", index, "item", item));
}

static void ev_part(resp_stream *st, const char *type, const char *id, int index, json_t *part)
{
	ev(st, type, json_pack("{s:s, s:i, s:i, s:o}", "item_id", id, "output_index", index, "content_index", 0,
			       "part", part));
}

static json_t *reasoning_part(const srv_gen *g)
{
	return json_pack("{s:s, s:s%}", "type", "reasoning_text", "text", g->reason_all.p ? g->reason_all.p : "",
			 g->reason_all.len);
}

static json_t *text_part(const util_buf *t)
{
	return json_pack("{s:s, s:s%, s:[], s:[]}", "type", "output_text", "text", t->p ? t->p : "", t->len,
			 "annotations", "logprobs");
}

static void open_reasoning(resp_stream *st)
{
	st->rs_at = st->n_items++;
	ev_item(st, "response.output_item.added", st->rs_at,
		json_pack("{s:s, s:s, s:[], s:[], s:s}", "type", "reasoning", "id", st->ids.rs, "summary", "content",
			  "status", "in_progress"));
	ev_part(st, "response.content_part.added", st->ids.rs, st->rs_at,
		json_pack("{s:s, s:s}", "type", "reasoning_text", "text", ""));
}

static void close_reasoning(resp_stream *st, const char *status)
{
	if (st->rs_at < 0 || st->rs_done)
		return;
	st->rs_done = 1;
	const srv_gen *g = &st->gen;
	ev(st, "response.reasoning_text.done",
	   json_pack("{s:s, s:i, s:i, s:s%}", "item_id", st->ids.rs, "output_index", st->rs_at, "content_index", 0,
		     "text", g->reason_all.p ? g->reason_all.p : "", g->reason_all.len));
	ev_part(st, "response.content_part.done", st->ids.rs, st->rs_at, reasoning_part(g));
	ev_item(st, "response.output_item.done", st->rs_at,
		json_pack("{s:s, s:s, s:[], s:[o], s:s}", "type", "reasoning", "id", st->ids.rs, "summary", "content",
			  reasoning_part(g), "status", status));
}

static void open_message(resp_stream *st)
{
	st->msg_at = st->n_items++;
	ev_item(st, "response.output_item.added", st->msg_at,
		json_pack("{s:s, s:s, s:s, s:s, s:[]}", "type", "message", "id", st->ids.msg, "status", "in_progress",
			  "role", "assistant", "content"));
	ev_part(st, "response.content_part.added", st->ids.msg, st->msg_at,
		json_pack("{s:s, s:s, s:[], s:[]}", "type", "output_text", "text", "", "annotations", "logprobs"));
}

static void close_message(resp_stream *st, const char *status)
{
	if (st->msg_at < 0 || st->msg_done)
		return;
	st->msg_done = 1;
	ev(st, "response.output_text.done",
	   json_pack("{s:s, s:i, s:i, s:s%, s:[]}", "item_id", st->ids.msg, "output_index", st->msg_at,
		     "content_index", 0, "text", st->text.p ? st->text.p : "", st->text.len, "logprobs"));
	ev_part(st, "response.content_part.done", st->ids.msg, st->msg_at, text_part(&st->text));
	ev_item(st, "response.output_item.done", st->msg_at,
		json_pack("{s:s, s:s, s:s, s:s, s:[o]}", "type", "message", "id", st->ids.msg, "status", status,
			  "role", "assistant", "content", text_part(&st->text)));
}

/* A function_call item (srv_tc_stream): added when its call begins (the
 * items before it done), its arguments as deltas, done when whole. The
 * tag is the output_index + 1. */
static json_t *call_item(const srv_tc_call *c, const char *args, const char *status)
{
	char id[48];
	srv_resp_fc_id(id, sizeof id, c->id);
	return json_pack("{s:s, s:s, s:s, s:s, s:s, s:s}", "type", "function_call", "id", id, "call_id", c->id,
			 "name", c->name ? c->name : "", "arguments", args, "status", status);
}

static int call_start(void *ctx, int i, srv_tc_call *c)
{
	resp_stream *st = ctx;
	(void)i;
	close_reasoning(st, "completed");
	close_message(st, "completed");
	int at = st->n_items++;
	ev_item(st, "response.output_item.added", at, call_item(c, "", "in_progress"));
	return at + 1;
}

static void call_args(void *ctx, int i, srv_tc_call *c, const char *p, size_t n)
{
	resp_stream *st = ctx;
	char id[48];
	(void)i;
	srv_resp_fc_id(id, sizeof id, c->id);
	ev(st, "response.function_call_arguments.delta",
	   json_pack("{s:s, s:i, s:s%}", "item_id", id, "output_index", c->announced - 1, "delta", p, n));
}

static void call_end(void *ctx, int i, srv_tc_call *c)
{
	resp_stream *st = ctx;
	char id[48];
	(void)i;
	srv_resp_fc_id(id, sizeof id, c->id);
	char *args = c->args.p ? strndup(c->args.p, c->args.len) : strdup("{}");
	if (!args) {
		st->out.oom = 1;
		return;
	}
	ev(st, "response.function_call_arguments.done",
	   json_pack("{s:s, s:i, s:s, s:s}", "item_id", id, "output_index", c->announced - 1, "name",
		     c->name ? c->name : "", "arguments", args));
	ev_item(st, "response.output_item.done", c->announced - 1, call_item(c, args, "completed"));
	free(args);
}

static void stream_calls(resp_stream *st)
{
	srv_tc_sink k = { st, call_start, call_args, call_end };
	srv_tc_stream(&st->gen.tc, &k);
}

/* Store the finished response, or drop its session. */
static void finish(resp_stream *st, json_t *object, int ok)
{
	if (st->finished)
		return;
	st->finished = 1;
	if (ok && st->q.store && object && !srv_resp_save(st->s, &st->q, object))
		return;
	if (st->q.req.session)
		srv_resp_drop(st->s, st->q.id);
}

/* parallel_tool_calls false: the first call only (the others are still
 * freed with the generation) */
static void one_call(const srv_resp *q, srv_result *res)
{
	if (q->req.no_parallel_tools && res->n_calls > 1)
		res->n_calls = 1;
}

static void stream_tail(resp_stream *st)
{
	srv_result res;
	srv_gen_result(&st->gen, &st->q.req, st->text.p ? st->text.p : "", st->text.len, &res);
	one_call(&st->q, &res);
	const char *status = srv_resp_status(&res);
	int failed = !strcmp(status, "failed");
	if (!failed) {
		srv_metrics_generation(&st->s->metrics, &res.usage, st->gen.ttft_ms, st->gen.tps);
		st->cc->usage = res.usage;
		const char *ist = res.finish == SRV_FINISH_LENGTH ? "incomplete" : "completed";
		close_reasoning(st, res.len || res.n_calls ? "completed" : ist);
		/* the calls left (those parsed only once complete) */
		stream_calls(st);
		if (st->msg_at < 0 && !res.n_calls)
			open_message(st);
		close_message(st, ist);
		json_t *all = srv_resp_output(&st->ids, &res);
		json_t *object = srv_resp_object(&st->q, status, all, &res);
		finish(st, object, 1);
		ev_response(st, !strcmp(status, "incomplete") ? "response.incomplete" : "response.completed", object);
		return;
	}
	json_t *object = srv_resp_object(&st->q, "failed", json_array(), &res);
	if (object && st->gen.finish == SRV_FINISH_ERROR)
		json_object_set_new(object, "error",
				    json_pack("{s:s, s:s}", "code", "server_error", "message", st->gen.errmsg));
	finish(st, NULL, 0);
	ev_response(st, "response.failed", object);
}

/* srv_queue_stream's step: 0, 1 once all is sent, -1 on an error. */
static int stream_step(void *cls)
{
	resp_stream *st = cls;
	switch (st->phase) {
	case PH_HEAD:
		ev_response(st, "response.created", srv_resp_object(&st->q, "in_progress", NULL, NULL));
		ev_response(st, "response.in_progress", srv_resp_object(&st->q, "in_progress", NULL, NULL));
		st->phase = PH_GEN;
		return 0;
	case PH_GEN: {
		util_buf_clear(&st->piece);
		int rc = srv_gen_next(&st->gen, &st->piece);
		if (rc < 0)
			return -1;
		if (st->gen.idle) {
			util_buf_puts(&st->out, ": keepalive\n\n");
			return 0;
		}
		if (st->gen.reason_step.len && st->msg_at < 0) {
			if (st->rs_at < 0)
				open_reasoning(st);
			ev(st, "response.reasoning_text.delta",
			   json_pack("{s:s, s:i, s:i, s:s%}", "item_id", st->ids.rs, "output_index", st->rs_at,
				     "content_index", 0, "delta", st->gen.reason_step.p, st->gen.reason_step.len));
		}
		if (st->piece.len) {
			close_reasoning(st, "completed");
			if (st->msg_at < 0)
				open_message(st);
			util_buf_add(&st->text, st->piece.p, st->piece.len);
			ev(st, "response.output_text.delta",
			   json_pack("{s:s, s:i, s:i, s:s%, s:[]}", "item_id", st->ids.msg, "output_index", st->msg_at,
				     "content_index", 0, "delta", st->piece.p, st->piece.len, "logprobs"));
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

static void stream_free(void *cls)
{
	resp_stream *st = cls;
	if (!st->gen.done)
		atomic_fetch_add(&st->s->metrics.cancelled, 1);
	srv_gen_free(&st->gen);
	/* cut short (client gone): nothing to continue from */
	finish(st, NULL, 0);
	srv_resp_free(&st->q);
	util_buf_free(&st->out);
	util_buf_free(&st->piece);
	util_buf_free(&st->text);
	free(st);
}

/* Parse, continue the stored conversation, build the prompt, submit. */
static int prepare(coli_server *s, const char *b, size_t len, int fd, int in_process, resp_stream *st,
		   srv_error *e)
{
	json_t *prev = NULL;
	int *ids = NULL, n_ids = 0, rc = -1;
	srv_resp *q = &st->q;
	if (srv_responses_prev_id(b, len, q->prev_id, sizeof q->prev_id, e))
		return -1;
	if (q->prev_id[0] && srv_resp_load(s, q->prev_id, &prev, e)) {
		if (e->status == 404)
			srv_fail(e, 404, "invalid_request_error", "previous_response_not_found", "previous_response_id",
				 "Previous response with id '%.80s' not found.", q->prev_id);
		return -1;
	}
	if (srv_responses_parse(b, len, prev, q, e))
		goto out;
	if (in_process) {
		/* coli batch: never streamed, its reader never stalls, and
		 * nothing is stored (the answers are in its output file; a KV
		 * session per line would fill the disk) */
		q->req.stream = 0;
		q->req.in_process = 1;
		q->store = 0;
		json_object_set_new(q->echo, "store", json_false());
	}
	if (!srv_model_accepted(s, q->req.model)) {
		srv_fail(e, 404, "invalid_request_error", "model_not_found", "model",
			 "the model '%s' does not exist (this server serves '%s')", q->req.model, s->model_id);
		goto out;
	}
	if (srv_resp_new_id(q->id, sizeof q->id)) {
		srv_fail(e, 500, "server_error", NULL, NULL, "no random id: getrandom failed");
		goto out;
	}
	q->created = (long long)time(NULL);
	snprintf(q->model, sizeof q->model, "%s", s->model_id);
	/* a session when the response is kept or continues one (a copy of
	 * the stored session: its tokens are not evaluated again) */
	const char *from = prev ? json_string_value(json_object_get(prev, "session")) : NULL;
	int forked = 0;
	if (from && !(forked = srv_resp_session_fork(s, from, q->id, e) == 0) && e->status)
		goto out;
	if (q->store || forked) {
		if (!(q->req.session = strdup(q->id))) {
			srv_fail(e, 500, "server_error", NULL, NULL, "out of memory");
			goto out;
		}
		q->req.session_whole = 1;
	}
	if (srv_build_prompt(s, &q->req, &ids, &n_ids, e))
		goto out;
	int ctx = coli_engine_ctx(s->eng);
	if (ctx > 0 && n_ids + 1 > ctx) {
		srv_fail(e, 400, "invalid_request_error", "context_length_exceeded", "input",
			 "the prompt is %d tokens; this server's context is %d tokens", n_ids, ctx);
		goto out;
	}
	if (srv_gen_start(&st->gen, s->eng, ids, n_ids, &q->req, s->ignore_eos, fd, &s->stopping, e)) {
		if (e->status == 503)
			atomic_fetch_add(&s->metrics.rejected_busy, 1);
		goto out;
	}
	rc = 0;
out:
	if (rc && q->req.session)
		finish(st, NULL, 0);
	st->finished = rc != 0;
	json_decref(prev);
	free(ids);
	return rc;
}

/* Wait for the whole answer: 0 with *body, 1 with e (an error to
 * answer), 2 with e (cut short by the server stopping), -1 when the client
 * went away. Frees st. */
static int whole(coli_server *s, srv_conn *cc, resp_stream *st, srv_error *e, char **body)
{
	int rc, ret = 0;
	while ((rc = srv_gen_next(&st->gen, &st->text)) > 0)
		;
	*body = NULL;
	if (rc < 0) {
		atomic_fetch_add(&s->metrics.cancelled, 1);
		ret = -1;
	} else if (st->gen.finish == SRV_FINISH_SHUTDOWN) {
		srv_fail(e, 503, "server_error", "shutting_down", NULL,
			 "the server is shutting down; the request was stopped");
		ret = 2;
	} else if (st->gen.finish == SRV_FINISH_ERROR) {
		srv_fail(e, 500, "server_error", NULL, NULL, "generation failed: %s", st->gen.errmsg);
		ret = 1;
	} else {
		srv_result res;
		srv_gen_result(&st->gen, &st->q.req, st->text.p ? st->text.p : "", st->text.len, &res);
		one_call(&st->q, &res);
		srv_metrics_generation(&s->metrics, &res.usage, st->gen.ttft_ms, st->gen.tps);
		cc->usage = res.usage;
		json_t *object = srv_resp_object(&st->q, srv_resp_status(&res), srv_resp_output(&st->ids, &res), &res);
		finish(st, object, 1);
		*body = object ? json_dumps(object, JSON_COMPACT) : NULL;
		json_decref(object);
	}
	srv_gen_free(&st->gen);
	finish(st, NULL, 0);
	srv_resp_free(&st->q);
	util_buf_free(&st->text);
	free(st);
	return ret;
}

static resp_stream *stream_new(coli_server *s, srv_conn *cc)
{
	resp_stream *st = calloc(1, sizeof *st);
	if (!st)
		return NULL;
	st->s = s;
	st->cc = cc;
	st->rs_at = st->msg_at = -1;
	srv_resp_ids_make(&st->ids);
	return st;
}

static void stream_discard(resp_stream *st)
{
	srv_gen_free(&st->gen);
	srv_resp_free(&st->q);
	free(st);
}

int srv_responses_post(coli_server *s, struct MHD_Connection *c, srv_conn *cc)
{
	srv_error e = { 0 };
	char *body;
	resp_stream *st = stream_new(s, cc);
	if (!st)
		return MHD_NO;
	if (prepare(s, cc->body.p ? cc->body.p : "", cc->body.len, srv_client_fd(c), 0, st, &e)) {
		stream_discard(st);
		return srv_respond_error(s, c, cc, &e);
	}
	if (st->q.req.stream) {
		st->gen.keepalive_ms = KEEPALIVE_MS;
		return srv_queue_stream(s, c, cc, &st->out, stream_step, st, stream_free);
	}
	int rc = whole(s, cc, st, &e, &body);
	if (rc < 0)
		return MHD_NO;
	if (rc > 0)
		return srv_respond_error(s, c, cc, &e);
	return srv_respond(s, c, cc, 200, "application/json", body);
}

int srv_responses_answer(coli_server *s, srv_conn *cc, const char *b, size_t len, srv_error *e, char **body)
{
	*body = NULL;
	resp_stream *st = stream_new(s, cc);
	if (!st)
		return -ENOMEM;
	if (prepare(s, b, len, -1, 1, st, e)) {
		stream_discard(st);
		return 1;
	}
	int rc = whole(s, cc, st, e, body);
	return rc < 0 || rc == 2 ? -ECANCELED : rc;
}
