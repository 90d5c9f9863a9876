/* Sessions saved by the session writer thread: two slots, each continuing
 * its own session over two turns with 64 KV rows in RAM (so each spills
 * to its file, the writer saving its rows first while the other slot
 * decodes). Checks: the tokens equal a run holding everything in RAM,
 * one session at a time; when a turn's DONE arrives its file already
 * holds the whole history (the writer ends the request after the fsync,
 * so no check waits on time).
 * Usage: core_session_writer MODEL_DIR CACHE_DIR */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"
#include "kv_file.h"
#include "engine_test.h"
#include "test_util.h"

typedef test_turn turn;

/* Tokens the session file holds now (-1 when it cannot be read). */
static int file_tokens(const char *cache, const char *name)
{
	char dir[4200];
	snprintf(dir, sizeof dir, "%s/kv", cache);
	kv_session *s = NULL;
	kv_loaded l;
	coli_err err = { 0 };
	if (kv_session_open(dir, name, NULL, 0, 0, KV_OPEN_READONLY | KV_OPEN_NO_ROWS, &s, &l, &err))
		return -1;
	int n = l.n_tokens;
	kv_loaded_free(&l);
	kv_session_close(s);
	return n;
}

/* Two turns of sessions "a" and "b": together (both submitted before
 * either is read) or one after the other. out[s][k]: session s, turn k. */
static void run(coli_engine *e, const char *cache, int together, turn out[2][2])
{
	static const char *names[2] = { "a", "b" };
	int p1[2][100], p2[2][3] = { { 7, 8, 9 }, { 11, 12, 13 } };
	for (int s = 0; s < 2; s++)
		for (int i = 0; i < 100; i++)
			p1[s][i] = 2 + i + 5 * s;
	coli_gen_params p;
	coli_gen_params_default(&p);
	p.ignore_eos = 1;
	p.every_token = 1;
	coli_err err = { 0 };
	for (int k = 0; k < 2; k++) {
		for (int s = 0; s < 2; s++) {
			turn *t = &out[s][k];
			memset(t, 0, sizeof *t);
			t->session = names[s];
			p.session = names[s];
			p.max_tokens = k == 0 ? 40 : 30;
			CHECK(coli_engine_submit(e, k == 0 ? p1[s] : p2[s], k == 0 ? 100 : 3, &p, &t->r, &err) == 0,
			      "submit %s turn %d: %s", names[s], k + 1, err.msg);
			if (!together && t->r)
				CHECK(test_turn_drain(t, 0) == 0, "%s turn %d never ended", names[s], k + 1);
		}
		for (int s = 0; s < 2; s++) {
			turn *t = &out[s][k];
			if (together && t->r)
				CHECK(test_turn_drain(t, 0) == 0, "%s turn %d never ended", names[s], k + 1);
			CHECK(t->last.kind == COLI_EV_DONE && !t->last.message[0], "%s turn %d: kind %d: %s", names[s],
			      k + 1, t->last.kind, t->last.message);
			/* DONE came after the writer's fsync: the file holds it all */
			const int want = k == 0 ? 140 : 173;
			const int have = file_tokens(cache, names[s]);
			CHECK(have == want, "session %s after turn %d: the file holds %d tokens, not %d", names[s],
			      k + 1, have, want);
		}
	}
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: %s MODEL_DIR CACHE_DIR\n", argv[0]);
		return 2;
	}
	char c1[4200], c2[4200];
	snprintf(c1, sizeof c1, "%s/together", argv[2]);
	snprintf(c2, sizeof c2, "%s/alone", argv[2]);
	static turn together[2][2], alone[2][2];
	coli_engine *e = test_engine_open(argv[1], c1, 2, 512, 64);
	CHECK(e != NULL, "engine with two slots of 64 RAM rows");
	if (e) {
		run(e, c1, 1, together);
		coli_engine_free(e);
	}
	e = test_engine_open(argv[1], c2, 1, 512, 0);
	CHECK(e != NULL, "engine with everything in RAM");
	if (e) {
		run(e, c2, 0, alone);
		coli_engine_free(e);
	}
	for (int s = 0; s < 2; s++)
		for (int k = 0; k < 2; k++) {
			const turn *a = &together[s][k], *b = &alone[s][k];
			CHECK(a->n == b->n && !memcmp(a->tok, b->tok, sizeof(int) * (size_t)a->n),
			      "session %s turn %d: %d tokens through 64 RAM rows beside another slot differ from "
			      "the %d all in RAM", a->session, k + 1, a->n, b->n);
		}
	if (!test_failures)
		printf("two sessions spilling side by side: tokens as all in RAM, each turn on disk at DONE\n");
	return test_summary(__FILE__);
}
