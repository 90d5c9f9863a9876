/* server_gen.c - one generation as seen from an HTTP connection thread:
 * submit to the engine queue, wait for events, and cancel as soon as the
 * client is gone.
 *
 * libmicrohttpd only notices a vanished client when it next writes, which
 * for a long prefill or a non-streamed answer can be minutes away. So
 * before each wait for the engine (at least every 50 ms, and after every
 * token) we look at the socket ourselves (POLLRDHUP) and cancel the
 * request, which the engine honours within one step. Freeing the
 * generation cancels too (the response's free callback, server_handlers.c). */
#include "config.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coli_log.h"
#include "server_internal.h"
#include "util_array.h"

#define WAIT_MS 50
#define SHUTDOWN_WAIT_MS 5000

static int peer_gone(int fd)
{
	if (fd < 0)
		return 0;
	struct pollfd p = { .fd = fd, .events = POLLRDHUP };
	if (poll(&p, 1, 0) <= 0)
		return 0;
	return (p.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL)) != 0;
}

int srv_gen_start(srv_gen *g, coli_engine *eng, const int *ids, int n_ids,
		  const srv_request *r, int ignore_eos, int fd, atomic_int *stopping, srv_error *e)
{
	memset(g, 0, sizeof *g);
	g->fd = fd;
	g->stopping = stopping;
	g->tok = coli_engine_tokenizer(eng);
	g->n_prompt = n_ids;
	srv_stopper_init(&g->st, (const char *const *)r->stop, r->tools_json != NULL);
	coli_gen_params p;
	coli_gen_params_default(&p);
	p.max_tokens = r->max_tokens;
	/* the engine waits for no reader (engine_request.h): a client that
	 * stops reading its stream is cancelled; an in-process reader (coli
	 * batch) only lags, and its slot pauses until it reads */
	p.cancel_when_stalled = !r->in_process;
	p.temperature = (float)r->temperature;
	p.top_p = (float)r->top_p;
	if (r->has_seed)
		p.seed = r->seed;
	p.ignore_eos = ignore_eos;
	p.bias_ids = r->bias_ids;
	p.bias = r->bias;
	p.n_bias = r->n_bias;
	p.grammar = r->grammar;         /* compiled while parsing */
	p.json_schema = r->json_schema;
	p.json_object = r->json_object;
	p.grammar_after_think = r->think_open;
	g->forced_tool = r->forced_tool;
	g->think = r->api == SRV_API_CHAT || r->api == SRV_API_MESSAGES || r->api == SRV_API_RESPONSES;
	p.session = r->session;
	p.session_whole = r->session_whole;
	p.label = r->label;
	srv_think_init(&g->th, r->think_open);
	p.logprobs = g->want_lp = r->logprobs;
	p.top_logprobs = r->top_logprobs;
	if (g->forced_tool || r->forced_pick)
		g->st.capturing = 1; /* the whole answer is the call */
	srv_tc_init(&g->tc, g->forced_tool ? SRV_TC_FORCED : r->forced_pick ? SRV_TC_PICK : SRV_TC_MARKUP,
		    r->tools_json, g->forced_tool, r->one_call ? 1 : 0,
		    r->api == SRV_API_MESSAGES ? "toolu_" : "call_");
	p.draft = r->draft;
	coli_err cerr = { 0 };
	int rc = coli_engine_submit(eng, ids, n_ids, &p, &g->req, &cerr);
	if (rc == -EINVAL && r->draft)
		return srv_fail(e, 400, "invalid_request_error", "invalid_value", "draft", "%s", cerr.msg);
	if (rc == -EBUSY)
		return srv_fail(e, 503, "server_error", "queue_full", NULL,
				"the request queue is full; retry later");
	if (rc == -ERANGE)
		return srv_fail(e, 400, "invalid_request_error", "invalid_value", "logit_bias", "%s",
				cerr.msg);
	if (rc == -E2BIG)
		return srv_fail(e, 400, "invalid_request_error", "context_length_exceeded", "messages",
				"%s", cerr.msg[0] ? cerr.msg : "the prompt exceeds the context length");
	if (rc < 0)
		return srv_fail(e, 500, "server_error", NULL, NULL, "engine refused the request: %s",
				cerr.msg[0] ? cerr.msg : strerror(-rc));
	return 0;
}

/* Wait for the next engine event; -1 when the client left, 1 when
 * keepalive_ms passed without one. The socket is checked before every wait,
 * not only after a quiet spell: a steady flow of tokens must not hide a
 * client that left (the engine then stops within one step).
 *
 * When the server stops, the request is cancelled but its events are still
 * read up to the engine's DONE (the engine honours a cancel within one
 * step), so the client gets a proper final event or status; a stuck engine
 * is given up on after SHUTDOWN_WAIT_MS. */
