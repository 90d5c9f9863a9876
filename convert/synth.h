/* synth.h - random models of the real architecture, in Hugging Face layout.
 *
 * `coli synth` writes config.json, safetensors (single file or sharded with
 * an index; F32, BF16, F16, or FP8-e4m3 with 128x128 "<name>_scale_inv"
 * block scales like the official DeepSeek-V3 / GLM-5 releases),
 * tokenizer.json and tokenizer_config.json. Everything is a pure function
 * of the options and the seed: every tensor draws from its own PRNG stream
 * (splitmix64 seeded by seed and the tensor name, Box-Muller normals), so
 * the same options always give byte-identical files and changing the layer
 * count leaves the other tensors unchanged.
 *
 * Weights are scaled so activations stay O(1) through the layers: linear
 * weights N(0, 1/fan_in) (std 1/sqrt(fan_in)), embeddings N(0, 1), norm
 * weights 1 + N(0, 0.05^2), router bias N(0, 0.02^2); the router therefore
 * spreads tokens over many experts. Data is generated in bands of 128 rows,
 * so memory stays at a few MB whatever the model size. */
#ifndef COLI_SYNTH_H
#define COLI_SYNTH_H

#include <stdbool.h>
#include <stdint.h>

#include "coli_err.h"
#include "model_config.h"

typedef struct synth_opts {
	char preset[16];     /* "tiny", "glm5-tiny", "glm5-slice", "dsv3-slice" */
	coli_config cfg;     /* the architecture written to config.json */
	uint64_t seed;
	int dtype;           /* ST_F32, ST_BF16, ST_F16 or ST_F8_E4M3 */
	int n_shards;        /* 1 = model.safetensors */
	bool indexer;        /* write DSA indexer weights (glm_moe_dsa, deepseek_v32) */
	bool shared_indexer_weights; /* also in shared layers (unused there) */
	int index_schedule;  /* how config.json states cfg.index_types:
	                      * enum synth_index_schedule */
	bool dry_run;        /* config + tokenizer only, no weights */
	/* Told after each tensor written (done of total); NULL = nobody. The
	 * command prints progress with it; the library prints nothing. */
	void (*progress)(void *opaque, int done, int total);
	void *progress_opaque;
} synth_opts;

enum synth_index_schedule {
	SYNTH_INDEX_DERIVED = 0,  /* index_topk_freq / index_skip_topk_offset */
	SYNTH_INDEX_TYPES = 1,    /* an explicit indexer_types list */
	SYNTH_INDEX_PATTERN = 2,  /* an index_topk_pattern string */
};

/* Make the model a DSA one with index_topk k (a deepseek_v3 base becomes
 * deepseek_v32 with a small indexer), or drop the indexer (k = 0). */
void synth_set_index_topk(synth_opts *o, int k);
/* Resolve cfg.index_types from the schedule options (derived ones from
 * index_topk_freq / index_skip_topk_offset). */
void synth_resolve_index(synth_opts *o);

/* Fill `o` with a preset's defaults (seed 0, its default dtype, 1 shard). */
int synth_preset(const char *name, synth_opts *o, coli_err *err);

/* Enable YaRN with DeepSeek-V3's parameters (factor 40, original 4096,
 * beta 32/1, mscale 1/1), or disable rope scaling. */
void synth_set_yarn(synth_opts *o, bool on);

/* Check the shape is one the engine and the reference accept: -EINVAL and a
 * line naming the option otherwise. */
int synth_check(const synth_opts *o, coli_err *err);

/* Write the model into out_dir (created if missing). Prints nothing. */
int synth_write(const char *out_dir, const synth_opts *o, coli_err *err);

/* Sizes of the plan without writing anything. */
int synth_plan(const synth_opts *o, int *n_tensors, uint64_t *bytes, coli_err *err);

/* synth_tokenizer.c: the built-in byte-level BPE tokenizer. Its size is
 * fixed (SYNTH_TOKENIZER_SIZE ids: 0 = <｜begin▁of▁sentence｜>,
 * 1 = <｜end▁of▁sentence｜>, 256 byte tokens, learned merges, then a few
 * chat special tokens); vocab_size must be at least that. */
#define SYNTH_TOKENIZER_SIZE 512
#define SYNTH_BOS_ID 0
#define SYNTH_EOS_ID 1
int synth_tokenizer_write(const char *dir, coli_err *err);

#endif
