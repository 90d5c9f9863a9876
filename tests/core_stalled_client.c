/* A reader that stops taking its events never stalls the engine, whoever
 * it is (engine_request.h's reader rule). With two slots, request A (not
 * read while B runs) and request B (read to the end) are decoded
 * together; B completes with every token it asked for and the same text
 * it gets alone. Then what the pause means for A:
 *  - A a network reader (cancel_when_stalled): it ends cancelled once its
 *    buffer is full;
 *  - A an in-process reader (colitop's chat, coli generate/chat/batch:
 *    cancel_when_stalled 0): it was only paused; read afterwards it
 *    completes with every token and the text it gets alone.
 * Without the rule (the engine waiting for A's reader) B never ends and
 * the test fails at its drain. The model must give tokens with text and a
 * context of 2048.
 * Usage: core_stalled_client MODEL_DIR CACHE_DIR */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"
#include "engine_test.h"
#include "test_util.h"

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: %s MODEL_DIR CACHE_DIR\n", argv[0]);
		return 2;
	}
	coli_err err = { 0 };
	coli_engine *e = test_engine_open(argv[1], argv[2], 2, 2048, 0);
	if (!e)
		return 1;
	static char alone[1 << 16], together[1 << 16], ignored[1 << 16];
	const int pa[] = { 1, 17, 33, 49 }, pb[] = { 1, 5, 9 };
	coli_gen_params p;
	coli_gen_params_default(&p);
	p.ignore_eos = 1;
	p.cancel_when_stalled = 1;
	coli_event last;
	coli_request *a = NULL, *b = NULL;

	/* B alone: the reference text */
	p.max_tokens = 900;
	CHECK(coli_engine_submit(e, pb, 3, &p, &b, &err) == 0, "submit B alone: %s", err.msg);
	CHECK(b && test_drain_text(b, alone, sizeof alone, &last) == 0, "B alone never ended");
	CHECK(last.kind == COLI_EV_DONE && last.completion_tokens == 900, "B alone: %d tokens", last.completion_tokens);
	coli_request_free(b);

	/* A is never read while B runs beside it */
	p.max_tokens = 1800;
	CHECK(coli_engine_submit(e, pa, 4, &p, &a, &err) == 0, "submit A: %s", err.msg);
	p.max_tokens = 900;
	CHECK(coli_engine_submit(e, pb, 3, &p, &b, &err) == 0, "submit B: %s", err.msg);
	CHECK(b && test_drain_text(b, together, sizeof together, &last) == 0, "B never ended beside a stalled A");
	CHECK(last.kind == COLI_EV_DONE && last.finish == COLI_FINISH_LENGTH && last.completion_tokens == 900,
	      "B beside A: kind %d finish %d, %d tokens", last.kind, last.finish, last.completion_tokens);
	CHECK(!strcmp(alone, together), "B's text beside A differs from B alone");
	/* A was cancelled when its buffer filled, well before its 1800 tokens */
	CHECK(a && test_drain_text(a, ignored, sizeof ignored, &last) == 0, "A never ended");
	CHECK(last.kind == COLI_EV_DONE && last.finish == COLI_FINISH_CANCELLED && last.completion_tokens < 1800,
	      "stalled A: kind %d finish %d, %d tokens", last.kind, last.finish, last.completion_tokens);
	coli_request_free(a);
	coli_request_free(b);

	/* an in-process reader that stops: paused, never cancelled */
	static char a_alone[1 << 16], a_late[1 << 16];
	p.cancel_when_stalled = 0;
	p.max_tokens = 600;
	CHECK(coli_engine_submit(e, pa, 4, &p, &a, &err) == 0, "submit A alone: %s", err.msg);
	CHECK(a && test_drain_text(a, a_alone, sizeof a_alone, &last) == 0, "A alone never ended");
	CHECK(last.kind == COLI_EV_DONE && last.completion_tokens == 600, "A alone: %d tokens", last.completion_tokens);
	coli_request_free(a);
	CHECK(coli_engine_submit(e, pa, 4, &p, &a, &err) == 0, "submit in-process A: %s", err.msg);
	p.max_tokens = 900;
	CHECK(coli_engine_submit(e, pb, 3, &p, &b, &err) == 0, "submit B: %s", err.msg);
	CHECK(b && test_drain_text(b, together, sizeof together, &last) == 0, "B never ended beside a paused A");
	CHECK(last.kind == COLI_EV_DONE && last.finish == COLI_FINISH_LENGTH && last.completion_tokens == 900,
	      "B beside a paused A: kind %d finish %d, %d tokens", last.kind, last.finish, last.completion_tokens);
	CHECK(!strcmp(alone, together), "B's text beside a paused A differs from B alone");
	CHECK(a && test_drain_text(a, a_late, sizeof a_late, &last) == 0, "the paused A never ended once read");
	CHECK(last.kind == COLI_EV_DONE && last.finish == COLI_FINISH_LENGTH && last.completion_tokens == 600,
	      "paused A: kind %d finish %d, %d tokens", last.kind, last.finish, last.completion_tokens);
	CHECK(!strcmp(a_alone, a_late), "the paused A's text differs from A alone");
	coli_request_free(a);
	coli_request_free(b);
	coli_engine_free(e);
	if (!test_failures)
		printf("a stalled network reader is cancelled, an in-process one paused; the other slot "
		       "completed with the same text\n");
	return test_summary(__FILE__);
}