static int wait_event(srv_gen *g, coli_event *ev)
{
	int waited = 0;
	for (;;) {
		if (g->stopping && atomic_load(g->stopping) && !g->shutdown) {
			coli_request_cancel(g->req);
			g->shutdown = 1;
			g->keepalive_ms = 0;
			waited = 0;
		}
		if (peer_gone(g->fd)) {
			coli_debug("server: client went away; cancelling its request");
			coli_request_cancel(g->req);
			g->gone = 1;
			return -1;
		}
		if (coli_request_next(g->req, ev, WAIT_MS) == 1)
			return 0;
		waited += WAIT_MS;
		if (g->shutdown && waited >= SHUTDOWN_WAIT_MS) {
			memset(ev, 0, sizeof *ev);
			ev->kind = COLI_EV_DONE;
			ev->finish = COLI_FINISH_CANCELLED;
			return 0;
		}
		if (g->keepalive_ms > 0 && waited >= g->keepalive_ms)
			return 1;
	}
}

/* Special tokens reach us with empty text; inside (or opening) tool-call
 * markup we need their text. End-of-sequence tokens are never shown. */
static size_t special_text(srv_gen *g, const coli_event *ev, char *out, size_t cap)
{
	if (!g->tok || ev->token < 0 || !coli_tokenizer_is_special(g->tok, ev->token) ||
	    ev->token == coli_tokenizer_eos_id(g->tok))
		return 0;
	const char *t = coli_tokenizer_token_text(g->tok, ev->token);
	if (g->think && t && (!strcmp(t, "<think>") || !strcmp(t, "</think>"))) {
		size_t n = strlen(t);
		memcpy(out, t, n);
		return n;
	}
	if (!g->st.tools)
		return 0;
	size_t n = t ? strlen(t) : 0;
	if (!n || n >= cap || (!g->st.capturing && !strstr(t, "tool")))
		return 0;
	memcpy(out, t, n);
	return n;
}

/* Markup captured since the last call goes to the tool-call parser. */
static void feed_calls(srv_gen *g)
{
	if (g->st.markup.len > g->tc_fed) {
		srv_tc_feed(&g->tc, g->st.markup.p + g->tc_fed, g->st.markup.len - g->tc_fed);
		g->tc_fed = g->st.markup.len;
	}
}

static void finish_from_done(srv_gen *g, const coli_event *ev, util_buf *out)
{
	g->usage.prompt = ev->prompt_tokens > 0 ? ev->prompt_tokens : g->n_prompt;
	g->usage.cached = ev->cached_tokens;
	g->ttft_ms = ev->ttft_ms;
	g->tps = ev->decode_tps;
	/* The engine's count: after a stop string it may include the few
	 * tokens generated before the cancellation took effect. */
	g->usage.completion = ev->completion_tokens > 0 ? ev->completion_tokens : g->n_out;
	g->usage.reasoning = g->reasoning_tokens;
	if (g->finish == SRV_FINISH_STOP_SEQ)
		return;
	if (g->think) {
		util_buf_clear(&g->answer);
		size_t before = g->reason_step.len;
		srv_think_flush(&g->th, &g->reason_step, &g->answer);
		util_buf_add(&g->reason_all, g->reason_step.p + before, g->reason_step.len - before);
		if (g->answer.len)
			srv_stopper_push(&g->st, g->answer.p, g->answer.len, out);
	}
	srv_stopper_flush(&g->st, out);
	switch (ev->finish) {
	case COLI_FINISH_LENGTH: g->finish = SRV_FINISH_LENGTH; break;
	case COLI_FINISH_CANCELLED:
		g->finish = g->shutdown ? SRV_FINISH_SHUTDOWN : SRV_FINISH_CANCELLED;
		break;
	case COLI_FINISH_ERROR: g->finish = SRV_FINISH_ERROR; break;
	default: g->finish = SRV_FINISH_STOP;
	}
	if (g->st.capturing) {
		feed_calls(g);
		srv_tc_finish(&g->tc);
		if (g->tc.fmt != SRV_TC_FMT_OWN) {
			/* DeepSeek and JSON forms: parsed whole */
			srv_tool_call *c = NULL;
			int n = srv_tools_parse(g->st.markup.p, g->st.markup.len, &c);
			srv_tc_adopt(&g->tc, c, n);
			srv_tools_free(c, n);
		}
		g->n_calls = srv_tc_take(&g->tc, &g->calls);
		if (g->n_calls > 0) {
			if (g->finish == SRV_FINISH_STOP)
				g->finish = SRV_FINISH_TOOL;
		} else if (!g->tc.n_calls)
			/* unparseable markup: show it rather than lose it */
			util_buf_add(out, g->st.markup.p, g->st.markup.len);
	}
}

