/* server_test_gen.c - the generation driver (server_gen.c) over scripted
 * engine events: stop strings split across events, tool-call markup made of
 * special tokens, end-of-sequence never shown, errors, a client that leaves
 * while tokens keep coming (cancelled before the next token is taken), the
 * server stopping mid-generation, and the statuses for a full queue or an
 * over-long prompt.
 *
 * The engine and tokenizer entry points server_gen.c uses are defined here
 * (test-only script player), so libcoli.a's engine is not linked into this
 * binary; the real engine is exercised by server_sdk.sh. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sys/socket.h>

#include "server_internal.h"
#include "test_util.h"

/* ---- scripted engine ---- */
#define TOK_EOS 2
#define TOK_TC_OPEN 7
#define TOK_TC_CLOSE 8

struct coli_request {
	const coli_event *script;
	int n, at, cancelled;
};
static struct coli_request the_req;
static int submit_rc;

void coli_gen_params_default(coli_gen_params *p)
{
	memset(p, 0, sizeof *p);
	p->top_p = 1;
}
const coli_tokenizer *coli_engine_tokenizer(const coli_engine *e)
{
	(void)e;
	return (const coli_tokenizer *)&the_req;   /* any non-NULL handle */
}
int coli_engine_submit(coli_engine *e, const int *prompt, int n_prompt, const coli_gen_params *p,
		       coli_request **out, coli_err *err)
{
	(void)e;
	(void)prompt;
	(void)n_prompt;
	CHECK(p->stop == NULL);   /* stop strings stay in the HTTP layer */
	if (submit_rc)
		return coli_err_set(err, submit_rc, "scripted refusal");
	*out = &the_req;
	return 0;
}
int coli_request_next(coli_request *r, coli_event *ev, int timeout_ms)
{
	(void)timeout_ms;
	if (r->cancelled && r->at < r->n && r->script[r->at].kind == COLI_EV_TEXT) {
		memset(ev, 0, sizeof *ev);
		ev->kind = COLI_EV_DONE;
		ev->finish = COLI_FINISH_CANCELLED;
		ev->completion_tokens = r->at;
		return 1;
	}
	if (r->at < r->n - 1 && r->script[r->at].kind == 0) {
		r->at++;   /* a pause: this wait times out */
		return 0;
	}
	*ev = r->script[r->at < r->n - 1 ? r->at++ : r->n - 1];
	return 1;
}
void coli_request_cancel(coli_request *r) { r->cancelled = 1; }
void coli_request_free(coli_request *r) { (void)r; }
int coli_tokenizer_is_special(const coli_tokenizer *t, int id)
{
	(void)t;
	return id == TOK_EOS || id == TOK_TC_OPEN || id == TOK_TC_CLOSE;
}
int coli_tokenizer_eos_id(const coli_tokenizer *t)
{
	(void)t;
	return TOK_EOS;
}
const char *coli_tokenizer_token_text(const coli_tokenizer *t, int id)
{
	(void)t;
	return id == TOK_TC_OPEN ? "<tool_call>" : id == TOK_TC_CLOSE ? "</tool_call>"
	     : id == TOK_EOS ? "</s>" : "?";
}

static coli_event text_ev(int token, const char *s)
{
	coli_event e;
	memset(&e, 0, sizeof e);
	e.kind = COLI_EV_TEXT;
	e.token = token;
	snprintf(e.text, sizeof e.text, "%s", s);
	e.text_len = strlen(s);
	return e;
}

static coli_event done_ev(int finish, int completion)
{
	coli_event e;
	memset(&e, 0, sizeof e);
	e.kind = COLI_EV_DONE;
	e.finish = finish;
	e.prompt_tokens = 5;
	e.cached_tokens = 2;
	e.completion_tokens = completion;
	return e;
}

/* Run a script to the end; returns the shown text in out. */
static int run(const coli_event *script, int n, srv_request *r, srv_gen *g, util_buf *out)
{
	memset(&the_req, 0, sizeof the_req);
	the_req.script = script;
	the_req.n = n;
	srv_error e = { 0 };
	int ids[5] = { 1, 2, 3, 4, 5 };
	if (srv_gen_start(g, NULL, ids, 5, r, 0, -1, NULL, &e))
		return -1;
	int rc;
	while ((rc = srv_gen_next(g, out)) > 0)
		;
	return rc;
}

