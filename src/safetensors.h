/* safetensors.h - reading Hugging Face safetensors checkpoints.
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
	char **files;              /* shard paths (absolute or dir-relative) */
	int n_files;
	st_tensor *tensors;        /* sorted by name */
	int n_tensors;
} st_checkpoint;

/* Parse one safetensors header held in memory (the fuzzing entry point).
 * `file_size` is the total file size used to bound data offsets. Appends
 * the tensors to *tensors/*n (realloc'd), tagged with file_index. */
int st_parse_header(const uint8_t *buf, size_t len, uint64_t file_size, int file_index,
		    const char *file_label, st_tensor **tensors, int *n, coli_err *err);

/* Open a checkpoint directory (single file or sharded with index). */
int st_open_dir(const char *dir, st_checkpoint **out, coli_err *err);
/* Open one .safetensors file. */
int st_open_file(const char *path, st_checkpoint **out, coli_err *err);
void st_close(st_checkpoint *ck);

const st_tensor *st_find(const st_checkpoint *ck, const char *name);
/* Read raw bytes of a tensor into buf (nbytes). */
int st_read_raw(const st_checkpoint *ck, const st_tensor *t, void *buf, coli_err *err);
/* Read a tensor converted to f32 (F32/F16/BF16/F8). For F8_E4M3 weights
 * with a companion "<name>_scale_inv" tensor (128x128 block scales, as the
 * official DeepSeek-V3 / GLM-5 releases ship) the scales are applied. */
int st_read_f32(const st_checkpoint *ck, const st_tensor *t, float *out, coli_err *err);

int64_t st_numel(const st_tensor *t);
const char *st_dtype_name(int dtype);
size_t st_dtype_size(int dtype);

#endif
