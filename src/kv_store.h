/* kv_store.h - the directory of persisted KV sessions (CACHE_DIR/kv).
 *
 * Files per session NAME (see colitop-kv(5)):
 *   NAME.kv     the session (kv_file.h)
 *   NAME.lock   empty; flock(LOCK_EX) by the one process writing NAME.kv
 *   NAME.chat.json  colitop's transcript, if any: removed and renamed with
 *               the session (not counted by list or gc)
 *   NAME.resp.json  a stored response of `coli serve`'s /v1/responses:
 *               removed and renamed with the session, counted in its bytes
 * Names are 1..64 characters of [A-Za-z0-9._-], no leading '.', no "..".
 * Every mutating operation takes the session's lock without waiting and
 * refuses (-EBUSY) a session in use, so rm/rename/gc never pull a file
 * from under a live writer. Readers take no lock. */
#ifndef COLI_KV_STORE_H
#define COLI_KV_STORE_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "coli_err.h"
#include "kv_file.h"

/* Sessions named "resp_..." belong to stored responses (server_responses_store.c):
 * reachable only by naming them, never indexed for another request's prompt cache. */
#define KV_STORE_PRIVATE_PREFIX "resp_"
static inline int kv_store_name_private(const char *name)
{
	return name[0] == 'r' && !strncmp(name, KV_STORE_PRIVATE_PREFIX, 5);
}

/* 1 if `name` is a valid session name. */
int kv_store_name_valid(const char *name);

/* Same, as an error naming the problem (-EINVAL). */
int kv_store_name_check(const char *name, coli_err *err);

/* dir/NAME.ext into out; -ENAMETOOLONG or -EINVAL (bad name). */
int kv_store_path(const char *dir, const char *name, const char *ext, char *out, size_t cap,
		  coli_err *err);

/* Take NAME's writer lock without waiting (creating dir/NAME.lock).
 * *lock_fd >= 0 on success; -EBUSY when another process holds it. */
int kv_store_lock(const char *dir, const char *name, int *lock_fd, coli_err *err);
/* Release (close); -1 is a no-op. */
void kv_store_unlock(int lock_fd);

typedef struct kv_store_entry {
	char name[KV_NAME_MAX + 1];
	int n_tokens;
	uint64_t bytes;          /* on disk */
	time_t mtime;            /* last used */
	char fingerprint[KV_FINGERPRINT_LEN + 1];
	uint32_t n_layers;
	uint32_t width;
	int status;              /* enum kv_file_status; -1 = header unreadable */
	int locked;              /* 1 while a writer holds it */
} kv_store_entry;

/* All sessions in dir, sorted by name. A missing dir is an empty list.
 * *out is malloc'd (free()). */
int kv_store_list(const char *dir, kv_store_entry **out, int *n, coli_err *err);

/* Remove NAME (its .kv and .lock). -ENOENT, -EBUSY. */
int kv_store_rm(const char *dir, const char *name, coli_err *err);
/* The files kept beside session NAME under its name (transcript, stored
 * response, routing profile) removed, as kv_store_rm does after the .kv:
 * for a caller that unlinked NAME.kv itself (its lock held elsewhere). */
void kv_store_rm_companions(const char *dir, const char *name);

/* Atomic rename; refuses to overwrite (-EEXIST) and a session in use. */
int kv_store_rename(const char *dir, const char *old_name, const char *new_name, coli_err *err);

/* Evict least recently used sessions (by mtime) until the total is at most
 * budget bytes. Sessions in use are skipped. Also removes temporary files
 * left by a crash during create/compact (counted in bytes_freed, not in
 * n_removed). Reports what was removed. */
int kv_store_gc(const char *dir, uint64_t budget, int *n_removed, uint64_t *bytes_freed,
		uint64_t *bytes_left, coli_err *err);

/* Prompt caching: kv_store_find_prefix and the kept index are in
 * kv_prefix_index.h. */
#include "kv_prefix_index.h"

#endif
