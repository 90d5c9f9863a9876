/* ingest_safetensors_write.h - streaming writer for Hugging Face safetensors.
 *
 * The format (see ingest_safetensors.h) puts a JSON header with every tensor's
 * offsets before the data, so the writer works in two phases:
 *
 *   1. declare every tensor (name, dtype, shape) - metadata only;
 *   2. begin, then hand over each tensor's bytes in declaration order, in
 *      as many pieces as convenient (a model never has to be in RAM).
 *
 * With n_shards == 1 the output is DIR/model.safetensors; with n_shards > 1
 * it is DIR/model-0000K-of-0000N.safetensors plus
 * DIR/model.safetensors.index.json ({"metadata":{"total_size":..},
 * "weight_map":{name: file}}), tensors split in declaration order into
 * shards of about equal size. Each file is written as FILE.tmp and renamed
 * into place (after fsync) only when complete, so a crashed run never leaves
 * a file that looks valid. Output is byte-for-byte deterministic. */
#ifndef COLI_SAFETENSORS_WRITE_H
#define COLI_SAFETENSORS_WRITE_H

#include <stddef.h>
#include <stdint.h>

#include "coli_err.h"
#include "ingest_safetensors.h"

typedef struct st_writer st_writer;

/* Start a writer for directory `dir` (must exist). */
int st_writer_new(const char *dir, int n_shards, st_writer **out, coli_err *err);
void st_writer_free(st_writer *w); /* removes unfinished temp files; NULL ok */

/* Phase 1. dtype is an enum st_dtype; ndim 1..ST_MAX_DIMS. Names must be
 * unique. */
int st_writer_declare(st_writer *w, const char *name, int dtype, int ndim,
		      const int64_t *shape, coli_err *err);

/* Total data bytes declared so far (all shards). */
uint64_t st_writer_total_bytes(const st_writer *w);
int st_writer_n_tensors(const st_writer *w);

/* Phase 2: fix the shard layout, create the first file and its header. */
int st_writer_begin(st_writer *w, coli_err *err);

/* Append raw bytes of the current tensor (and the following ones: data runs
 * on across tensor boundaries within the declaration order). */
int st_writer_write(st_writer *w, const void *data, size_t nbytes, coli_err *err);

/* Append n elements of the current tensor given as f32, converted to its
 * dtype (F32, BF16 and F16 round to nearest even; F8_E4M3 saturates). The
 * n elements must not cross a tensor boundary. */
int st_writer_write_f32(st_writer *w, const float *src, size_t n, coli_err *err);

/* Name of the tensor whose bytes come next (NULL when all are written). */
const char *st_writer_current(const st_writer *w);

/* Check every byte was written, fsync and rename the files into place and
 * write the index (sharded case). */
int st_writer_finish(st_writer *w, coli_err *err);

#endif
