/* kv_file.h - one persisted KV session: CACHE_DIR/kv/NAME.kv.
 *
 * A session is the token ids of one sequence plus, for every token and
 * every layer, W = kv_lora_rank + qk_rope_head_dim float32 numbers (MLA's
 * normalized compressed latent followed by the roped key), plus, for DSA
 * models, the token's index_head_dim-number indexer key. The file is a
 * checksummed header followed by append-only records; the byte layout is
 * specified at the top of kv_file.c and in colitop-kv(5).
 *
 * Crash safety: a record is either entirely valid (CRC32C) or, when it is
 * the last one, cut off at the next read-write open ("torn tail"). A bad
 * record followed by valid data is corruption: refused, file untouched.
 *
 * Threads: a kv_session is owned by one thread (the engine thread). Across
 * processes, one writer per session (lock file NAME.lock, flock); any
 * number of read-only openers see a consistent prefix while it appends.
 *
 * Engine use (the RAM cache is, per layer, [n_tokens][W] float32; a DSA
 * model adds, per full indexer layer, [n_tokens][I] index keys: the
 * *_indexed calls, whose "layers" are slots, the L layers then those F
 * index key parts):
 *   kv_dir = kv_cache_dir(model_dir) + "/kv"  (kv_cache_dir.h)
 *   rc = kv_session_open(kv_dir, name, fp, L, W, 0, &s, &loaded, &err);
 *   if (rc == -ENOENT) rc = kv_session_create(kv_dir, name, fp, L, W, 0, &s, &err);
 *   -> loaded.tokens / loaded.rows[l] seed the cache: no re-prefill
 *   after prefill:      kv_session_append(s, ids, n, rows_at(a), &err)
 *                       where rows_at(a)[l] = cache[l] + a * W
 *   after each step:    kv_session_append(s, &id, 1, rows_at(pos), &err)
 *   end of turn:        kv_session_sync(s, &err)
 *   regenerate/rewind:  kv_session_truncate_tokens(s, n_keep, &err)
 *                       (compact at a turn boundary when dead bytes grow)
 *   a write error is returned once (report it), then the session lives in
 *   RAM only: kv_session_persisted(s) == 0, later calls return 0.
 *   prompt caching:     kv_store_find_prefix(kv_dir, fp, ids, n, name, ...)
 *   then open that session and use min(n_match, common prefix of loaded
 *   tokens) tokens. Long contexts: KV_OPEN_NO_ROWS + kv_session_read_rows. */
#ifndef COLI_KV_FILE_H
#define COLI_KV_FILE_H

#include <stddef.h>
#include <stdint.h>

#include "coli_err.h"

/* 2: the header records the DSA index width (a key in every layer's row);
 * 3: index keys for the full indexer layers only, in parts of their own */
#define KV_FORMAT_VERSION 3u
#define KV_FINGERPRINT_LEN 64   /* hex sha256 of the container manifest */
#define KV_NAME_MAX 64

typedef struct kv_session kv_session;

enum kv_flags {
	KV_CREATE_OVERWRITE = 1 << 0, /* create: replace an existing session */
	KV_SYNC_EACH        = 1 << 1, /* fsync after every append/truncate */
	KV_OPEN_READONLY    = 1 << 2, /* open: no lock, no repair, no writes */
	KV_OPEN_NO_ROWS     = 1 << 3, /* open: load token ids only (rows on demand) */
};

/* What kv_session_open loaded (malloc'd; free with kv_loaded_free). */
typedef struct kv_loaded {
	int n_tokens;
	int n_layers;
	int width;
	int index_layers;  /* F index key parts after the layers (format 3) */
	int index_width;   /* I numbers each */
	int32_t *tokens;   /* [n_tokens] */
	float **rows;      /* [n_layers + index_layers] -> [n_tokens][width or
	                    * index_width]; NULL with KV_OPEN_NO_ROWS */
} kv_loaded;

void kv_loaded_free(kv_loaded *l);

