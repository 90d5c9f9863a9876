/* convert.h - `coli convert`: Hugging Face checkpoint -> model container.
 *
 * The conversion streams one tensor at a time (peak memory is a few
 * tensors), writes each output file as NAME.tmp -> fsync -> rename, records
 * finished files (size + sha256) in OUT/.convert-state.json, and writes
 * manifest.json last: its presence means the container is complete. A run
 * interrupted at any point (even kill -9) and started again with the same
 * arguments keeps every file whose size and sha256 still verify and redoes
 * the rest. See coli-convert(1) and colitop-model(5). */
#ifndef COLI_CONVERT_H
#define COLI_CONVERT_H

#include <stdint.h>

#include "coli_err.h"

/* Tensor classes: the unit in which quantization error is published. */
enum convert_class {
	CONVERT_CLS_ATTENTION = 0,
	CONVERT_CLS_SHARED_EXPERTS,
	CONVERT_CLS_DENSE_FFN,
	CONVERT_CLS_ROUTERS,
	CONVERT_CLS_EXPERTS,
	CONVERT_CLS_EMBED,
	CONVERT_CLS_LM_HEAD,
	CONVERT_CLS_MTP,
	CONVERT_CLS_NORMS,   /* vectors: norms, biases (always f32) */
	CONVERT_CLS_OTHER,   /* tensors the converter does not know (kept f32) */
	CONVERT_CLS_INDEXER, /* DSA indexer wq_b / wk (weights_proj: routers, f32) */
	CONVERT_CLS_COUNT
};

typedef struct convert_opts {
	const char *src_dir;   /* Hugging Face checkpoint directory */
	const char *out_dir;   /* container directory (created) */
	int quant;             /* enum coli_qtype: dense matrices + routed experts */
	int mtp_quant;         /* enum coli_qtype: the MTP layer(s) */
	int force;             /* overwrite a complete container / stale state */
	int threads;           /* quantization threads; <= 0: online cores */
	int embed_quant_set;   /* 1: embed_tokens/lm_head use embed_quant instead of */
	int embed_quant;       /*    the policy (int8, f32 with --quant f32) */
	int indexer_quant_set; /* 1: the DSA indexer's wq_b / wk use indexer_quant */
	int indexer_quant;     /*    instead of the policy (convert_indexer_qtype) */
	int delete_source;     /* free each source shard once every file reading it
	                        * is written; remove the shards at the end */
	const char *staging;   /* an entry of OUT that is not foreign (`coli pull`'s
	                        * download directory), or NULL */
	const char *source_id; /* identifies the source beyond its files' sizes
	                        * (`coli pull`: the commit), recorded in the resume
	                        * state; NULL for none */
} convert_opts;

/* Accumulated error of one class: sums over every element converted. */
typedef struct convert_err_acc {
	double sse, ssv;            /* sum (w - q(w))^2, sum w^2 */
	double sse_alt, ssv_alt;    /* same for the alternative format (sampled rows) */
	int64_t n;                  /* elements measured */
} convert_err_acc;

typedef struct convert_summary {
	int files_total, files_written, files_skipped;
	int n_tensors;              /* resident tensors (dense + mtp) */
	int n_expert_records;
	int n_f32_fallback;         /* matrices kept f32 because cols % 64 != 0 */
	uint64_t bytes_total;       /* size of the container (all files) */
	uint64_t bytes_written;     /* written by this run */
	long peak_rss_kb;           /* getrusage ru_maxrss */
	double elapsed_s;
	convert_err_acc err[CONVERT_CLS_COUNT];
} convert_summary;

void convert_opts_default(convert_opts *o);
/* The DSA indexer's projections' qtype: --indexer-quant when given, else
 * the policy (bench/README.md, "Indexer precision", has the figures). */
int convert_indexer_qtype(const convert_opts *o);
int convert_run(const convert_opts *o, convert_summary *sum, coli_err *err);

/* "attention", "shared_experts", ... as in the manifest's quant_error. */
const char *convert_class_name(int cls);
/* Name of the alternative figure recorded beside rel_rms for a class at a
 * given qtype ("rel_rms_sym_int4", "rel_rms_int4"), or NULL when none. */
const char *convert_alt_name(int cls, int qtype);
/* sqrt(sse/ssv), 0 when nothing was measured. */
double convert_rel_rms(double sse, double ssv);


/* ---- Internals shared by convert*.c (not for other modules) ---- */
#ifdef COLI_CONVERT_INTERNAL
#include <jansson.h>

#include "model_config.h"
#include "ingest_safetensors.h"

typedef struct convert_tensor {
	const st_tensor *src;
	int cls;                   /* enum convert_class */
	int qtype;                 /* enum coli_qtype chosen by the policy */
	int rows, cols;            /* vectors: cols = 1 */
	int fallback;              /* wanted quantized, kept f32: cols % 64 != 0 */
	uint64_t offset, nbytes;   /* inside its file (offset 64-aligned) */
	uint32_t crc32c;           /* of the nbytes written (a result) */
} convert_tensor;

