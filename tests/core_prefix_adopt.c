/* Prompt-prefix reuse from another saved session (--share-session-prefixes)
 * read by the session writer thread, never the engine thread (issue 28).
 * Session "s" saves prompt P; a stateless prompt Q = P + one token then
 * reuses P from s's file in a fresh engine of three slots:
 *  1. the reference: Q's greedy tokens from an engine without prefix
 *     sharing (nothing cached);
 *  2. with the adoption's row read held (test builds:
 *     COLI_FAULT_KV_RESUME_WAIT, until a file exists) a stateless request
 *     in the other slot decodes 20 tokens, which it can only do if the
 *     read is off the engine thread, and Q has no event meanwhile; once
 *     released Q reuses all of P (cached), with the reference's tokens;
 *  3. the read failing (test builds: COLI_FAULT_KV_RESUME_EIO) and s.kv
 *     removed behind the index: each warns, prefills instead (nothing
 *     cached) with the reference's tokens.
 * The index reads the directory once (test builds: COLI_FAULT_KV_NO_REFRESH,
 * no refresher), so it still lists s after the removal.
 * Usage: core_prefix_adopt MODEL_DIR WORK_DIR */
#include "config.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "coli_log.h"
#include "engine.h"
#include "engine_test.h"
#include "test_util.h"

#define NP 40
#define NTOK 12

typedef test_turn turn;


static coli_engine *open_engine(const char *model, const char *cache, int share)
{
	coli_engine_opts o;
	coli_engine_opts_default(&o);
	o.model_dir = model;
	o.cache_dir = cache;
	/* three: the prefix request, the one beside it, and a free slot */
	o.parallel = 3;
	o.ctx = 512;
	o.threads = 1;
	o.share_session_prefixes = share;
	coli_err err = { 0 };
	coli_engine *e = NULL;
	if (coli_engine_new(&o, &e, &err))
		fprintf(stderr, "engine: %s\n", err.msg);
	return e;
}


/* Q's turn matches the reference: done, `cached` tokens reused, the same
 * tokens. */
static void same(const turn *q, const turn *ref, int cached, const char *what)
{
	CHECK(q->last.kind == COLI_EV_DONE && !q->last.message[0], "%s: kind %d: %s", what, q->last.kind,
	      q->last.message);
	CHECK(q->last.cached_tokens == cached, "%s: %d tokens cached, want %d", what, q->last.cached_tokens,
	      cached);
	CHECK(q->n == NTOK && ref->n == NTOK && !memcmp(q->tok, ref->tok, sizeof(int) * NTOK),
	      "%s: %d tokens, not the %d of the run without prefix reuse", what, q->n, ref->n);
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: %s MODEL_DIR WORK_DIR\n", argv[0]);
		return 2;
	}
	const char *model = argv[1];
	char c0[4096], c1[4096], path[4200];
	snprintf(c0, sizeof c0, "%.4000s/c0", argv[2]);
	snprintf(c1, sizeof c1, "%.4000s/c1", argv[2]);
	test_log_capture("prefix");
	int P[NP], Q[NP + 1], pb[4] = { 21, 22, 23, 24 };
	for (int i = 0; i < NP; i++)
		P[i] = Q[i] = 2 + (i * 7) % 100;
	Q[NP] = 7;
	static turn ref, s1, q, other;

	/* 1. the reference, with no prefix sharing */
	coli_engine *e = open_engine(model, c0, 0);
	REQUIRE(e, "engine without prefix sharing");
	test_turn_go(e, NULL, Q, NP + 1, NTOK, &ref, 0);
	coli_engine_free(e);
	CHECK(ref.last.kind == COLI_EV_DONE && ref.n == NTOK && ref.last.cached_tokens == 0,
	      "reference: %d tokens, %d cached: %s", ref.n, ref.last.cached_tokens, ref.last.message);

	/* session s holds P */
	e = open_engine(model, c1, 1);
	REQUIRE(e, "engine with prefix sharing");
	test_turn_go(e, "s", P, NP, 2, &s1, 0);
	coli_engine_free(e);
	REQUIRE(s1.last.kind == COLI_EV_DONE && !s1.last.message[0], "session s: %s", s1.last.message);

#ifdef COLI_FAULT_INJECTION
	setenv("COLI_FAULT_KV_NO_REFRESH", "1", 1);
	char hold[4200];
	snprintf(hold, sizeof hold, "%s/release", argv[2]);
	setenv("COLI_FAULT_KV_RESUME_WAIT", hold, 1);
#endif
	/* 2. Q reuses P from s's file while the other slot decodes */
	e = open_engine(model, c1, 1);
	REQUIRE(e, "a fresh engine");
	test_log_reset();
	test_turn_go(e, NULL, pb, 4, 200, &other, 1);
	test_turn_go(e, NULL, Q, NP + 1, NTOK, &q, -1);
	CHECK(test_turn_drain(&other, 21) == 0 && other.n == 21, "the other slot stopped at %d tokens", other.n);
#ifdef COLI_FAULT_INJECTION
	test_turn_release(&q, hold);
#endif
	CHECK(test_turn_drain(&q, 0) == 0, "Q never ended");
	CHECK(test_turn_drain(&other, 0) == 0, "the other request never ended");
	coli_engine_free(e);
	same(&q, &ref, NP, "prefix reused from s");
	CHECK(test_logged("prompt prefix of 40 tokens reused from session s"), "no reuse line:\n%s", test_log_buf);
	CHECK(other.last.kind == COLI_EV_DONE && other.n == 200, "the other request: %d tokens: %s", other.n,
	      other.last.message);

#ifdef COLI_FAULT_INJECTION
	unsetenv("COLI_FAULT_KV_RESUME_WAIT");
	/* 3a. the row read fails */
	setenv("COLI_FAULT_KV_RESUME_EIO", "1", 1);
	e = open_engine(model, c1, 1);
	REQUIRE(e, "a fresh engine");
	test_log_reset();
	test_turn_go(e, NULL, Q, NP + 1, NTOK, &q, 0);
	CHECK(test_logged("prefix reuse from session s skipped") && test_logged("Input/output error"),
	      "no fallback warning:\n%s", test_log_buf);
	coli_engine_free(e);
	unsetenv("COLI_FAULT_KV_RESUME_EIO");
	same(&q, &ref, 0, "failed row read");

	/* 3b. s.kv removed behind the index */
	e = open_engine(model, c1, 1);
	REQUIRE(e, "a fresh engine");
	snprintf(path, sizeof path, "%s/kv/s.kv", c1);
	REQUIRE(unlink(path) == 0, "%s", path);
	test_log_reset();
	test_turn_go(e, NULL, Q, NP + 1, NTOK, &q, 0);
	CHECK(test_logged("prefix reuse from session s skipped"), "no fallback warning:\n%s", test_log_buf);
	coli_engine_free(e);
	same(&q, &ref, 0, "removed session");
	unsetenv("COLI_FAULT_KV_NO_REFRESH");
#else
	const char *ci = getenv("CI");
	CHECK(!(ci && !strcmp(ci, "true")), "core_prefix_adopt: built without --enable-fault-injection (CI=true: failing)");
	(void)path;
#endif
	coli_log_set_sink(NULL, NULL);
	if (!test_failures)
		printf("a saved prompt prefix read off the engine thread: the tokens of a prefill\n");
	return test_summary(__FILE__);
}
