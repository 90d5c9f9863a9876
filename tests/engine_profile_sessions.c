/* engine_profile_sessions.c - issue 29's proof "memory stays bounded with
 * 1,000 sessions' profiles": one engine answers N requests (default
 * 1000), each in a session of its own, so the profile writer sums N
 * distinct session files beside _all. Checks:
 *  - the writer's own byte counter (coli_engine_profile_stats) is the
 *    same after 10 sessions and after N, and within its stated bound:
 *    (3 x min(slots, 16) + 8) jobs of layers x experts uint32 counts, plus
 *    one u64 sum; it does not depend on N;
 *  - the heap in use (mallinfo2: glibc's allocated bytes, all threads in
 *    one arena) grows by less
 *    than 1 MiB from session 100 to session N, while N session profiles
 *    of this model weigh more than that (so a writer keeping any per
 *    session state would fail), not checked under sanitizers (their
 *    allocators keep freed memory in quarantine; COLI_TEST_SANITIZED,
 *    COLI_TEST_TSAN);
 *  - after the engine closes, every session has its .prof or was counted
 *    as dropped, and _all holds the N requests.
 * Usage: engine_profile_sessions MODEL_DIR CACHE_DIR [N] */
#include "config.h"

#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine.h"
#include "engine_profile.h"
#include "test_util.h"

static size_t heap_in_use(void)
{
	struct mallinfo2 mi = mallinfo2();
	return mi.uordblks + mi.hblkhd;
}

static int answer(coli_engine *e, int i)
{
	char name[32];
	snprintf(name, sizeof name, "s%04d", i);
	const int prompt[3] = { 5 + i % 97, 9 + i % 31, 200 + i % 13 };
	coli_gen_params p;
	coli_gen_params_default(&p);
	p.max_tokens = 1;
	p.session = name;
	coli_err err = { 0 };
	coli_request *r = NULL;
	if (coli_engine_submit(e, prompt, 3, &p, &r, &err)) {
		fprintf(stderr, "submit %s: %s\n", name, err.msg);
		return -1;
	}
	coli_event ev;
	do {
		if (!coli_request_next(r, &ev, 300 * 1000)) {
			coli_request_free(r);
			return -1;
		}
	} while (ev.kind == COLI_EV_TEXT);
	coli_request_free(r);
	return ev.kind == COLI_EV_DONE ? 0 : -1;
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: %s MODEL_DIR CACHE_DIR [N]\n", argv[0]);
		return 2;
	}
	const int N = argc > 3 ? atoi(argv[3]) : 1000;
	const char *asan = getenv("COLI_TEST_SANITIZED"), *tsan = getenv("COLI_TEST_TSAN");
	const int sanitized = (asan && *asan) || (tsan && *tsan);
	REQUIRE(N >= 100, "N must be at least 100");
	/* one arena for every thread: mallinfo2 sees the main arena only,
	 * and the profile writer allocates on its own thread */
	mallopt(M_ARENA_MAX, 1);
	coli_engine_opts o;
	coli_engine_opts_default(&o);
	o.model_dir = argv[1];
	o.cache_dir = argv[2];
	o.parallel = 1;
	o.ctx = 64;
	o.threads = 1;
	o.no_heat = 1;
	coli_err err = { 0 };
	coli_engine *e = NULL;
	REQUIRE(coli_engine_new(&o, &e, &err) == 0, "engine: %s", err.msg);
	const coli_config *c = coli_engine_config(e);
	const size_t cells = (size_t)c->num_hidden_layers * (size_t)c->n_routed_experts;
	const int slots = coli_engine_slots(e);
	const int jobs = 3 * (slots < 16 ? slots : 16) + 8;
	/* the bound stated in engine_profile_writer.c, with room for the
	 * writer's own struct and job headers (names of KV_NAME_MAX bytes) */
	const size_t bound = (size_t)jobs * (cells * 4 + 256) + cells * 8 + 16384;
	coli_profile_stats s10, sn;
	size_t heap100 = 0, heapn;
	int failed = 0;
	for (int i = 0; i < N && failed < 3; i++) {
		if (answer(e, i)) {
			FAIL("request %d did not end with DONE", i);
			failed++;
		}
		if (i == 9)
			coli_engine_profile_stats(e, &s10);
		if (i == 99)
			heap100 = heap_in_use();
	}
	coli_engine_profile_stats(e, &sn);
	heapn = heap_in_use();
	CHECK(s10.on && sn.on, "routing profiles are on");
	CHECK(s10.jobs == jobs && sn.jobs == jobs, "jobs %d, %d (want %d)", s10.jobs, sn.jobs, jobs);
	CHECK(s10.bytes == sn.bytes, "the writer holds %zu bytes after 10 sessions, %zu after %d", s10.bytes,
	      sn.bytes, N);
	CHECK(sn.bytes > 0 && sn.bytes <= bound, "the writer holds %zu bytes; bound %zu", sn.bytes, bound);
	const size_t per_session = coli_profile_size(c->num_hidden_layers, c->n_routed_experts);
	const size_t grew = heapn > heap100 ? heapn - heap100 : 0;
	printf("%d sessions: profile writer %zu bytes (bound %zu, %d jobs); heap grew %zu bytes from "
	       "session 100 to %d (%d profiles of %zu bytes = %zu); %llu files written, %llu dropped\n",
	       N, sn.bytes, bound, jobs, grew, N, N - 100, per_session, (size_t)(N - 100) * per_session,
	       sn.written, sn.dropped);
	if (!sanitized) {
		CHECK((size_t)(N - 100) * per_session > ((size_t)1 << 20),
		      "the model is too small for the heap check to see a per-session leak");
		CHECK(grew < ((size_t)1 << 20), "the heap grew %zu bytes from session 100 to %d", grew, N);
	}
	coli_engine_free(e); /* the writer writes what is pending, then stops */
	int have = 0;
	char path[4400];
	for (int i = 0; i < N; i++) {
		snprintf(path, sizeof path, "%s/kv/s%04d.prof", argv[2], i);
		have += access(path, F_OK) == 0;
	}
	CHECK((unsigned long long)(N - have) <= sn.dropped, "%d session profiles missing, %llu dropped", N - have,
	      sn.dropped);
	coli_profile all;
	snprintf(path, sizeof path, "%s/profiles/_all.prof", argv[2]);
	REQUIRE(coli_profile_read(path, &all, &err) == 0, "%s", err.msg);
	CHECK(all.requests + sn.dropped >= (uint64_t)N && all.requests <= (uint64_t)N,
	      "_all holds %llu requests of %d (%llu dropped)", (unsigned long long)all.requests, N, sn.dropped);
	coli_profile_free(&all);
	return test_summary(__FILE__);
}