/* Create CACHE_KV_DIR/NAME.kv (exclusive: -EEXIST unless
 * KV_CREATE_OVERWRITE). The header is written to a temporary file, synced
 * and linked into place, so a crash never leaves a half-written header.
 * Takes the session's writer lock (-EBUSY if another process holds it).
 * Creates `dir` (mode 0700) if needed.
 * `fingerprint` is 64 hex chars. */
int kv_session_create(const char *dir, const char *name, const char *fingerprint,
		      int n_layers, int width, int flags, kv_session **out, coli_err *err);

/* The same for a DSA model: besides the n_layers x width rows, per token
 * index_layers keys of index_width numbers (the layers that run their own
 * indexer, in layer order; recorded in the header; both 0 without an
 * indexer, which is what kv_session_create passes). The session's slots
 * are then n_layers + index_layers: append and read_rows take the index
 * keys as slots n_layers.. */
int kv_session_create_indexed(const char *dir, const char *name, const char *fingerprint,
			      int n_layers, int width, int index_layers, int index_width, int flags,
			      kv_session **out, coli_err *err);

/* Open an existing session and load it up to its last complete record.
 * expected_fingerprint / n_layers / width: refused (-ESTALE / -EINVAL) on
 * mismatch; pass NULL / 0 to accept any. `loaded` may be NULL.
 * Read-write (default): takes the writer lock, cuts a torn tail off with a
 * warning. KV_OPEN_READONLY: no lock, leaves a torn tail alone (a writer
 * may be appending it right now). Refuses (file untouched): bad header
 * (-EBADMSG), newer format (-EPROTONOSUPPORT), corruption before the last
 * record (-EBADMSG). -ENOENT when there is no such session. */
int kv_session_open(const char *dir, const char *name, const char *expected_fingerprint,
		    int n_layers, int width, int flags, kv_session **out, kv_loaded *loaded,
		    coli_err *err);
/* The same expecting index_layers x index_width index keys besides (when
 * width > 0; kv_session_open expects none). Refused with the reason: a
 * format 2 file with index keys (a key in every layer's row: re-create),
 * a file without index keys for a model that needs them. */
int kv_session_open_indexed(const char *dir, const char *name, const char *expected_fingerprint,
			    int n_layers, int width, int index_layers, int index_width, int flags,
			    kv_session **out, kv_loaded *loaded, coli_err *err);

/* Append one record: n tokens and, for each slot l, layer_rows[l] ->
 * n rows of width floats (index_width for the index key slots). Written at the tracked end, no fsync (unless
 * KV_SYNC_EACH). On a write error (ENOSPC, EDQUOT, EFBIG, EIO) the file is
 * cut back to the last good record, the session is marked not persisted
 * and the error returned; later appends/truncates are skipped (return 0)
 * with one warning. A record's payload must stay under 4 GiB (-EFBIG):
 * for GLM-5.2 that is 23,898 tokens per call; split longer prefills. */
int kv_session_append(kv_session *s, const int32_t *tokens, int n,
		      const float *const *layer_rows, coli_err *err);

/* Keep only the first n_keep tokens (rewind for a regenerated answer).
 * Appends a small "truncate" record, so it is as crash-safe as an append;
 * kv_session_compact reclaims the space. */
int kv_session_truncate_tokens(kv_session *s, int n_keep, coli_err *err);

/* fsync; the engine calls it at the end of each turn. */
int kv_session_sync(kv_session *s, coli_err *err);

/* Rewrite the file with only the live tokens (records of up to 4096
 * tokens) through a temporary file + fsync + rename + fsync(dir). */
int kv_session_compact(kv_session *s, coli_err *err);

/* Read rows [first_token, first_token + n) of one slot (layer, or index
 * key part) from the file (pread at offsets from the in-RAM record
 * table). out: n * width (index_width) floats. */
int kv_session_read_rows(kv_session *s, int layer, int first_token, int n, float *out,
			 coli_err *err);
/* The same for runs of rows of one slot: runs[2i] the first position of
 * run i, runs[2i + 1] its length; each row lands at its position, out +
 * pos * width (index_width). With a reader (kv_reader.h) the reads of
 * every run (one per run and record it spans) are submitted together
 * through its io_uring ring and waited for; without one they are preads.
 * Adds the bytes read to *bytes (when not NULL) on success. */
