/* The --draft auto rule (engine_draft_auto.c) on made-up figures: drafts
 * when rows are cheap and drafts are accepted, not when the extra rows'
 * experts must come from disk, not when nothing is accepted (but probes
 * now and then while the loss is small), and keeps its choice between
 * 1.0 and 1.05. */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "engine_draft_auto.h"
#include "test_util.h"

/* plain steps of 10 ms (1 row), verify steps of 11 ms (2 rows), MTP 0.5 ms
 * a draft, `acc` of 40 depth-1 drafts accepted */
static void feed(draft_auto *a, int acc)
{
	draft_auto_init(a);
	for (int i = 0; i < 20; i++) {
		draft_auto_note_step(a, 1, 1, 0.010);
		draft_auto_note_step(a, 2, 1, 0.011);
		draft_auto_note_mtp(a, 0.0005);
	}
	for (int i = 0; i < 40; i++)
		draft_auto_note_accept(a, 1, i < acc);
}

int main(void)
{
	draft_auto a;
	draft_auto_io ram = { 0 };

	/* union of experts: 1 row reads top_k, many rows approach all */
	CHECK(fabs(draft_auto_union(64, 8, 1) - 8.0) < 1e-9, "union(1) = %g", draft_auto_union(64, 8, 1));
	CHECK(draft_auto_union(64, 8, 1000) > 63.9, "union(1000) = %g", draft_auto_union(64, 8, 1000));

	/* in RAM, 70% accepted: on, and the predicted gain is E(1) T(0)/T(1) */
	feed(&a, 28);
	draft_auto_decide(&a, &ram, 1, 1, 3);
	double acc = draft_auto_acceptance(&a, 1), want = (1 + acc) * 0.010 / (0.011 + 0.0005);
	CHECK(a.on && a.n == 1, "in RAM at 70%% acceptance: on=%d n=%d (%s)", a.on, a.n, a.reason);
	CHECK(fabs(a.gain - want) < 1e-6, "gain %g, expected %g", a.gain, want);
	CHECK(!strncmp(a.reason, "on: 1 draft predict", 19), "reason '%s'", a.reason);

	/* from disk at 25% acceptance: the second row's 7 extra experts per
	 * layer at a hit rate of 1/3, 20 MB each at 2 GB/s, cost far more than
	 * the quarter token they bring */
	draft_auto_io disk = { 1, 2, 64, 8, 1.0 / 3.0, 20e6, 2e9 };
	feed(&a, 10);
	draft_auto_decide(&a, &disk, 1, 3, 3);
	CHECK(!a.on && a.n == 0, "cold from disk: on=%d n=%d (%s)", a.on, a.n, a.reason);
	for (int i = 0; i < 200; i++) {
		draft_auto_decide(&a, &disk, 1, 3, 3);
		CHECK(!a.probe, "probed at step %d with a clear loss (%s)", i, a.reason);
	}
	/* every expert cached (and 70% accepted): the reads vanish and
	 * drafting pays again */
	disk.hit_rate = 1.0;
	for (int i = 0; i < 40; i++)
		draft_auto_note_accept(&a, 1, i % 10 < 7);
	draft_auto_decide(&a, &disk, 1, 3, 3);
	CHECK(a.on, "cache warm: still off (%s)", a.reason);

	/* nothing accepted: off, with a probe step once in 64 */
	feed(&a, 0);
	draft_auto_decide(&a, &ram, 1, 1, 3);
	CHECK(!a.on, "0%% acceptance: on (%s)", a.reason);
	int probes = 0;
	for (int i = 0; i < 128; i++) {
		draft_auto_decide(&a, &ram, 1, 1, 3);
		probes += a.probe;
		CHECK(!a.probe || a.n == 1, "a probe drafts one token, n=%d", a.n);
	}
	CHECK(probes == 2, "%d probes in 128 steps (want 2)", probes);

	/* hysteresis: a gain of ~1.03 keeps drafting on, does not turn it on */
	draft_auto_init(&a);
	for (int i = 0; i < 20; i++) {
		draft_auto_note_step(&a, 1, 1, 0.010);
		draft_auto_note_step(&a, 2, 1, 0.0155);
		draft_auto_note_mtp(&a, 0.0);
	}
	for (int i = 0; i < 400; i++)
		draft_auto_note_accept(&a, 1, i % 5 < 3);
	a.on = 1;
	draft_auto_decide(&a, &ram, 1, 1, 3);
	CHECK(a.gain > 1.0 && a.gain < 1.05, "gain %g outside the band", a.gain);
	CHECK(a.on, "on at gain %g turned off", a.gain);
	a.on = 0;
	draft_auto_decide(&a, &ram, 1, 1, 3);
	CHECK(!a.on, "off at gain %g turned on", a.gain);

	if (!test_failures)
		printf("draft auto: the rule decides as specified\n");
	return test_summary(__FILE__);
}
