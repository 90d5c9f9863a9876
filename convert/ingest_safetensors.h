/* ingest_safetensors.h - reading Hugging Face safetensors checkpoints.
 *
 * File format: u64 little-endian header length N, N bytes of JSON
 * {"name": {"dtype": "BF16", "shape": [..], "data_offsets": [begin, end]},
 *  "__metadata__": {...}}, then the data region; offsets are relative to the
 * start of the data region. A reader never trusts an offset beyond the file
 * size, and refuses overlapping tensors, shape/size mismatches and unknown
 * dtypes with one line naming the file and tensor.
 *
 * A checkpoint directory holds either model.safetensors or
 * model.safetensors.index.json ({"weight_map": {"name": "shard file"}})
 * plus shards. Tensor data is read on demand (pread), one tensor at a time,
 * so peak memory is bounded by a few tensors. */
#ifndef COLI_SAFETENSORS_H
#define COLI_SAFETENSORS_H

#include <stddef.h>
#include <stdint.h>

#include "coli_err.h"

enum st_dtype {
	ST_F32 = 0, ST_F16, ST_BF16, ST_F8_E4M3, ST_F8_E5M2, ST_F64,
	ST_I8, ST_U8, ST_I16, ST_I32, ST_I64, ST_BOOL, ST_DTYPE_COUNT
};

#define ST_MAX_DIMS 4

typedef struct st_tensor {
	char *name;
	int dtype;                 /* enum st_dtype */
	int ndim;
	int64_t shape[ST_MAX_DIMS];
	uint64_t offset;           /* absolute offset in the file */
	uint64_t nbytes;
	int file_index;            /* index into st_checkpoint.files */
} st_tensor;

typedef struct st_checkpoint {
	char *dir;
	char **files;              /* shard paths: dir + "/" + file name */
	int n_files;
	st_tensor *tensors;        /* sorted by name (strcmp), names unique */
	int n_tensors;
	/* Added by ingest (compatible extension): one descriptor per file,
	 * opened once at open time and read with pread, so one checkpoint may
	 * be read from several threads at once. */
	int *fds;
	uint64_t *file_sizes;
	int cap_files;             /* of files, fds and file_sizes */
} st_checkpoint;

/* Largest header accepted (the format's own reference limit). */
#define ST_MAX_HEADER_BYTES 100000000ull
/* Block edge of FP8 weight scales ("<name>_scale_inv"). */
#define ST_FP8_BLOCK 128

/* Parse one safetensors header held in memory (the fuzzing entry point).
 * `buf` holds the start of the file: the u64 length N followed by at least
 * N bytes of JSON (len >= 8 + N; bytes after the header are ignored).
 * `file_size` is the total file size used to bound data offsets; offsets in
 * the returned tensors are absolute (8 + N + begin). Appends the tensors to
 * *tensors and *n (realloc'd), tagged with file_index; on error nothing is
 * appended (the array may have been reallocated) and `err` names
 * file_label and the tensor. Checks: N <= file size and <= 100 MB, JSON
 * object, unique names, known dtype, shape of at most ST_MAX_DIMS
 * non-negative integers, data_offsets [begin, end] with begin <= end inside
 * the file, end - begin == numel * dtype size (overflow-checked), no two
 * tensors overlapping. "__metadata__" is ignored. */
int st_parse_header(const uint8_t *buf, size_t len, uint64_t file_size, int file_index,
		    const char *file_label, st_tensor **tensors, int *n, coli_err *err);

/* Open a checkpoint directory: model.safetensors.index.json (every shard
 * named in weight_map opened once; every mapped tensor must be in its
 * shard), else model.safetensors, else the directory's only *.safetensors
 * file. A path to a regular file is opened like st_open_file. */
int st_open_dir(const char *dir, st_checkpoint **out, coli_err *err);
/* Open one .safetensors file. */
int st_open_file(const char *path, st_checkpoint **out, coli_err *err);
void st_close(st_checkpoint *ck);

const st_tensor *st_find(const st_checkpoint *ck, const char *name);
/* Reads use pread on descriptors opened at open time: safe to call from
 * several threads on one checkpoint. A file that shrank since opening gives
 * an error naming the file and tensor. */
/* Read raw bytes of a tensor into buf (t->nbytes bytes). */
int st_read_raw(const st_checkpoint *ck, const st_tensor *t, void *buf, coli_err *err);
/* Read a tensor converted to f32 into out[st_numel(t)] (F32, F16, BF16,
 * F8_E4M3, F8_E5M2, F64; other dtypes are refused). No extra buffer the
 * size of the tensor is allocated. For F8_E4M3 weights with a scale
 * companion (st_find_fp8_scale; F32, BF16 or F16) the scales are multiplied
 * in: 128x128 blocks [ceil(rows/128)][ceil(cols/128)] (the official
 * DeepSeek-V3 / GLM-5 releases), one per output channel [rows][1] or one
 * per tensor (compressed-tensors "channel" and "tensor" strategies); a
 * scale of another shape is an error. */
int st_read_f32(const st_checkpoint *ck, const st_tensor *t, float *out, coli_err *err);
/* The scale companion of an F8_E4M3 tensor: "<name>_scale_inv" (DeepSeek)
 * or else "<name>_scale" (compressed-tensors' weight_scale, also a factor:
 * w = fp8 * scale), or NULL. */
const st_tensor *st_find_fp8_scale(const st_checkpoint *ck, const st_tensor *t);
/* t is the scale companion of an F8_E4M3 tensor (not a weight itself). */
int st_is_fp8_scale(const st_checkpoint *ck, const st_tensor *t);

int64_t st_numel(const st_tensor *t);
const char *st_dtype_name(int dtype);      /* "BF16", ...; "?" if unknown */
size_t st_dtype_size(int dtype);           /* bytes per element, 0 if unknown */

#endif
