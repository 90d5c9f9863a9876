/* Prompt caching from saved sessions (--share-session-prefixes) with the
 * engine's kept index (kv_prefix_index.h):
 *  1. a session written by another process (`coli generate --session`)
 *     becomes usable for prefix reuse while the engine runs, with the
 *     tokens of a run that reused nothing;
 *  2. the engine's own save is found by the next request with no refresh
 *     (test builds: COLI_FAULT_KV_NO_REFRESH, no refresher thread);
 *  3. a session removed, or replaced by another text, behind the engine's
 *     back (the index still lists it) falls back to prefill with the same
 *     tokens, and the entry is dropped.
 * Between stateless requests a request bound to session "t" takes the one
 * slot, so a reuse can only come from the index, never from the slot.
 * Usage: core_prefix_index MODEL_DIR WORK_DIR COLI */
#include "config.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "coli_log.h"
#include "engine.h"
#include "engine_test.h"
#include "test_util.h"

#define NTOK 6

static const char *model, *work, *coli;

/* One greedy request to its end: its tokens and cached count. */
static int run(coli_engine *e, const int *prompt, int n, const char *session, int *toks, int *cached)
{
	coli_gen_params p;
	coli_gen_params_default(&p);
	p.max_tokens = NTOK;
	p.ignore_eos = 1;
	p.session = session;
	coli_request *r = NULL;
	coli_err err = { 0 };
	coli_event ev;
	int k = 0, rc = -1;
	if (coli_engine_submit(e, prompt, n, &p, &r, &err)) {
		fprintf(stderr, "submit: %s\n", err.msg);
		return -1;
	}
	for (;;) {
		if (!coli_request_next(r, &ev, 300 * 1000))
			break;
		if (ev.kind == COLI_EV_TEXT) {
			if (toks && k < NTOK)
				toks[k] = ev.token;
			k++;
			continue;
		}
		if (ev.kind == COLI_EV_DONE && !ev.message[0]) {
			if (cached)
				*cached = ev.cached_tokens;
			rc = k == NTOK ? 0 : -1;
		} else {
			fprintf(stderr, "request: %s\n", ev.message);
		}
		break;
	}
	coli_request_free(r);
	return rc;
}

static coli_engine *engine(const char *cache)
{
	coli_engine_opts o;
	coli_engine_opts_default(&o);
	o.model_dir = model;
	o.cache_dir = cache;
	o.parallel = 1;
	o.ctx = 512;
	o.threads = 1;
	o.share_session_prefixes = 1;
	coli_err err = { 0 };
	coli_engine *e = NULL;
	if (coli_engine_new(&o, &e, &err))
		fprintf(stderr, "engine: %s\n", err.msg);
	return e;
}

/* Another process saves session NAME with prompt 1,5,9,...,29 (or the
 * tokens given) in CACHE. */
static int other_process(const char *cache, const char *name, const char *tokens)
{
	char cmd[8192];
	snprintf(cmd, sizeof cmd,
		 "'%s' generate '%s' --cache-dir '%s' --session %s --tokens %s -n 2 --ids --ignore-eos "
		 "--no-heat >/dev/null 2>&1",
		 coli, model, cache, name, tokens);
	return system(cmd) == 0 ? 0 : -1;
}

static const int P[] = { 1, 5, 9, 13, 17, 21, 25, 29 };
#define NP 8
static const char *P_TEXT = "1,5,9,13,17,21,25,29";
static const int R[] = { 3 };

/* The stateless probe: P and one token more. */
static int probe(coli_engine *e, int *toks, int *cached)
{
	int q[NP + 1];
	memcpy(q, P, sizeof P);
	q[NP] = 7;
	/* move the slot to session t first: only the index can offer P */
	if (run(e, R, 1, "t", NULL, NULL))
		return -1;
	return run(e, q, NP + 1, NULL, toks, cached);
}

