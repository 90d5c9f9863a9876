/* kv_prefix_index.h - token histories of the sessions in a kv directory,
 * for prompt caching (a request without a session reuses the KV rows of
 * the saved session sharing the longest prefix with its prompt).
 *
 * Two ways to use it:
 *   - one-shot (coli, tests): kv_store_find_prefix, or kv_prefix_index_find,
 *     which refreshes from the directory on the caller's thread;
 *   - kept by the engine: kv_prefix_index_watch starts a refresher thread
 *     that follows the directory (inotify; a pass a second where inotify is
 *     unavailable or the directory does not exist yet), the engine reports
 *     its own saves with kv_prefix_index_note, and admission only calls
 *     kv_prefix_index_lookup: a scan of the histories in RAM under a mutex,
 *     no directory listing, no stat, no read.
 *
 * Sessions are append-only, so a refresh reads only the records added since
 * the last one (token ids, never the KV payload) and re-reads a file that
 * was compacted, replaced or cut. Memory: 4 bytes per stored token.
 *
 * The index is advisory: a file can change between a lookup and its use,
 * so the user opens the session (which validates header and fingerprint)
 * and compares the loaded tokens; when that fails it prefills instead and
 * calls kv_prefix_index_drop. */
#ifndef COLI_KV_PREFIX_INDEX_H
#define COLI_KV_PREFIX_INDEX_H

#include <stddef.h>
#include <stdint.h>

#include "coli_err.h"
#include "kv_file.h"

/* The session (of this fingerprint; NULL: any) whose token history shares
 * the longest prefix with tokens[0..n). name_out gets "" and *n_match 0
 * when none. Reads token ids only; CRCs are not checked, so the result is
 * advisory. Ties: the smallest name. */
int kv_store_find_prefix(const char *dir, const char *fingerprint, const int32_t *tokens,
			 int n, char *name_out, size_t cap, int *n_match, coli_err *err);

typedef struct kv_prefix_index kv_prefix_index;

int kv_prefix_index_new(const char *dir, kv_prefix_index **out, coli_err *err);
/* Stops the refresher (if any) and frees. NULL is a no-op. */
void kv_prefix_index_free(kv_prefix_index *ix);

/* Refresh from the directory on this thread, then as kv_prefix_index_lookup. */
int kv_prefix_index_find(kv_prefix_index *ix, const char *fingerprint, const int32_t *tokens,
			 int n, char *name_out, size_t cap, int *n_match, coli_err *err);

/* Read the directory once (on this thread), then keep the index current
 * from a background thread. Fails only when the thread cannot start. */
int kv_prefix_index_watch(kv_prefix_index *ix, coli_err *err);

/* The best match as the index holds it now: no disk access. Ties: the
 * smallest name. Thread-safe beside the refresher. */
void kv_prefix_index_lookup(kv_prefix_index *ix, const char *fingerprint, const int32_t *tokens,
			    int n, char *name_out, size_t cap, int *n_match);

/* The caller just wrote session s (synced): its history is tokens[0..n)
 * and its file identity and end are read from s, so the refresher, seeing
 * the same file, has nothing to read. A session that is no longer
 * persisted is left to the refresher. 0 or -ENOMEM. */
int kv_prefix_index_note(kv_prefix_index *ix, const kv_session *s, const char *fingerprint,
			 const int32_t *tokens, int n);

/* NAME failed verification when used: forget it now and have the
 * refresher read the directory again (it comes back if its file is fine). */
void kv_prefix_index_drop(kv_prefix_index *ix, const char *name);

/* Directory passes the refresher completed (tests wait on it). */
uint64_t kv_prefix_index_passes(kv_prefix_index *ix);

#endif
