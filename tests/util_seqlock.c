/* util_seqlock.c - the seqlock (util_seqlock.h) under contention: one
 * writer publishes records whose every word and every text byte derive
 * from one version number; readers check that each copy they accept is
 * whole (all parts of one version) and that versions never go backwards.
 * Run under ThreadSanitizer it also shows the protocol has no data race. */
#include "config.h"

#include <pthread.h>
#include <stdio.h>

#include "test_util.h"
#include "util_seqlock.h"

#define NWORDS 6
#define TEXT 37 /* not a multiple of 8: the last word is partial */
#define VERSIONS 200000
#define READERS 2

static coli_seqlock lock;
static _Atomic uint64_t words[NWORDS];
static _Atomic uint64_t text[COLI_SEQLOCK_WORDS(TEXT)];
static atomic_int done;

static void make_text(char *t, uint64_t v)
{
	for (int i = 0; i < TEXT; i++)
		t[i] = (char)('a' + (v + (uint64_t)i) % 26);
}

static void *writer(void *arg)
{
	(void)arg;
	char t[TEXT];
	for (uint64_t v = 1; v <= VERSIONS; v++) {
		make_text(t, v);
		uint32_t s = coli_seqlock_write_begin(&lock);
		for (int i = 0; i < NWORDS; i++)
			coli_seqlock_store(&words[i], v * 1000 + (uint64_t)i);
		coli_seqlock_put_bytes(text, t, TEXT);
		coli_seqlock_write_end(&lock, s);
	}
	atomic_store(&done, 1);
	return NULL;
}

struct reader_result {
	long reads, torn, backwards;
	uint64_t last;
};

static void *reader(void *arg)
{
	struct reader_result *r = arg;
	for (;;) {
		int finished = atomic_load(&done);
		uint64_t w[NWORDS];
		char t[TEXT], want[TEXT];
		uint32_t s;
		do {
			s = coli_seqlock_read_begin(&lock);
			for (int i = 0; i < NWORDS; i++)
				w[i] = coli_seqlock_load(&words[i]);
			coli_seqlock_get_bytes(t, text, TEXT);
		} while (coli_seqlock_read_retry(&lock, s));
		uint64_t v = w[0] / 1000;
		int whole = 1; /* version 0: nothing written yet, all zero */
		for (int i = 0; i < NWORDS; i++)
			whole &= w[i] == (v ? v * 1000 + (uint64_t)i : 0);
		if (v)
			make_text(want, v);
		else
			memset(want, 0, sizeof want);
		whole &= !memcmp(t, want, TEXT);
		r->torn += !whole;
		r->backwards += v < r->last;
		r->last = v;
		r->reads++;
		if (finished)
			return NULL;
	}
}

int main(int argc, char **argv)
{
	(void)argc;
	/* the byte helpers alone: round trip of a partial last word */
	_Atomic uint64_t buf[COLI_SEQLOCK_WORDS(11)];
	char in[11] = "0123456789", out[11] = {0};
	coli_seqlock_put_bytes(buf, in, sizeof in);
	coli_seqlock_get_bytes(out, buf, sizeof out);
	CHECK(!memcmp(in, out, sizeof in));
	CHECK(COLI_SEQLOCK_WORDS(11) == 2 && COLI_SEQLOCK_WORDS(16) == 2 && COLI_SEQLOCK_WORDS(17) == 3);

	pthread_t wt, rt[READERS];
	struct reader_result res[READERS] = {{0}};
	for (int i = 0; i < READERS; i++)
		REQUIRE(pthread_create(&rt[i], NULL, reader, &res[i]) == 0);
	REQUIRE(pthread_create(&wt, NULL, writer, NULL) == 0);
	pthread_join(wt, NULL);
	for (int i = 0; i < READERS; i++) {
		pthread_join(rt[i], NULL);
		CHECK(res[i].torn == 0, "reader %d: %ld torn copies of %ld", i, res[i].torn, res[i].reads);
		CHECK(res[i].backwards == 0, "reader %d: went back %ld times", i, res[i].backwards);
		/* the last read starts after the writer finished: the final record */
		CHECK(res[i].last == VERSIONS, "reader %d: last version %llu", i,
		      (unsigned long long)res[i].last);
	}
	CHECK(atomic_load(&lock.seq) == 2u * VERSIONS);
	return test_summary(argv[0]);
}
