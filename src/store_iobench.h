/* store_iobench.h - the random-read baseline of a drive (`coli iobench`).
 *
 * io_uring random reads at 4 KiB (queue depth 32) and at the expert record
 * size (default 16 MiB, depth 8), O_DIRECT and buffered (page cache dropped
 * with posix_fadvise DONTNEED on each range read, so buffered figures are
 * disk figures too). Also says what the storage is: network filesystem,
 * rotational disk, virtual disk, and what that means for decode speed. */
#ifndef COLI_STORE_IOBENCH_H
#define COLI_STORE_IOBENCH_H

#include <stdint.h>
#include <stdio.h>

#include "coli_err.h"

typedef struct store_iobench_opts {
	const char *path;      /* a directory (a test file is made there) or a file */
	int64_t record;        /* large block size; 0 = 16 MiB */
	double seconds;        /* per test; 0 = 3 */
	int64_t file_bytes;    /* test file size; 0 = min(2 GiB, free / 4) */
	int qd_small, qd_large; /* 0 = 32 and 8 */
	int experts_per_token; /* for the decode ceiling; 0 = 8 */
	int moe_layers;        /* for the decode ceiling; 0 = 75 (GLM-5) */
} store_iobench_opts;

typedef struct store_iobench_test {
	int64_t block;
	int direct;            /* 1 O_DIRECT, 0 buffered */
	int qd;
	int ok;                /* 0 when the mode is not supported here */
	char note[96];         /* why not, when !ok */
	uint64_t ops;
	double seconds, iops, bytes_per_s;
} store_iobench_test;

typedef struct store_iobench_report {
	char file[1024];       /* what was read */
	int created;           /* 1 = a temporary file was made (and removed) */
	int64_t file_bytes;
	char fs_type[32];      /* "ext4", "nfs", ... or hex */
	int network;           /* NFS/SMB/CIFS/FUSE/9p/ceph */
	char device[64];       /* block device name, "" when unknown */
	int rotational;        /* 1 spinning, 0 solid state, -1 unknown */
	int virtual_disk;      /* virtio/xen disk */
	int n_tests;
	store_iobench_test tests[4];
	double best_large_bps; /* best large-block bandwidth */
	int64_t bytes_per_token; /* experts_per_token x moe_layers x record */
} store_iobench_report;

int store_iobench_run(const store_iobench_opts *o, store_iobench_report *r, coli_err *err);
/* Human summary with warnings and the decode ceiling. */
void store_iobench_print(FILE *f, const store_iobench_report *r);
/* One JSON object (newline-terminated). */
int store_iobench_print_json(FILE *f, const store_iobench_report *r);

/* Pure helpers (tested). */
const char *store_iobench_fs_name(long f_type, int *network);
/* Tokens/s ceiling when a fraction `hit` of expert reads are RAM hits. */
double store_iobench_decode_ceiling(double bytes_per_s, int64_t bytes_per_token, double hit);

#endif
