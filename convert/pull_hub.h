/* pull_hub.h - the few Hugging Face Hub HTTP endpoints `coli pull` uses.
 *
 *   GET $HF_ENDPOINT/api/models/REPO/revision/REV?blobs=true
 *       -> {"sha": commit, "siblings": [{"rfilename", "size",
 *           "lfs": {"sha256", "size"}}]}
 *   GET $HF_ENDPOINT/REPO/resolve/COMMIT/FILE  (Range: bytes=A-B; the hub
 *       answers with a redirect to its storage, which curl follows)
 *
 * HF_ENDPOINT defaults to https://huggingface.co; HF_TOKEN, when set, is sent
 * as "Authorization: Bearer" to the hub only (curl drops it on a redirect
 * to another host) and is never printed or written. Every failure of a
 * request (429 and 5xx answers, dropped connections, bodies shorter than
 * their Content-Length, stalls) counts as one of its max_tries tries, waited
 * out with exponential backoff and jitter from backoff_s (Retry-After is
 * honoured), and a request still failing deadline_s after its first
 * failure is given up; 401, 403, 404, 416, a redirect loop and an answer
 * larger than asked for end the request at once with one line each.
 *
 * Environment (tests shorten the waits): COLI_PULL_BACKOFF (first wait in
 * seconds, default 1), COLI_PULL_RETRY_DEADLINE (seconds, default 600). */
#ifndef COLI_HUB_CLIENT_H
#define COLI_HUB_CLIENT_H

#include <stddef.h>
#include <stdint.h>

#include "coli_err.h"

typedef struct hub_client {
	char endpoint[512];        /* no trailing slash */
	char repo[256];            /* "org/name" */
	char auth[1100];           /* "Authorization: Bearer ..." or "" */
	int max_tries;             /* per request (429, 5xx, network errors) */
	double backoff_s;          /* first wait; doubles, capped at 60 s */
	double deadline_s;         /* a request failing this long is given up */
	uint64_t jitter;           /* xorshift state of the backoff's jitter */
} hub_client;

typedef struct hub_file {
	char *path;                /* repository-relative */
	uint64_t size;
	char sha256[65];           /* LFS oid; "" for files not in LFS */
} hub_file;

typedef struct hub_repo {
	char commit[64];
	hub_file *files;
	int n_files;
} hub_repo;

/* A byte range of one file to fetch; got counts bytes written so far. */
typedef struct hub_range {
	uint64_t off, len, got;
} hub_range;

/* Called as ranges complete (done = 1 for the range that just finished) and
 * about twice a second (done = 0); a negative return stops the transfer. */
typedef int (*hub_progress_fn)(void *ctx, int range_done);

/* repo: "org/name" (hub_check_repo). Reads HF_ENDPOINT, HF_TOKEN and the
 * COLI_PULL_* waits. */
int hub_client_init(hub_client *h, const char *repo, coli_err *err);
/* "org/name" as the hub allows it: two names of letters, digits, '-', '_'
 * and '.', neither starting or ending with '-' or '.', without "--" or
 * "..", at most 96 bytes in all (pull_names.c). */
int hub_check_repo(const char *repo, coli_err *err);
/* A branch, tag or commit as git and the hub allow it: letters, digits and
 * "-_./", no "..", no empty, leading-'.' or ".lock" segment, at most 200
 * bytes. (It is percent-encoded in URLs.) */
int hub_check_revision(const char *rev, coli_err *err);
/* The revision's commit and its files (sizes, LFS sha256). */
int hub_repo_info(hub_client *h, const char *revision, hub_repo *out, coli_err *err);
void hub_repo_free(hub_repo *r);
/* Download a whole (small) file to dest (written to dest.part, renamed). */
int hub_fetch_file(hub_client *h, const char *commit, const char *path, const char *dest,
		   coli_err *err);
/* Fetch ranges of a file of file_size bytes (the hub's word; an answer
 * whose Content-Range gives another size is refused) into fd at their
 * offsets, `connections` at once; a range cut short is continued from
 * where it stopped. */
int hub_fetch_ranges(hub_client *h, const char *commit, const char *path, uint64_t file_size,
		     int fd, hub_range *r, int n, int connections, hub_progress_fn fn, void *ctx,
		     coli_err *err);

#endif
