/* Sessions resumed by the session writer thread, two slots. Session "a"
 * and its twin "b" get the same first turn; b's second turn continues in
 * RAM (the reference). In a fresh engine a's second turn resumes a from
 * disk: first with its row read failing (test builds: EIO), which must
 * end that request with the error and lose nothing; then with the read
 * held (test builds: until a file exists) while a stateless request in
 * the other slot decodes 20 tokens, which it can only do if the read is
 * off the engine thread. Checks: the error, the other slot's tokens
 * during the hold, a's second turn equal to b's.
 * Usage: core_session_bind MODEL_DIR CACHE_DIR */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"
#include "test_util.h"

#define MAX_TOK 256

typedef struct {
	coli_request *r;
	int tok[MAX_TOK];
	int n;
	coli_event last;
} turn;

/* Read up to `upto` tokens (0: to the end); -1 when it stalls for
 * minutes (a broken engine, not a slow machine). */
static int drain(turn *t, int upto)
{
	coli_event ev;
	while (t->r) {
		if (upto && t->n >= upto)
			return 0;
		if (!coli_request_next(t->r, &ev, 300 * 1000))
			return -1;
		if (ev.kind == COLI_EV_TEXT) {
			if (t->n < MAX_TOK)
				t->tok[t->n++] = ev.token;
			continue;
		}
		t->last = ev;
		coli_request_free(t->r);
		t->r = NULL;
	}
	return 0;
}

static coli_engine *open_engine(const char *model, const char *cache)
{
	coli_engine_opts o;
	coli_engine_opts_default(&o);
	o.model_dir = model;
	o.cache_dir = cache;
	o.parallel = 2;
	o.ctx = 512;
	o.threads = 1;
	coli_err err = { 0 };
	coli_engine *e = NULL;
	if (coli_engine_new(&o, &e, &err))
		fprintf(stderr, "engine: %s\n", err.msg);
	return e;
}

/* Submit and read to the end (or just submit when upto < 0). */
static void go(coli_engine *e, const char *session, const int *prompt, int n, int max, turn *t, int upto)
{
	coli_gen_params p;
	coli_gen_params_default(&p);
	p.ignore_eos = 1;
	p.every_token = 1;
	p.max_tokens = max;
	p.session = session;
	coli_err err = { 0 };
	memset(t, 0, sizeof *t);
	CHECK(coli_engine_submit(e, prompt, n, &p, &t->r, &err) == 0, "submit %s: %s",
	      session ? session : "(none)", err.msg);
	if (t->r && upto >= 0)
		CHECK(drain(t, upto) == 0, "%s never ended", session ? session : "(none)");
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: %s MODEL_DIR CACHE_DIR\n", argv[0]);
		return 2;
	}
	int p1[300], p2[3] = { 7, 8, 9 }, pb[4] = { 21, 22, 23, 24 };
	for (int i = 0; i < 300; i++)
		p1[i] = 2 + i % 100;
	static turn a1, b1, b2, a2, bad, other;
	coli_engine *e = open_engine(argv[1], argv[2]);
	CHECK(e != NULL, "engine with two slots");
	if (!e)
		return test_summary(__FILE__);
	go(e, "a", p1, 300, 20, &a1, 0);
	go(e, "b", p1, 300, 20, &b1, 0);
	go(e, "b", p2, 3, 30, &b2, 0);
	CHECK(a1.n == 20 && b1.n == 20 && !memcmp(a1.tok, b1.tok, sizeof a1.tok), "twin first turns differ");
	coli_engine_free(e);

	e = open_engine(argv[1], argv[2]);
	CHECK(e != NULL, "a fresh engine");
	if (!e)
		return test_summary(__FILE__);
#ifdef COLI_FAULT_INJECTION
	setenv("COLI_FAULT_KV_RESUME_EIO", "1", 1);
	go(e, "a", p2, 3, 30, &bad, 0);
	unsetenv("COLI_FAULT_KV_RESUME_EIO");
	CHECK(bad.last.kind == COLI_EV_ERROR && strstr(bad.last.message, "session a") &&
	      strstr(bad.last.message, "Input/output error"), "a failed resume: kind %d: %s", bad.last.kind,
	      bad.last.message);
	char hold[4200];
	snprintf(hold, sizeof hold, "%s/release", argv[2]);
	setenv("COLI_FAULT_KV_RESUME_WAIT", hold, 1);
#endif
	/* the other slot decodes; then a resumes beside it */
	go(e, NULL, pb, 4, 200, &other, 1);
	go(e, "a", p2, 3, 30, &a2, -1);
	CHECK(drain(&other, 21) == 0 && other.n == 21, "the other slot stopped at %d tokens", other.n);
#ifdef COLI_FAULT_INJECTION
	/* a's rows are still held: it has no event yet */
	coli_event ev;
	CHECK(a2.r && !coli_request_next(a2.r, &ev, 0), "a resumed while its row read was held");
	FILE *f = fopen(hold, "w");
	CHECK(f != NULL, "create %s", hold);
	if (f)
		fclose(f);
#endif
	CHECK(drain(&a2, 0) == 0, "a's second turn never ended");
	CHECK(drain(&other, 0) == 0, "the other request never ended");
#ifdef COLI_FAULT_INJECTION
	unsetenv("COLI_FAULT_KV_RESUME_WAIT");
#endif
	coli_engine_free(e);
	CHECK(a2.last.kind == COLI_EV_DONE && !a2.last.message[0], "a turn 2: kind %d: %s", a2.last.kind,
	      a2.last.message);
	CHECK(other.last.kind == COLI_EV_DONE && other.n == 200, "the other request: %d tokens: %s", other.n,
	      other.last.message);
	CHECK(a2.n == b2.n && !memcmp(a2.tok, b2.tok, sizeof(int) * (size_t)a2.n),
	      "a's second turn resumed from disk (%d tokens) differs from b's in RAM (%d)", a2.n, b2.n);
	if (!test_failures)
		printf("a session resumed off the engine thread while another slot decoded: as in RAM\n");
	return test_summary(__FILE__);
}
