/* pull_int.h - what the parts of `coli pull` share (private to pull*.c):
 * the driver (pull.c), the resume state file (pull_state.c), the release
 * schedule (pull_schedule.c), disk accounting and the plan printout
 * (pull_plan.c), the progress line (pull_progress.c) and hole punching
 * (pull_punch.c). See pull.h for the design. */
#ifndef COLI_PULL_INT_H
#define COLI_PULL_INT_H

#define COLI_CONVERT_INTERNAL 1
#include "pull.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <jansson.h>
#include <linux/falloc.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "coli_log.h"
#include "pull_hub.h"
#include "model_manifest.h"
#include "ingest_safetensors.h"
#include "util_sha256.h"
#include "util_time.h"

#define STAGING ".pull"
#define PSTATE_FORMAT "colitop-pull-state"
#define INDEX_NAME "model.safetensors.index.json"
#define SINGLE_NAME "model.safetensors"

typedef struct shard {
	const hub_file *hf;
	char path[4400];
	hub_range *chunks;
	int n_chunks;
	int verified;
	int fd;
} shard;

typedef struct pull_ctx {
	const pull_opts *o;
	pull_summary *sum;
	hub_client h;
	hub_repo repo;
	char stage[2048], state_path[2100];
	json_t *state;
	convert_opts co;
	convert_session cs;
	int began;
	shard *sh;
	int n_sh;
	int *ms;                   /* per container file: last shard it reads, -1 none */
	int *rel;                  /* per source tensor: step after which it is freed */
	int step_done;
	int punch_ok;              /* the file system frees ranges (FALLOC_FL_PUNCH_HOLE) */
	/* progress of the shard being fetched */
	int cur;
	double t0, t_shard, last_save, last_line;
	uint64_t bytes_before;     /* this shard's bytes already on disk when it started */
} pull_ctx;

static inline double gib(uint64_t b)
{
	return (double)b / (double)(1ull << 30);
}

/* Sizes for people: "812.4 MiB", "5.00 GiB". */
static inline const char *human(uint64_t b, char *buf, size_t cap)
{
	if (b >= 1ull << 30)
		snprintf(buf, cap, "%.2f GiB", gib(b));
	else if (b >= 1ull << 20)
		snprintf(buf, cap, "%.1f MiB", (double)b / (1 << 20));
	else
		snprintf(buf, cap, "%.1f KiB", (double)b / 1024);
	return buf;
}

/* COLI_PULL_FAIL_AT=N (test builds): die by SIGKILL at the Nth point where
 * state was just made durable (pull.c: one count over all the parts). */
void pull_fault_point(void);
/* with COLI_PULL_FAIL_AT set, the state is saved after every chunk */
static inline int save_every_chunk(void)
{
#ifdef COLI_FAULT_INJECTION
	return getenv("COLI_PULL_FAIL_AT") != NULL;
#else
	return 0;
#endif
}


int pull_state_save(pull_ctx *c, coli_err *err);
int pull_state_load(pull_ctx *c, char *commit, size_t cap, coli_err *err);
int pull_schedule(pull_ctx *c, coli_err *err);
void pull_measure_peak(pull_ctx *c);
int pull_precheck_space(pull_ctx *c, coli_err *err);
/* The largest shard the hub lists fits the disk (before any shard byte). */
int pull_precheck_shards(pull_ctx *c, coli_err *err);
void pull_print_plan(pull_ctx *c);
uint64_t pull_shard_got(const shard *s);
void pull_progress_line(pull_ctx *c, int final);
int pull_on_progress(void *ctx, int range_done);
int pull_release_after(pull_ctx *c, int k, coli_err *err);

#endif
