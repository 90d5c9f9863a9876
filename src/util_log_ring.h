/* util_log_ring.h - a log file that no logging thread ever waits for.
 *
 * A bounded ring of formatted lines and one writer thread, owned by
 * whoever owns the file (colitop for CACHE_DIR/logs/colitop.log, `coli
 * serve` for --log-file). Any thread appends: the line is stamped and
 * formatted on the caller's stack, then copied into the ring under a mutex
 * held only for that copy (never across a write, an fflush or an open).
 * The writer thread takes lines out in batches and writes them to the
 * file (fwrite, then fflush; no fsync: a log is not a commit), outside the
 * mutex. So the engine thread can log while the disk is slow, the file sits
 * on a full filesystem or a FIFO nobody reads: its append returns at once.
 *
 * When the ring is full the line is dropped and counted, never waited for.
 * The count goes into the stream where the gap is: the next line that fits
 * is preceded by one "N log lines dropped" line (level warning), or the
 * writer writes that line itself when it catches up and nothing followed.
 * So every line kept arrives whole and in the order it was appended, and
 * the file says how many are missing and where.
 *
 * Lines are "YYYY-MM-DDTHH:MM:SSZ NAME message" (UTC), NAME from the
 * owner's table of level names; a message's newlines become spaces (one
 * record, one line). A ring on a stream (util_log_ring_new_stream: `coli
 * serve`'s stderr) writes "PREFIXNAME: message" instead, the way the
 * default sink does, and has no path to reopen.
 *
 * Reopen (log rotation, SIGHUP): util_log_ring_reopen only asks; the
 * writer closes the file and opens the path again between two batches, and
 * says so in the new file ("log file PATH reopened"). If the path cannot
 * be opened the writer writes to stderr (and says why there) until a later
 * reopen succeeds, the daemon convention.
 *
 * util_log_ring_free writes everything appended before it (a clean exit
 * loses no line), then joins the writer and closes the file. */
#ifndef COLI_UTIL_LOG_RING_H
#define COLI_UTIL_LOG_RING_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "coli_err.h"

typedef struct util_log_ring util_log_ring;

/* The ring's default size: thousands of lines, enough for any burst the
 * writer is not there for. */
#define UTIL_LOG_RING_BYTES (1u << 20)

/* Open path for appending and start the writer. level_names: the four
 * names of COLI_LOG_DEBUG..COLI_LOG_ERROR as they appear in the file (kept
 * by reference: static strings). cap: the ring's bytes (0: the default;
 * at least 4096). */
int util_log_ring_new(const char *path, const char *const level_names[4], size_t cap, util_log_ring **out,
		      coli_err *err);

/* The same on an open stream (stderr), never closed by the ring: lines
 * "PREFIXNAME: message" without a time stamp (prefix e.g. "coli: ", kept
 * by reference). Reopen does nothing. */
int util_log_ring_new_stream(FILE *f, const char *prefix, const char *const level_names[4], size_t cap,
			     util_log_ring **out, coli_err *err);

/* Append one line (any thread; never blocks on I/O). level outside
 * COLI_LOG_DEBUG..COLI_LOG_ERROR is clamped. Returns 0, or 1 when the line
 * was dropped because the ring was full. */
int util_log_ring_append(util_log_ring *r, int level, const char *msg);

/* Ask the writer to reopen the path (any thread; returns at once). */
void util_log_ring_reopen(util_log_ring *r);

/* Wait until every line appended before the call has been written (and
 * flushed) or counted as dropped. For tests and orderly hand-overs: it
 * waits for the writer, so never call it on the engine thread. */
void util_log_ring_sync(util_log_ring *r);

/* Lines dropped so far (a total, never reset). */
uint64_t util_log_ring_dropped(util_log_ring *r);

/* Write what is left, stop the writer, close the file. NULL: no-op. */
void util_log_ring_free(util_log_ring *r);

#endif
