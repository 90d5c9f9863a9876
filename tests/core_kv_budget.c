/* Two requests that each need a slot's whole window run together in two
 * slots: the KV budget (n_slots x kv_ram x row bytes) holds exactly two
 * full windows, and what a slot counts against it is its rows. Request A
 * takes a full window and is left unread (an in-process reader: paused
 * once its buffer is full, holding its KV); request B, a full window too,
 * must then decode to its end beside it. When a slot also counted its
 * sequence's header, the two overshot the budget by a few hundred bytes
 * and B waited for A's KV, which a paused A never gives back: B's drain
 * times out and the test fails. Then A is read to its end too.
 * Usage: core_kv_budget MODEL_DIR CACHE_DIR */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"
#include "engine_test.h"
#include "test_util.h"

#define CTX 1024

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: %s MODEL_DIR CACHE_DIR\n", argv[0]);
		return 2;
	}
	coli_engine *e = test_engine_open(argv[1], argv[2], 2, CTX, 0);
	REQUIRE(e != NULL, "engine");
	static char ta[1 << 16], tb[1 << 16];
	const int pa[] = { 1, 17, 33 }, pb[] = { 1, 5, 9 };
	coli_gen_params p;
	coli_gen_params_default(&p);
	p.ignore_eos = 1;
	p.max_tokens = CTX - 3; /* prompt + max_tokens: the whole window */
	coli_err err = { 0 };
	coli_event last;
	memset(&last, 0, sizeof last);
	coli_request *a = NULL, *b = NULL;
	CHECK(coli_engine_submit(e, pa, 3, &p, &a, &err) == 0, "submit A: %s", err.msg);
	/* A is admitted and decoding before B arrives */
	coli_event ev;
	CHECK(a && coli_request_next(a, &ev, 300 * 1000) && ev.kind == COLI_EV_TEXT, "A's first token");
	CHECK(coli_engine_submit(e, pb, 3, &p, &b, &err) == 0, "submit B: %s", err.msg);
	CHECK(b && test_drain_text(b, tb, sizeof tb, &last) == 0, "B never ended beside a paused A");
	CHECK(last.kind == COLI_EV_DONE && last.completion_tokens == CTX - 3, "B: kind %d, %d tokens", last.kind,
	      last.completion_tokens);
	CHECK(a && test_drain_text(a, ta, sizeof ta, &last) == 0, "A never ended");
	CHECK(last.kind == COLI_EV_DONE && last.completion_tokens == CTX - 3, "A: kind %d, %d tokens", last.kind,
	      last.completion_tokens);
	coli_request_free(a);
	coli_request_free(b);
	coli_engine_free(e);
	return test_summary("core_kv_budget");
}
