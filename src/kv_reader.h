/* kv_reader.h - an io_uring ring for reading a session's rows back
 * (kv_session_read_runs): the reads of one call are queued together,
 * submitted in one io_uring_submit per ring's worth and waited for, so a
 * layer's spilled rows cost one system call round, not one pread per run.
 *
 * Threads: a reader is owned by one thread (the engine thread, which
 * reads spilled rows back during its forward); it allocates only in
 * kv_reader_new. */
#ifndef COLI_KV_READER_H
#define COLI_KV_READER_H

#include <stddef.h>
#include <stdint.h>

#include "coli_err.h"

typedef struct kv_reader kv_reader;

/* A ring of `depth` entries (reads in flight at once). */
int kv_reader_new(unsigned depth, kv_reader **out, coli_err *err);
/* NULL is a no-op. */
void kv_reader_free(kv_reader *r);

/* Queue a read of len bytes at off of fd into buf; when the ring is full
 * the queued reads are submitted and waited for first. Returns 0 or the
 * first error of a batch that had to be waited for. */
int kv_reader_add(kv_reader *r, int fd, void *buf, size_t len, uint64_t off);
/* Submit what is queued and wait for every read: 0 when each read all
 * of its bytes, else the first error (-EIO for a file that ended early).
 * Every queued read is finished (or failed) on return. */
int kv_reader_wait(kv_reader *r);
/* Reads submitted and system-call rounds (submit-and-wait) since new. */
uint64_t kv_reader_reads(const kv_reader *r);
uint64_t kv_reader_rounds(const kv_reader *r);

#endif
