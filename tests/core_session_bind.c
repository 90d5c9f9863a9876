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
#include "engine_test.h"
#include "test_util.h"


typedef test_turn turn;




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
	coli_engine *e = test_engine_open(argv[1], argv[2], 2, 512, 0);
	CHECK(e != NULL, "engine with two slots");
	if (!e)
		return test_summary(__FILE__);
	test_turn_go(e, "a", p1, 300, 20, &a1, 0);
	test_turn_go(e, "b", p1, 300, 20, &b1, 0);
	test_turn_go(e, "b", p2, 3, 30, &b2, 0);
	CHECK(a1.n == 20 && b1.n == 20 && !memcmp(a1.tok, b1.tok, sizeof a1.tok), "twin first turns differ");
	coli_engine_free(e);

	e = test_engine_open(argv[1], argv[2], 2, 512, 0);
	CHECK(e != NULL, "a fresh engine");
	if (!e)
		return test_summary(__FILE__);
#ifdef COLI_FAULT_INJECTION
	setenv("COLI_FAULT_KV_RESUME_EIO", "1", 1);
	test_turn_go(e, "a", p2, 3, 30, &bad, 0);
	unsetenv("COLI_FAULT_KV_RESUME_EIO");
	CHECK(bad.last.kind == COLI_EV_ERROR && strstr(bad.last.message, "session a") &&
	      strstr(bad.last.message, "Input/output error"), "a failed resume: kind %d: %s", bad.last.kind,
	      bad.last.message);
	char hold[4200];
	snprintf(hold, sizeof hold, "%s/release", argv[2]);
	setenv("COLI_FAULT_KV_RESUME_WAIT", hold, 1);
#endif
	/* the other slot decodes; then a resumes beside it */
	test_turn_go(e, NULL, pb, 4, 200, &other, 1);
	test_turn_go(e, "a", p2, 3, 30, &a2, -1);
	CHECK(test_turn_drain(&other, 21) == 0 && other.n == 21, "the other slot stopped at %d tokens", other.n);
#ifdef COLI_FAULT_INJECTION
	/* a's rows are still held: it has no event yet */
	test_turn_release(&a2, hold);
#endif
	CHECK(test_turn_drain(&a2, 0) == 0, "a's second turn never ended");
	CHECK(test_turn_drain(&other, 0) == 0, "the other request never ended");
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
