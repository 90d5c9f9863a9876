/* util_seqlock.h - one writer publishes a record that any thread reads
 * without a lock and never sees half-written.
 *
 * The counter is odd while a write is in progress. A reader copies the
 * record between two reads of the counter and retries when they differ or
 * the first was odd. Every field of the record is an atomic (C11 makes a
 * plain field written by one thread while another reads it a data race,
 * whatever the retry does with the torn copy, and ThreadSanitizer reports
 * it), stored inside a write with coli_seqlock_store (release) and loaded
 * inside a read with coli_seqlock_load (acquire). That ordering replaces
 * the fences of the textbook version (Boehm, "Can seqlocks get along with
 * programming language memory models?", 2012): a reader that sees any
 * field of a new write synchronizes with its store, which follows the odd
 * count, so the reader's second counter load sees the write and it
 * retries; the writer's closing release store orders the fields before the
 * even count. On x86-64 release stores and acquire loads are plain moves,
 * and GCC's ThreadSanitizer does not model atomic_thread_fence (it refuses
 * to compile one) but does model these. Byte payloads (text) go through
 * coli_seqlock_put_bytes/get_bytes, as atomic 64-bit words.
 *
 * One writer at a time (the caller serializes writers). A writer never
 * blocks between begin and end, so a reader's retry loop is short.
 *
 *   writer:  s = coli_seqlock_write_begin(&l); coli_seqlock_store(&f, v)...;
 *            coli_seqlock_write_end(&l, s);
 *   reader:  do { s = coli_seqlock_read_begin(&l); v = coli_seqlock_load(&f)...; }
 *            while (coli_seqlock_read_retry(&l, s)); */
#ifndef COLI_UTIL_SEQLOCK_H
#define COLI_UTIL_SEQLOCK_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

typedef struct coli_seqlock {
	_Atomic uint32_t seq;
} coli_seqlock;

static inline uint32_t coli_seqlock_write_begin(coli_seqlock *l)
{
	uint32_t s = atomic_load_explicit(&l->seq, memory_order_relaxed);
	/* relaxed: the fields' release stores that follow carry it */
	atomic_store_explicit(&l->seq, s + 1, memory_order_relaxed);
	return s;
}

static inline void coli_seqlock_write_end(coli_seqlock *l, uint32_t s)
{
	/* release: the field stores are visible before the even count */
	atomic_store_explicit(&l->seq, s + 2, memory_order_release);
}

static inline uint32_t coli_seqlock_read_begin(const coli_seqlock *l)
{
	coli_seqlock *m = (coli_seqlock *)l; /* C11 atomic loads take non-const */
	uint32_t s;
	while ((s = atomic_load_explicit(&m->seq, memory_order_acquire)) & 1)
		;
	return s;
}

/* true when the copy made since read_begin may be torn: copy again */
static inline bool coli_seqlock_read_retry(const coli_seqlock *l, uint32_t s)
{
	coli_seqlock *m = (coli_seqlock *)l;
	/* the fields' acquire loads keep this load after them */
	return atomic_load_explicit(&m->seq, memory_order_relaxed) != s;
}

/* A field's store inside a write and its load inside a read. */
#define coli_seqlock_store(p, v) atomic_store_explicit((p), (v), memory_order_release)
#define coli_seqlock_load(p) atomic_load_explicit((p), memory_order_acquire)

/* Words needed for N payload bytes. */
#define COLI_SEQLOCK_WORDS(n) (((n) + 7) / 8)

/* Store N bytes into WORDS (COLI_SEQLOCK_WORDS(n) of them), inside a write. */
static inline void coli_seqlock_put_bytes(_Atomic uint64_t *words, const void *src, size_t n)
{
	const unsigned char *p = src;
	for (size_t i = 0; i < COLI_SEQLOCK_WORDS(n); i++) {
		uint64_t w = 0;
		memcpy(&w, p + i * 8, n - i * 8 < 8 ? n - i * 8 : 8);
		coli_seqlock_store(&words[i], w);
	}
}

/* Load N bytes from WORDS into DST, inside a read. */
static inline void coli_seqlock_get_bytes(void *dst, const _Atomic uint64_t *words, size_t n)
{
	unsigned char *p = dst;
	_Atomic uint64_t *w = (_Atomic uint64_t *)words;
	for (size_t i = 0; i < COLI_SEQLOCK_WORDS(n); i++) {
		uint64_t v = coli_seqlock_load(&w[i]);
		memcpy(p + i * 8, &v, n - i * 8 < 8 ? n - i * 8 : 8);
	}
}

#endif