int srv_gen_next(srv_gen *g, util_buf *out)
{
	if (g->done)
		return 0;
	if (g->gone)
		return -1;
	util_buf_clear(&g->reason_step);
	coli_event ev;
	g->idle = 0;
	int w = wait_event(g, &ev);
	if (w < 0)
		return -1;
	if (w > 0) {
		g->idle = 1;
		return 1;
	}
	g->started = 1;
	switch (ev.kind) {
	case COLI_EV_TEXT: {
		g->n_out++;
		if (g->want_lp && ev.has_logprob && ev.token >= 0) {
			/* two parallel arrays, one capacity; out of memory
			 * drops the entry */
			int cap_l = g->cap_lp, cap_t = g->cap_lp;
			if (!util_array_grow(&g->lp, &cap_l, g->n_lp + 1, 64) &&
			    !util_array_grow(&g->lp_tok, &cap_t, g->n_lp + 1, 64))
				g->cap_lp = cap_t;
			if (g->n_lp < g->cap_lp) {
				g->lp[g->n_lp] = ev.lp;
				g->lp_tok[g->n_lp++] = ev.token;
			}
		}
		const char *text = ev.text;
		size_t len = ev.text_len;
		char sp[1024];
		if (len == 0) {
			len = special_text(g, &ev, sp, sizeof sp);
			text = sp;
		}
		if (g->think && len) {
			/* the reasoning goes aside; stop strings and tool
			 * markup apply to the answer only */
			g->reasoning_tokens += srv_think_inside(&g->th);
			util_buf_clear(&g->answer);
			size_t before = g->reason_step.len;
			srv_think_push(&g->th, text, len, &g->reason_step, &g->answer);
			util_buf_add(&g->reason_all, g->reason_step.p + before, g->reason_step.len - before);
			text = g->answer.p ? g->answer.p : "";
			len = g->answer.len;
		} else if (g->think) {
			g->reasoning_tokens += srv_think_inside(&g->th);
		}
		int hit = len && srv_stopper_push(&g->st, text, len, out);
		feed_calls(g);
		if (hit) {
			/* A stop string: stop the engine, then collect the usage. */
			g->finish = SRV_FINISH_STOP_SEQ;
			coli_request_cancel(g->req);
			g->keepalive_ms = 0;
			do {
				if (wait_event(g, &ev)) {
					/* gone while draining: the answer is complete anyway */
					g->gone = 0;
					ev.kind = COLI_EV_DONE;
					ev.prompt_tokens = g->n_prompt;
					ev.cached_tokens = 0;
					ev.completion_tokens = g->n_out;
					ev.ttft_ms = ev.decode_tps = 0;
					break;
				}
			} while (ev.kind == COLI_EV_TEXT);
			finish_from_done(g, &ev, out);
			g->done = 1;
			return 0;
		}
		return 1;
	}
	case COLI_EV_DONE:
		finish_from_done(g, &ev, out);
		g->done = 1;
		return 0;
	default:
		g->finish = SRV_FINISH_ERROR;
		snprintf(g->errmsg, sizeof g->errmsg, "%s",
			 ev.message[0] ? ev.message : "generation failed");
		g->usage.prompt = g->n_prompt;
		g->usage.completion = g->n_out;
		g->done = 1;
		return 0;
	}
}

void srv_gen_result(const srv_gen *g, const srv_request *r, const char *text, size_t len,
		    srv_result *out)
{
	memset(out, 0, sizeof *out);
	out->text = text;
	out->len = len;
	out->finish = g->finish;
	if (g->finish == SRV_FINISH_STOP_SEQ && g->st.hit >= 0 && g->st.hit < r->n_stop)
		out->stop_seq = r->stop[g->st.hit];
	out->usage = g->usage;
	out->calls = g->calls;
	out->n_calls = g->n_calls;
	out->want_lp = g->want_lp;
	out->reasoning = g->reason_all.len ? g->reason_all.p : NULL;
	out->reasoning_len = g->reason_all.len;
	out->show_thinking = r->show_thinking;
	out->lp = g->lp;
	out->lp_tok = g->lp_tok;
	out->n_lp = g->n_lp;
	out->tok = g->tok;
}

void srv_gen_free(srv_gen *g)
{
	if (!g)
		return;
	coli_request_free(g->req);
	srv_stopper_free(&g->st);
	srv_tc_free(&g->tc);
	srv_tools_free(g->calls, g->n_calls);
	free(g->lp);
	free(g->lp_tok);
	srv_think_free(&g->th);
	util_buf_free(&g->answer);
	util_buf_free(&g->reason_step);
	util_buf_free(&g->reason_all);
	memset(g, 0, sizeof *g);
}
