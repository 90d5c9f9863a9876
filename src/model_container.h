/* model_container.h - read side of the model container that `coli convert` writes.
 *
 *   MODEL_DIR/manifest.json    format "colitop-model", version 2 (see
 *                              colitop-model(5); version 1, without the
 *                              CRC-32C of tensors and records, still
 *                              reads): config (HF keys), quant of each
 *                              part, tensor index, expert index, files
 *                              with size + sha256, measured quant error
 *   MODEL_DIR/dense/NAME.bin   resident tensors (embed, attention, norms,
 *                              routers, shared experts, dense FFN, lm_head):
 *                              embed.bin, layer-NNN.bin, head.bin
 *   MODEL_DIR/experts/shard-NNN.bin   routed experts, one shard per MoE layer;
 *                              expert e of the shard at offset e*record_size
 *   MODEL_DIR/mtp/NAME.bin     MTP layer tensors (layer-NNN.bin)
 *   MODEL_DIR/tokenizer/       tokenizer.json, tokenizer_config.json
 *
 * Tensor names are the Hugging Face names (e.g.
 * "model.layers.3.self_attn.kv_a_proj_with_mqa.weight"); norms and biases
 * are f32 vectors (rows = length, cols = 1).
 *
 * Expert record (record_size bytes, a multiple of 4096, each record starting
 * on a 4096-byte boundary of its shard):
 *   [gate_proj  I x H][up_proj I x H][down_proj H x I][zero padding]
 * each part in the expert qtype's block layout (quant.h) starting at a
 * 64-byte aligned offset given by expert_part_offset[]. One read brings the
 * whole expert; kernels run on the buffer as read. */
#ifndef COLI_CONTAINER_H
#define COLI_CONTAINER_H

#include <stddef.h>
#include <stdint.h>

#include "coli_err.h"
#include "model_config.h"
#include "quant.h"

enum coli_expert_part { COLI_EXPERT_GATE = 0, COLI_EXPERT_UP = 1, COLI_EXPERT_DOWN = 2 };

typedef struct coli_container_tensor {
	char *name;
	int qtype;
	int rows, cols;        /* vectors: rows = length, cols = 1 */
	const void *data;      /* resident copy (loaded at open) */
	size_t nbytes;
	uint32_t crc32c;       /* of the nbytes at data (version 2; else 0) */
} coli_container_tensor;

typedef struct coli_container {
	char *dir;                    /* model directory (owned) */
	coli_config config;
	char quant_dense[16];         /* names as in the manifest */
	char quant_experts[16];
	char quant_mtp[16];
	char fingerprint[65];         /* sha256 hex identifying this container
	                               * (hash of the manifest bytes) */
	/* resident tensors, loaded into RAM at open */
	coli_container_tensor *tensors;
	int n_tensors;
	size_t dense_bytes;           /* sum of resident tensor bytes */
	size_t dense_cache_dropped;   /* bytes of dense files dropped from the
	                               * page cache after reading (drop_cache) */
	/* routed experts */
	int expert_qtype;
	size_t expert_record_size;    /* bytes, multiple of 4096 */
	size_t expert_part_offset[3]; /* offset of gate/up/down in a record */
	char **expert_shard_paths;    /* [num_hidden_layers]; NULL for dense layers */
	uint64_t *expert_shard_sizes; /* expected file size of each shard */
	char **expert_shard_sha256;   /* hex, for mirror validation */
	void *priv;                   /* implementation detail (json, buffers) */
	/* Added by convert (compatible): shape of each expert part, from the
	 * manifest's experts.parts (gate/up: I x H, down: H x I). */
	int expert_part_rows[3];
	int expert_part_cols[3];
	char quant_embed[16];         /* quant.embed / quant.lm_head of the manifest */
	char quant_lm_head[16];
	/* Set by coli_container_open: the expert store checks each record's
	 * scales when it reads one (coli_container_check_expert). Hand-built
	 * containers of the store tests hold arbitrary bytes and leave it 0. */
	int check_experts;
	/* Version 2 (colitop-model(5)): the manifest's CRC-32C of every
	 * expert record, expert_crc[layer][e] (NULL for dense layers; the
	 * whole array NULL for version 1 and hand-built containers). The
	 * expert store verifies each record it reads from disk against it. */
	int version;                  /* the manifest's format version */
	uint32_t **expert_crc;
} coli_container;

typedef struct coli_container_opts {
	int load_mtp;      /* also load mtp/ tensors */
	int verify;        /* verify sha256 of every dense file (slow; doctor) */
	int skip_load;     /* validate only: tensors' data stays NULL (coli info) */
	int drop_cache;    /* drop each dense file from the page cache once read
	                    * (posix_fadvise DONTNEED): inside a memory cgroup
	                    * it is charged to the group and competes with the
	                    * expert cache; outside, it speeds up the next load */
	int no_checksums;  /* skip the CRC-32C check of resident tensors at
	                    * load (COLI_VERIFY_CHECKSUMS=0, benchmarks) */
} coli_container_opts;

/* Open a container: parse + validate the manifest, load resident tensors
 * (one 64-byte aligned allocation per file; every tensor offset is
 * 64-aligned). Errors name the file, key or tensor.
 * Refuses unknown format versions and files whose size does not match. */
int coli_container_open(const char *dir, const coli_container_opts *opts,
			coli_container **out, coli_err *err);
void coli_container_free(coli_container *c);

/* Find a resident tensor by HF name; NULL when absent. */
const coli_container_tensor *coli_container_find(const coli_container *c, const char *name);
/* As a matrix view; returns -ENOENT (with err) when missing or mis-shaped. */
int coli_container_qmat(const coli_container *c, const char *name, int rows, int cols,
			coli_qmat *out, coli_err *err);
/* View of one part of an expert record held in `record`. */
coli_qmat coli_container_expert_part(const coli_container *c, const void *record, int part);
/* The part (COLI_EXPERT_GATE/UP/DOWN) of an expert record whose scales fail
 * coli_quant_check_rows, or -1 when the record is sound. */
int coli_container_check_expert(const coli_container *c, const void *record);
/* 1 when the container carries CRC-32C checksums (format version 2). */
static inline int coli_container_has_checksums(const coli_container *c)
{
	return c->version >= 2;
}
/* Byte offset of expert `e` inside its layer's shard. */
static inline uint64_t coli_container_expert_offset(const coli_container *c, int e)
{
	return (uint64_t)e * c->expert_record_size;
}

#endif