typedef struct kv_reader kv_reader;
int kv_session_read_runs(kv_session *s, kv_reader *rd, int slot, const int *runs, int n_runs, float *out,
			 uint64_t *bytes, coli_err *err);

int kv_session_n_tokens(const kv_session *s);
/* 0 once a write failed: the file holds a valid prefix, nothing newer. */
int kv_session_persisted(const kv_session *s);
/* Bytes of the file up to the last good record. */
uint64_t kv_session_bytes(const kv_session *s);
/* fstat of the session's file (its identity, for kv_prefix_index_note). */
struct stat;
int kv_session_fstat(const kv_session *s, struct stat *st);
/* Of those, bytes no longer in the history (rewound tokens, truncate
 * records): what kv_session_compact would reclaim. */
uint64_t kv_session_dead_bytes(const kv_session *s);
const char *kv_session_name(const kv_session *s);
int kv_session_n_layers(const kv_session *s);
int kv_session_width(const kv_session *s);
int kv_session_index_layers(const kv_session *s);
int kv_session_index_width(const kv_session *s);

/* Syncs (read-write sessions), releases the lock, frees. NULL is a no-op. */
void kv_session_close(kv_session *s);

/* ---- inspection (list/show/prefix matching; never modifies the file) ---- */

enum kv_rec_type { KV_REC_DATA = 1, KV_REC_TRUNCATE = 2 };
enum kv_file_status { KV_FILE_OK = 0, KV_FILE_TORN = 1, KV_FILE_CORRUPT = 2 };

typedef struct kv_header {
	uint32_t version;
	uint32_t header_size;
	char fingerprint[KV_FINGERPRINT_LEN + 1];
	uint32_t n_layers;
	uint32_t width;
	uint32_t elem_type;   /* 0 = float32 */
	int64_t created;      /* unix seconds */
	uint32_t index_width; /* DSA index key numbers (0 in version 1) */
	uint32_t index_layers; /* version 3: index key parts after the layers
	                        * (0 in version 2, whose key ends every row) */
} kv_header;

typedef struct kv_record_info {
	uint64_t offset;      /* of the record's first byte */
	uint64_t bytes;       /* whole record incl. framing */
	int type;             /* enum kv_rec_type */
	uint32_t first;       /* DATA: first position; TRUNCATE: tokens kept */
	uint32_t n;           /* DATA: tokens in the record */
	uint32_t live;        /* DATA: tokens of it still in the history */
} kv_record_info;

typedef struct kv_file_report {
	kv_header hdr;
	uint64_t file_bytes;   /* size when inspected */
	uint64_t valid_bytes;  /* up to the end of the last valid record */
	int n_tokens;          /* live tokens */
	int status;            /* enum kv_file_status */
	char problem[256];     /* why, when status != OK */
	kv_record_info *recs;  /* with KV_INSPECT_RECORDS */
	int n_recs;
} kv_file_report;

enum kv_inspect_flags {
	KV_INSPECT_VERIFY = 1 << 0,   /* read payloads and check every CRC */
	KV_INSPECT_RECORDS = 1 << 1,  /* fill recs */
};

/* Header + record walk of one file. Without KV_INSPECT_VERIFY only the
 * record framing is read (cheap; what `coli sessions list` uses). Returns
 * <0 only when the header is unusable (then nothing is reported). */
int kv_file_inspect(const char *path, int flags, kv_file_report *rep, coli_err *err);
void kv_file_report_free(kv_file_report *rep);

/* Length of the longest common prefix of the session's token history and
 * tokens[0..n), reading token ids only (never the KV payload). Advisory:
 * CRCs are not checked, so the caller opens the session (which validates)
 * and compares its loaded tokens. -ESTALE if the fingerprint differs. */
int kv_file_match_prefix(const char *path, const char *fingerprint, const int32_t *tokens,
			 int n, int *n_match, coli_err *err);

/* Bytes per token on disk for a config (payload only, no framing). */
static inline uint64_t kv_bytes_per_token(int n_layers, int width)
{
	return (uint64_t)n_layers * (uint64_t)width * 4u + 4u;
}

#endif
