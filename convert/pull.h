/* pull.h - `coli pull REPO[@REV] OUT_DIR`: a Hugging Face Hub checkpoint
 * to a model container, one shard at a time.
 *
 * OUT/.pull/ holds what the converter reads: config.json, the tokenizer
 * files, the index, and every shard as a sparse file of its real size whose
 * header alone is written at first (fetched with a Range request), so the
 * whole conversion is planned before any tensor data arrives. Then for each
 * shard in order: download its data (Range requests, several connections),
 * check its sha256 against the hub's LFS oid, write every container file
 * whose source tensors have all arrived, and free (punch out) the tensors
 * no later file reads. Tensors read by a file that also needs a later shard
 * stay until that file is written. Peak disk: the container + the largest
 * shard + the largest set of tensors held across a shard boundary.
 *
 * OUT/.pull/state.json records the commit the revision resolved to (a
 * branch that moves later is not followed), each shard's finished byte
 * ranges and whether it verified, and the last shard fully processed; the
 * converter's own state records finished files. Running the same command
 * again resumes. See coli-pull(1). */
#ifndef COLI_PULL_H
#define COLI_PULL_H

#include <stdint.h>

#include "coli_err.h"
#include "convert.h"

typedef struct pull_opts {
	const char *repo;          /* "org/name" */
	const char *revision;      /* branch, tag or commit; "main" by default */
	convert_opts conv;         /* out_dir, quant, threads, force, ... */
	int connections;           /* at once per shard; default 4 */
	int dry_run;               /* print the plan, write nothing */
	int quiet;                 /* no progress, no plan */
	int progress_tty;          /* 1: one redrawn progress line; 0: plain lines */
} pull_opts;

typedef struct pull_summary {
	char commit[64];
	int n_shards, shards_fetched;
	uint64_t bytes_downloaded;
	uint64_t container_bytes, largest_shard, largest_held, peak_need;
	uint64_t peak_measured;    /* allocated bytes under OUT, at its highest */
	int up_to_date;            /* OUT already held this commit: nothing done */
	convert_summary conv;
} pull_summary;

void pull_opts_default(pull_opts *o);
int pull_run(const pull_opts *o, pull_summary *sum, coli_err *err);

#endif
