/* util_seqlock.h - one writer publishes a record that any thread reads
 * without a lock and never sees half-written.
 *
 * The counter is odd while a write is in progress. A reader copies the
 * record between two reads of the counter and retries when they differ or
 * the first was odd. Every field of the record is an atomic accessed with
 * relaxed order (C11 makes a plain field written by one thread while
 * another reads it a data race, whatever the retry does with the torn
 * copy, and ThreadSanitizer reports it): the fences here order those
 * relaxed accesses against the counter. Text and other byte payloads go
 * through coli_seqlock_put_bytes/get_bytes, which store them as relaxed
 * atomic 64-bit words.
 *
 * One writer at a time (the caller serializes writers). A writer never
 * blocks between begin and end, so a reader's retry loop is short.
 *
 *   writer:  s = coli_seqlock_write_begin(&l); ...relaxed stores...;
 *            coli_seqlock_write_end(&l, s);
 *   reader:  do { s = coli_seqlock_read_begin(&l); ...relaxed loads...; }
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
	atomic_store_explicit(&l->seq, s + 1, memory_order_relaxed);
	/* the odd count is visible before any field store that follows */
	atomic_thread_fence(memory_order_release);
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
	/* the field loads above complete before the counter is read again */
	atomic_thread_fence(memory_order_acquire);
	return atomic_load_explicit(&m->seq, memory_order_relaxed) != s;
}

/* Words needed for N payload bytes. */
#define COLI_SEQLOCK_WORDS(n) (((n) + 7) / 8)

/* Store N bytes into WORDS (COLI_SEQLOCK_WORDS(n) of them), inside a write. */
static inline void coli_seqlock_put_bytes(_Atomic uint64_t *words, const void *src, size_t n)
{
	const unsigned char *p = src;
	for (size_t i = 0; i < COLI_SEQLOCK_WORDS(n); i++) {
		uint64_t w = 0;
		memcpy(&w, p + i * 8, n - i * 8 < 8 ? n - i * 8 : 8);
		atomic_store_explicit(&words[i], w, memory_order_relaxed);
	}
}

/* Load N bytes from WORDS into DST, inside a read. */
static inline void coli_seqlock_get_bytes(void *dst, const _Atomic uint64_t *words, size_t n)
{
	unsigned char *p = dst;
	_Atomic uint64_t *w = (_Atomic uint64_t *)words;
	for (size_t i = 0; i < COLI_SEQLOCK_WORDS(n); i++) {
		uint64_t v = atomic_load_explicit(&w[i], memory_order_relaxed);
		memcpy(p + i * 8, &v, n - i * 8 < 8 ? n - i * 8 : 8);
	}
}

#endif