int main(int argc, char **argv)
{
	if (argc != 4) {
		fprintf(stderr, "usage: %s MODEL_DIR WORK_DIR COLI\n", argv[0]);
		return 2;
	}
	model = argv[1];
	work = argv[2];
	coli = argv[3];
	test_log_capture("prefix");
	char c1[4096], c2[4096], path[4200];
	snprintf(c1, sizeof c1, "%.4000s/c1", work);
	snprintf(c2, sizeof c2, "%.4000s/c2", work);
	int base[NTOK], toks[NTOK], cached = -1;

	/* 1. another process's session, picked up by the refresher */
	coli_engine *e = engine(c1);
	REQUIRE(e);
	REQUIRE(probe(e, base, &cached) == 0);
	CHECK(cached == 0, "nothing saved yet, yet %d cached", cached);
	test_log_reset();
	REQUIRE(other_process(c1, "o", P_TEXT) == 0, "coli generate --session o");
	/* the refresher's line for o once it holds the prompt (8) and the
	 * answer (2) */
	int seen = 0;
	for (int i = 0; i < 6000 && !(seen = test_logged("prefix index: o: 10 tokens")); i++)
		nanosleep(&(struct timespec){ 0, 5000000 }, NULL);
	CHECK(seen, "the refresher never read session o (30 s):\n%s", test_log_buf);
	REQUIRE(probe(e, toks, &cached) == 0);
	CHECK(cached == NP, "another process's session: %d cached, want %d", cached, NP);
	CHECK(!memcmp(toks, base, sizeof base), "reused tokens differ from prefilled ones");
	coli_engine_free(e);

#ifdef COLI_FAULT_INJECTION
	/* 2. the engine's own save, with no refresher at all */
	setenv("COLI_FAULT_KV_NO_REFRESH", "1", 1);
	e = engine(c2);
	REQUIRE(e);
	REQUIRE(run(e, P, NP, "s", NULL, NULL) == 0);
	REQUIRE(probe(e, toks, &cached) == 0);
	CHECK(cached == NP, "own save: %d cached, want %d", cached, NP);
	CHECK(!memcmp(toks, base, sizeof base), "own save: tokens differ");

	/* 3a. removed behind the engine's back */
	snprintf(path, sizeof path, "%s/kv/s.kv", c2);
	REQUIRE(unlink(path) == 0, "%s", path);
	test_log_reset();
	REQUIRE(probe(e, toks, &cached) == 0);
	CHECK(cached == 0, "removed session: %d cached", cached);
	CHECK(!memcmp(toks, base, sizeof base), "removed session: tokens differ");
	CHECK(test_logged("prefix reuse from session s skipped"), "no fallback warning:\n%s", test_log_buf);
	/* dropped: the next lookup does not try it again */
	test_log_reset();
	REQUIRE(probe(e, toks, &cached) == 0);
	CHECK(!test_logged("session s skipped"), "the stale entry was not dropped:\n%s", test_log_buf);

	/* 3b. replaced by another text behind the engine's back */
	REQUIRE(run(e, P, NP, "u", NULL, NULL) == 0);
	snprintf(path, sizeof path, "%s/kv/u.kv", c2);
	REQUIRE(unlink(path) == 0, "%s", path);
	snprintf(path, sizeof path, "%s/kv/u.lock", c2);
	unlink(path);
	REQUIRE(other_process(c2, "u", "1,5,9,2,4") == 0, "coli generate --session u");
	test_log_reset();
	REQUIRE(probe(e, toks, &cached) == 0);
	CHECK(cached == 0, "replaced session: %d cached", cached);
	CHECK(!memcmp(toks, base, sizeof base), "replaced session: tokens differ");
	CHECK(test_logged("prefix reuse from session u skipped"), "no fallback warning:\n%s", test_log_buf);
	coli_engine_free(e);
	unsetenv("COLI_FAULT_KV_NO_REFRESH");
#else
	const char *ci = getenv("CI");
	CHECK(!(ci && !strcmp(ci, "true")),
	      "core_prefix_index: built without --enable-fault-injection (CI=true: failing)");
	(void)path;
	(void)c2;
#endif
	coli_log_set_sink(NULL, NULL);
	return test_summary("core_prefix_index");
}