int main(void)
{
	srv_request r;
	srv_gen g;
	util_buf out = { 0 };
	srv_result res;
	srv_error e = { 0 };
	int ids5[5] = { 1, 2, 3, 4, 5 };

	/* a stop string split across events; the engine is cancelled */
	memset(&r, 0, sizeof r);
	r.stop[0] = "END";
	r.n_stop = 1;
	coli_event s1[] = { text_ev(10, "Hel"), text_ev(11, "lo E"), text_ev(12, "ND more"),
			    text_ev(13, "never"), done_ev(COLI_FINISH_STOP, 9) };
	CHECK(run(s1, 5, &r, &g, &out) == 0);
	CHECK(out.p && !strcmp(out.p, "Hello "));
	CHECK(g.finish == SRV_FINISH_STOP_SEQ && the_req.cancelled);
	srv_gen_result(&g, &r, out.p, out.len, &res);
	CHECK(res.stop_seq && !strcmp(res.stop_seq, "END"));
	CHECK(res.usage.prompt == 5 && res.usage.completion == 3);
	srv_gen_free(&g);
	util_buf_free(&out);

	/* a partial stop at the end is released */
	coli_event s2[] = { text_ev(10, "abc E"), done_ev(COLI_FINISH_LENGTH, 1) };
	CHECK(run(s2, 2, &r, &g, &out) == 0);
	CHECK(out.p && !strcmp(out.p, "abc E") && g.finish == SRV_FINISH_LENGTH);
	CHECK(g.usage.cached == 2 && g.usage.completion == 1);
	srv_gen_free(&g);
	util_buf_free(&out);

	/* tool-call markup from special tokens becomes a call; EOS never shows */
	memset(&r, 0, sizeof r);
	r.tools_json = "[]";
	coli_event s3[] = { text_ev(10, "ok "), text_ev(TOK_TC_OPEN, ""),
			    text_ev(20, "get\n<arg_key>a</arg_key><arg_value>1</arg_value>"),
			    text_ev(TOK_TC_CLOSE, ""), text_ev(TOK_EOS, ""),
			    done_ev(COLI_FINISH_STOP, 5) };
	CHECK(run(s3, 6, &r, &g, &out) == 0);
	CHECK(out.p && !strcmp(out.p, "ok "));
	CHECK(g.finish == SRV_FINISH_TOOL && g.n_calls == 1);
	if (g.n_calls == 1)
		CHECK(!strcmp(g.calls[0].name, "get") && !strcmp(g.calls[0].arguments, "{\"a\":1}"));
	srv_gen_free(&g);
	util_buf_free(&out);

	/* the same typed by the tool's schema (a string stays a string), its
	 * arguments growing while generated, for the Anthropic API (toolu_
	 * ids); a call left open at the end is closed (issue 31) */
	memset(&r, 0, sizeof r);
	r.api = SRV_API_MESSAGES;
	r.tools_json = "[{\"type\":\"function\",\"function\":{\"name\":\"get\",\"parameters\":"
		       "{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"}}}}}]";
	coli_event s3b[] = { text_ev(TOK_TC_OPEN, ""), text_ev(20, "get\n<arg_key>a</arg_key><arg_value> 1"),
			     text_ev(21, "2 "), text_ev(22, "</arg_value>"), done_ev(COLI_FINISH_STOP, 4) };
	memset(&the_req, 0, sizeof the_req);
	the_req.script = s3b;
	the_req.n = 5;
	CHECK(srv_gen_start(&g, NULL, ids5, 5, &r, 0, -1, NULL, &e) == 0);
	CHECK(srv_gen_next(&g, &out) == 1 && srv_gen_next(&g, &out) == 1);
	CHECK(g.tc.n_calls == 1 && !strcmp(g.tc.calls[0].name, "get") && g.tc.calls[0].args.p &&
	      !strcmp(g.tc.calls[0].args.p, "{\"a\":\" 1"), "while generated: %s",
	      g.tc.n_calls ? g.tc.calls[0].args.p : "(none)");
	while (srv_gen_next(&g, &out) > 0)
		;
	CHECK(g.finish == SRV_FINISH_TOOL && g.n_calls == 1 && !out.len);
	if (g.n_calls == 1)
		CHECK(!strcmp(g.calls[0].arguments, "{\"a\":\" 12 \"}") && !strncmp(g.calls[0].id, "toolu_", 6),
		      "%s %s", g.calls[0].id, g.calls[0].arguments);
	srv_gen_free(&g);
	util_buf_free(&out);

	/* without tools, special tokens stay invisible */
	memset(&r, 0, sizeof r);
	CHECK(run(s3, 6, &r, &g, &out) == 0);
	CHECK(out.p && !strcmp(out.p, "ok get\n<arg_key>a</arg_key><arg_value>1</arg_value>"));
	CHECK(g.finish == SRV_FINISH_STOP && g.n_calls == 0);
	srv_gen_free(&g);
	util_buf_free(&out);

	/* engine error */
	coli_event s4[2] = { text_ev(10, "x") };
	s4[1].kind = COLI_EV_ERROR;
	snprintf(s4[1].message, sizeof s4[1].message, "disk on fire");
	CHECK(run(s4, 2, &r, &g, &out) == 0);
	CHECK(g.finish == SRV_FINISH_ERROR && !strcmp(g.errmsg, "disk on fire"));
	srv_gen_free(&g);
	util_buf_free(&out);

	/* a quiet engine makes the stream send keepalives, then carries on */
	memset(&r, 0, sizeof r);
	coli_event pause;
	memset(&pause, 0, sizeof pause);
	coli_event s5[] = { text_ev(10, "a"), pause, pause, text_ev(11, "b"),
			    done_ev(COLI_FINISH_STOP, 2) };
	memset(&the_req, 0, sizeof the_req);
	the_req.script = s5;
	the_req.n = 5;
	CHECK(srv_gen_start(&g, NULL, ids5, 5, &r, 0, -1, NULL, &e) == 0);
	g.keepalive_ms = 100;   /* two 50 ms waits */
	CHECK(srv_gen_next(&g, &out) == 1 && !g.idle && !strcmp(out.p, "a"));
	CHECK(srv_gen_next(&g, &out) == 1 && g.idle && !strcmp(out.p, "a"));
	CHECK(srv_gen_next(&g, &out) == 1 && !g.idle && !strcmp(out.p, "ab"));
	CHECK(srv_gen_next(&g, &out) == 0 && g.finish == SRV_FINISH_STOP);
	srv_gen_free(&g);
	util_buf_free(&out);

	/* the client leaves while the engine has tokens ready every time: the
	 * socket is looked at before each token is taken, so the request is
	 * cancelled at once (it used to be looked at only after a quiet 50 ms,
	 * which a busy engine never has) */
	coli_event s6[] = { text_ev(10, "a"), text_ev(11, "b"), text_ev(12, "c"),
			    text_ev(13, "d"), done_ev(COLI_FINISH_STOP, 4) };
	int sv[2];
	CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
	memset(&the_req, 0, sizeof the_req);
	the_req.script = s6;
	the_req.n = 5;
	CHECK(srv_gen_start(&g, NULL, ids5, 5, &r, 0, sv[0], NULL, &e) == 0);
	CHECK(srv_gen_next(&g, &out) == 1 && !strcmp(out.p, "a"));
	close(sv[1]);
	CHECK(srv_gen_next(&g, &out) == -1 && the_req.cancelled && the_req.at == 1);
	srv_gen_free(&g);
	util_buf_free(&out);
	close(sv[0]);

	/* the server stops: the request is cancelled and read to its end, so
	 * the client gets a final event (SRV_FINISH_SHUTDOWN), not a cut */
	atomic_int stopping = 0;
	memset(&the_req, 0, sizeof the_req);
	the_req.script = s6;
	the_req.n = 5;
	CHECK(srv_gen_start(&g, NULL, ids5, 5, &r, 0, -1, &stopping, &e) == 0);
	CHECK(srv_gen_next(&g, &out) == 1 && !strcmp(out.p, "a"));
	atomic_store(&stopping, 1);
	CHECK(srv_gen_next(&g, &out) == 0 && g.finish == SRV_FINISH_SHUTDOWN && the_req.cancelled);
	srv_gen_free(&g);
	util_buf_free(&out);

	/* refusals map to HTTP statuses */
	int ids[1] = { 1 };
	submit_rc = -EBUSY;
	CHECK(srv_gen_start(&g, NULL, ids, 1, &r, 0, -1, NULL, &e) < 0 && e.status == 503);
	srv_gen_free(&g);
	submit_rc = -E2BIG;
	CHECK(srv_gen_start(&g, NULL, ids, 1, &r, 0, -1, NULL, &e) < 0 && e.status == 400 &&
	      !strcmp(e.code, "context_length_exceeded"));
	srv_gen_free(&g);
	submit_rc = -EIO;
	CHECK(srv_gen_start(&g, NULL, ids, 1, &r, 0, -1, NULL, &e) < 0 && e.status == 500);
	srv_gen_free(&g);

	return test_summary(__FILE__);
}
