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
 * to another host) and is never printed or written. 429 and 5xx answers and
 * dropped connections are retried with exponential backoff (Retry-After is
 * honoured); 401, 403 and 404 end the request with one line each. */
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

/* repo: "org/name". Reads HF_ENDPOINT and HF_TOKEN. */
int hub_client_init(hub_client *h, const char *repo, coli_err *err);
/* The revision's commit and its files (sizes, LFS sha256). */
int hub_repo_info(hub_client *h, const char *revision, hub_repo *out, coli_err *err);
void hub_repo_free(hub_repo *r);
/* Download a whole (small) file to dest (written to dest.part, renamed). */
int hub_fetch_file(hub_client *h, const char *commit, const char *path, const char *dest,
		   coli_err *err);
/* Fetch ranges of a file into fd at their offsets, `connections` at once;
 * a range cut short is continued from where it stopped. */
int hub_fetch_ranges(hub_client *h, const char *commit, const char *path, int fd,
		     hub_range *r, int n, int connections, hub_progress_fn fn, void *ctx,
		     coli_err *err);

#endif