enum { CONVERT_FILE_TENSORS = 0, CONVERT_FILE_EXPERTS, CONVERT_FILE_COPY };

typedef struct convert_file {
	char path[128];            /* container-relative, e.g. "dense/layer-003.bin" */
	int kind;
	int layer;                 /* -1 when not a layer file */
	convert_tensor *t;         /* TENSORS */
	int n_t, cap_t;
	const st_tensor **experts; /* EXPERTS: [n_experts][3] gate, up, down */
	char *copy_src;            /* COPY: absolute/relative source path */
	uint64_t size;             /* expected size */
	/* results */
	char sha256[65];
	convert_err_acc err[CONVERT_CLS_COUNT];
	uint32_t *rec_crc;         /* EXPERTS: CRC-32C of each record (allocated
	                            * by convert_file_write / convert_file_digest) */
} convert_file;

typedef struct convert_plan {
	coli_config cfg;
	char config_sha256[65];    /* of the source config.json */
	st_checkpoint *ck;
	convert_file *files;
	int n_files, cap_files;
	int n_tensors;             /* resident */
	int n_experts;
	int expert_qtype;
	int expert_fallback;
	uint64_t record_size;
	uint64_t part_off[3];
	int part_rows[3], part_cols[3];
	int embed_qtype, lm_head_qtype;
	int indexer_qtype;          /* the DSA indexer's wq_b / wk (if any) */
	int n_fallback;
	int n_mtp_layers;          /* present in the checkpoint */
	size_t max_tensor_elems;   /* largest f32 scratch needed */
} convert_plan;

int convert_plan_build(const convert_opts *o, convert_plan *p, coli_err *err);
/* The checkpoint's FP8 convention is one st_read_f32 applies right, or an
 * error saying why not (convert_fp8.c): cfg is config.json's path. */
int convert_check_fp8(const char *cfg, const st_checkpoint *ck, coli_err *err);
void convert_plan_free(convert_plan *p);
struct coli_pool;
/* Write one output file (to PATH.tmp, fsync, rename); fills f->sha256 and
 * f->err. *written += bytes written. pool may be NULL (one thread). */
int convert_file_write(const convert_plan *p, convert_file *f, const char *out_dir,
		       struct coli_pool *pool, uint64_t *written, coli_err *err);
/* Read back a finished file of an earlier run: its sha256 (hex) and the
 * CRC-32C of each tensor or record in it, in one pass, so a file kept on
 * resume carries the same checksums as a rewritten one. */
int convert_file_digest(const convert_plan *p, convert_file *f, const char *path, char sha256[65],
			coli_err *err);
/* Files copied into tokenizer/ (tokenizer*, vocab.json, merges.txt, ...). */
int convert_is_tokenizer_file(const char *name);
/* Call fn for every source tensor file f reads (scale_inv companions
 * included; a tensor may be reported twice). */
void convert_file_each_source(const convert_plan *p, const convert_file *f,
			      void (*fn)(const st_tensor *t, void *ctx), void *ctx);

/* A conversion driven file by file (convert_run, and `coli pull`, which
 * writes each file once the shards it reads have arrived). */
typedef struct convert_session {
	const convert_opts *o;
	convert_plan p;
	int planned;
	json_t *args, *files;      /* resume state: arguments, finished files */
	json_t *released;          /* --delete-source: shards freed (names) */
	unsigned char *done;       /* per file: 0 unknown, 1 verified (kept), 2 stale,
	                            * 3 absent, 4 finished by this run */
	int *last_reader;          /* per source shard: last file (plan order) reading it */
	struct coli_pool *pool;
	double t0;
	convert_summary sum;
} convert_session;

/* Plan, check OUT, load the resume state. convert_end() in every case. */
int convert_begin(const convert_opts *o, convert_session *s, coli_err *err);
/* Is file i finished (this run, or an earlier one whose size and sha256
 * verify)? The verification is done once. */
int convert_file_done(convert_session *s, int i);
/* Keep or write file i and record it in the resume state. */
int convert_file_ensure(convert_session *s, int i, coli_err *err);
/* Write manifest.json, remove the state, fill the summary. */
int convert_finish(convert_session *s, const char *src_label, coli_err *err);
void convert_end(convert_session *s, convert_summary *sum);

/* Free a safetensors file's data but keep its header and its size (the
 * file becomes sparse): the checkpoint still opens and plans, while the disk
 * space is returned. */
int convert_shard_release(const char *path, uint64_t header_end, coli_err *err);

/* Assemble manifest.json (as a JSON object) from the finished plan. */
json_t *convert_manifest_build(const convert_opts *o, const convert_plan *p,
			       const char *src_label);
#endif

#endif
