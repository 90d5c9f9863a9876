/* model.h - the model (weights, bound once at load) and per-sequence state.
 *
 * Lifetimes, as in llama2.c: coli_model holds the config, views into the
 * container's resident tensors, the expert store and the compute pool; it
 * is read-only after coli_model_open. coli_state holds one sequence's
 * compressed KV cache and every scratch buffer the forward pass needs, all
 * allocated in coli_state_new so the per-token path allocates nothing.
 *
 * Owner: the engine thread (or the single thread of a CLI command). */
#ifndef COLI_MODEL_H
#define COLI_MODEL_H

#include <stdint.h>

#include "coli_err.h"
#include "model_container.h"
#include "expert_store.h"
#include "quant_kernels.h"
#include "model_config.h"

typedef struct coli_layer_weights {
	int is_moe;
	const float *attn_norm;      /* (H) input_layernorm */
	const float *ffn_norm;       /* (H) post_attention_layernorm */
	/* MLA */
	coli_qmat q_a;               /* (q_lora, H) when q_lora_rank > 0 */
	const float *q_a_norm;       /* (q_lora) */
	coli_qmat q_b;               /* (heads*(nope+rope), q_lora) */
	coli_qmat q;                 /* (heads*(nope+rope), H) when q_lora_rank == 0 */
	coli_qmat kv_a;              /* (kv_lora+rope, H) */
	const float *kv_a_norm;      /* (kv_lora) */
	coli_qmat kv_b;              /* (heads*(nope+v), kv_lora): W_UK | W_UV per head */
	coli_qmat o;                 /* (H, heads*v) */
	/* DSA lightning indexer, layers that run their own (has_indexer) */
	int has_indexer;
	coli_qmat idx_wq_b;          /* (index_heads*index_dim, q_lora) */
	coli_qmat idx_wk;            /* (index_dim, H) */
	const float *idx_k_norm;     /* (index_dim) LayerNorm weight */
	const float *idx_k_bias;     /* (index_dim) LayerNorm bias */
	coli_qmat idx_w;             /* (index_heads, H) weights_proj, f32 */
	/* dense FFN (layers < first_k_dense_replace) */
	coli_qmat gate, up, down;    /* (I,H) (I,H) (H,I) */
	/* MoE */
	coli_qmat router;            /* (E, H), f32 */
	const float *router_bias;    /* (E) e_score_correction_bias, may be NULL */
	coli_qmat sh_gate, sh_up, sh_down; /* shared experts (Is,H) (Is,H) (H,Is) */
	int has_shared;
	/* routed experts held as resident tensors instead of the expert store
	 * (the MTP layer): (E, 3) gate/up/down; NULL for store-backed layers */
	coli_qmat *res_experts;
} coli_layer_weights;

/* The MTP module (DeepSeek-V3 multi-token prediction, layer index
 * num_hidden_layers): predicts token t+2 from the main model's hidden
 * state at t (after the final norm) and the embedding of token t+1. */
typedef struct coli_mtp_weights {
	const float *enorm;          /* (H) */
	const float *hnorm;          /* (H) */
	coli_qmat eh_proj;           /* (H, 2H) input [enorm(embed); hnorm(hidden)] */
	coli_qmat embed;             /* (V, H) its own copy, or the model's */
	const float *head_norm;      /* (H) shared_head.norm */
	coli_qmat head;              /* (V, H) shared_head.head, or lm_head */
} coli_mtp_weights;

/* Activations entering the matrix products: f32 (the default: exact, no
 * silent precision change) or int8 per block of 64 (opt-in, faster int4
 * and int8 products for ~0.5% activation error; quant_kernels_q8.h). */
enum coli_act_quant { COLI_ACT_F32 = 0, COLI_ACT_Q8 = 1 };
/* "f32" / "q8" -> the enum; -1 for anything else. */
int coli_act_quant_parse(const char *name);
const char *coli_act_quant_name(int act_quant);

typedef struct coli_model_opts {
	int threads;                 /* <= 0: online cores */
	int act_quant;               /* enum coli_act_quant; the default comes
	                              * from $COLI_ACT_QUANT (f32 when unset or
	                              * not understood) */
	int mtp;                     /* load the MTP module (its experts stay
	                              * resident: RAM), when the model has one */
	expert_store_opts store;
} coli_model_opts;

void coli_model_opts_default(coli_model_opts *o);

typedef struct coli_model {
	coli_config cfg;
	coli_container *container;   /* owned */
	coli_layer_weights *layers;  /* (num_hidden_layers + n_mtp) */
	int n_mtp;                   /* 1 when the MTP module is loaded */
	coli_mtp_weights mtp;
	coli_qmat embed;             /* (V, H) */
	const float *final_norm;     /* (H) */
	coli_qmat lm_head;           /* (V, H) */
	expert_store *store;         /* owned */
	coli_pool *pool;             /* owned */
	int act_quant;               /* enum coli_act_quant */
	/* RoPE tables: inv_freq (rope/2) and the YaRN magnitude factor */
	float *rope_inv_freq;
	float rope_mscale;           /* multiplies cos/sin (YaRN _mscale) */
	float softmax_scale;         /* qk_head_dim^-0.5 * mscale^2 */
} coli_model;



int coli_model_open(const char *dir, const coli_model_opts *o, coli_model **out, coli_err *err);
void coli_model_free(coli_model *m);
/* The checks of coli_model_open that need no weights: every tensor the
 * forward pass binds is present with the shape the config implies (and
 * the MTP module's when `mtp` and the config has one; the container must
 * then be opened with load_mtp). Used by coli doctor; coli_model_open runs
 * the same code. */
int coli_model_check(const coli_container *c, int mtp, coli_err *err);
/* model_bind.c, for model.c: bind m->container's tensors into m->layers
 * (allocated here; m->cfg and m->n_mtp set by the caller) / free them. */
int coli_model_bind(coli_model *m, coli_err *err);
void coli_model_unbind(coli_model *m);

/* Per-token routing observed by the last forward call (for telemetry and
 * tests): experts and weights of the last position, per MoE layer. */
typedef struct coli_routing {
	int *experts;                /* (layers, topk) */
	float *weights;              /* (layers, topk) */
} coli_routing;

/* Where forward time went, accumulated over calls (seconds). The expert
 * store reports the part of `moe` spent waiting for the disk. */
/* The parts of a forward step, for the per-part breakdown (coli bench's
 * decode.breakdown), in CPU seconds of the process (all threads). The
 * attention tasks' CPU time (q_b, absorb, attend, w_uv run interleaved
 * head by head on every thread) is shared out in proportion to each
 * part's summed per-task wall time. */
enum coli_part {
	COLI_PART_Q_A_KV_A,          /* attention norm, q_a + kv_a (+ the indexer's
	                              * key projection) products, q_a norm, q_b's
	                              * input, the new KV row */
	COLI_PART_INDEXER,           /* DSA indexer: query products, scores, selection */
	COLI_PART_Q_B,               /* q_b (per head, in the attention tasks) */
	COLI_PART_ABSORB,            /* q_nope through W_UK (and the query's rope) */
	COLI_PART_ATTEND,            /* scores, softmax, weighted sum of latents */
	COLI_PART_W_UV,              /* latents through W_UV */
	COLI_PART_O_PROJ,            /* o_proj and the residual add */
	COLI_PART_DENSE_FFN,         /* gate, up, down of the dense layers */
	COLI_PART_ROUTER,            /* router products and expert choice (and the
	                              * next layer's prediction) */
	COLI_PART_EXPERTS,           /* routed + shared experts, waits for reads */
	COLI_PART_LM_HEAD,           /* final norm and lm_head */
	COLI_PART_COUNT
};
/* "q_a_kv_a", "indexer", ... (the JSON names); NULL out of range. */
const char *coli_part_name(int part);

typedef struct coli_timing {
	double attention;            /* includes the indexer's part */
	double indexer;              /* DSA indexer: products, scores, selection */
	double moe;                  /* routing, expert fetch + matmuls, shared */
	double dense_ffn;
	double other;                /* embedding, final norm, lm_head */
	double total;
	double part[COLI_PART_COUNT]; /* enum coli_part, CPU seconds (all
	                               * threads; the rest is embedding, norms,
	                               * residual adds) */
} coli_timing;

typedef struct coli_state coli_state;

/* One sequence's compressed KV cache (for batching several sequences: the
 * engine keeps one per slot). */
typedef struct coli_seq coli_seq;
int coli_seq_new(const coli_model *m, int cap, coli_seq **out, coli_err *err);
void coli_seq_free(coli_seq *q);
int coli_seq_pos(const coli_seq *q);
int coli_seq_capacity(const coli_seq *q);
/* Grow the RAM rows to cap (never shrinks; rows kept). Allocates: call
 * at admission, not inside a step. */
int coli_seq_reserve(coli_seq *q, int cap, coli_err *err);
/* Bytes the sequence holds (its KV rows and this struct). */
size_t coli_seq_bytes(const coli_seq *q);
/* KV bytes one row of a sequence of this model holds. */
size_t coli_seq_row_bytes(const coli_model *m);
void coli_seq_rewind(coli_seq *q, int n);
/* The MTP layer's positions (rows (hidden_i, token_i+1) for i < mtp_pos).
 * coli_seq_rewind also rewinds them; rewind_mtp rewinds them alone (the
 * speculative rows of chained drafts). mtp_skip zeroes the rows from
 * mtp_pos up to n and sets mtp_pos = n: positions whose hidden state is
 * gone (drafting was off, a restored session) become empty rows the MTP
 * attention reads as zero keys, so later drafts can still run. Returns 0,
 * or -EINVAL without an MTP layer, with spilled rows or beyond the
 * capacity. main_layers: the model's num_hidden_layers. */
int coli_seq_mtp_pos(const coli_seq *q);
void coli_seq_rewind_mtp(coli_seq *q, int n);
int coli_seq_mtp_skip(coli_seq *q, int n, int main_layers);
/* (capacity, kv_lora+rope) rows of one layer in RAM: row r holds position
 * base + r, valid for base + r < pos. */
float *coli_seq_kv(coli_seq *q, int layer);
/* (capacity, index_head_dim) DSA index keys of one layer, laid out like
 * its rows; NULL for a layer that runs no indexer of its own (shared
 * layers, models without an indexer). */
float *coli_seq_index_keys(coli_seq *q, int layer);
/* Where a layer's index keys are in the persisted state: after the
 * num_hidden_layers attention parts, one part per full indexer layer in
 * layer order (the layer's KV "slot" for spill_read and session files). */
int coli_config_index_slot(const coli_config *c, int layer);

/* Long contexts beyond RAM: positions before `base` live elsewhere (the
 * session file) and are read back on demand, one layer at a time, by
 * spill_read(ctx, slot, runs, n_runs, out) -> 0 or a negative errno; slot
 * is the layer for its attention rows, coli_config_index_slot(layer) for
 * its index keys; runs[2i], runs[2i + 1]: the first position and length of
 * run i (ascending, disjoint, before base); each row lands at its
 * position (out + pos * the slot's width). With the DSA indexer only the
 * rows the chunk's selection takes are asked for. */
typedef int (*coli_seq_spill_fn)(void *ctx, int slot, const int *runs, int n_runs, float *out);
void coli_seq_set_spill(coli_seq *q, coli_seq_spill_fn fn, void *ctx);
int coli_seq_base(const coli_seq *q);
/* Count each routed expert the sequence's rows choose into
 * counts[layer * n_routed_experts + expert] (num_hidden_layers rows of
 * the model's routed experts; caller-owned), or stop counting (NULL). */
void coli_seq_count_routes(coli_seq *q, uint32_t *counts);
/* Forget the oldest `shift` RAM rows (they must be readable through the
 * spill function): base += shift. */
int coli_seq_slide(coli_seq *q, int shift, coli_err *err);
/* Declare pos tokens of which the last (pos - base) rows are in RAM. */
int coli_seq_set_window(coli_seq *q, int base, int pos, coli_err *err);

/* max_ctx: the longest context any sequence evaluated with this state may
 * have (and the state's own sequence's RAM capacity); max_batch: rows per
 * forward call. */
int coli_state_new(const coli_model *m, int max_ctx, int max_batch, coli_state **out,
		   coli_err *err);
void coli_state_free(coli_state *s);
/* Bytes coli_state_new allocated for s apart from its own sequence: the
 * activations of max_batch rows, max_ctx-long score and spill rows, the
 * int8 activation scratch. What a step holds besides the model, the KV
 * and the expert store; the automatic expert budget reserves it
 * (expert_store_budget.h). The own sequence is KV, counted as such by
 * the callers that use it. 0 for NULL. */
size_t coli_state_scratch_bytes(const coli_state *s);
/* Forget everything after n tokens (n <= pos). */
void coli_state_rewind(coli_state *s, int n);
const coli_routing *coli_state_routing(const coli_state *s);
/* DSA models: keep, for every layer, the key positions the last row of
 * each forward call attended to (bench/indexer_precision.c compares them
 * across containers). 0, or -ENOMEM; -EINVAL without an indexer. */
int coli_state_trace_index(coli_state *s);
/* That selection of layer l (ascending, *n of them), or NULL with *n = -1
 * when the row attended to every key (its context within index_topk) or
 * tracing is off. Valid until the next forward call. */
const int *coli_state_index_selection(const coli_state *s, int layer, int *n);
/* The state's own sequence (what coli_forward appends to). */
coli_seq *coli_state_seq(coli_state *s);
const coli_timing *coli_state_timing(const coli_state *s);
/* Weight bytes one decode token reads in each part (enum coli_part):
 * every resident matrix the part streams, and for the experts
 * num_experts_per_tok expert records plus the shared experts per MoE
 * layer. The MTP layer is not counted. */
void coli_model_part_bytes(const coli_model *m, double bytes[COLI_PART_COUNT]);

/* Run tokens[0..n) at positions pos..pos+n, appending to the KV cache.
 * logits: NULL, or (n, vocab) when all_logits, else (vocab) for the last
 * position only. n may exceed max_batch (processed in chunks). */
int coli_forward(coli_model *m, coli_state *s, const int *tokens, int n, float *logits,
		 int all_logits, coli_err *err);

/* The same for any sequence (its capacity must not exceed the state's). */
int coli_forward_seq(coli_model *m, coli_state *s, coli_seq *q, const int *tokens, int n,
		     float *logits, int all_logits, coli_err *err);

/* MTP draft logits: for rows i in [0, n), from the main model's normed
 * hidden state hidden[i] at position mtp_pos + i and the token that
 * followed it, next[i]; appends to the sequence's MTP KV cache (a
 * separate layer of the same sequence). logits (n, vocab). */
int coli_forward_mtp(coli_model *m, coli_state *s, coli_seq *q, const float *hidden, const int *next,
		     int n, float *logits, coli_err *err);
/* The same with the head applied to the last n_logits rows only
 * (0 <= n_logits <= n): logits (n_logits, vocab). Afterwards
 * coli_state_hidden(s, row) for those rows is the module's own normed
 * output state (what a chained draft feeds back as the hidden state). */
int coli_forward_mtp_tail(coli_model *m, coli_state *s, coli_seq *q, const float *hidden, const int *next,
			  int n, float *logits, int n_logits, coli_err *err);
/* Normed final hidden state (H) of row `row` of the last forward call's
 * last chunk (all_logits) or of its last position (row 0, last-only). */
const float *coli_state_hidden(const coli_state *s, int row);
/* After a forward call of one chunk (n <= max_batch rows) without
 * all_logits: the normed final hidden states of all its rows, (n, H),
 * valid until the next forward call. */
const float *coli_state_final_hidden(const coli_model *m, coli_state *s, int n);

/* One decode step for n distinct sequences at once (n <= max_batch; a
 * sequence with spilled rows must be alone in its step):
 * tokens[i] is appended to seqs[i]; logits (n, vocab). Every weight and
 * every routed expert is fetched once for the whole batch. The logits of
 * each row equal what coli_forward gives that sequence alone. */
int coli_forward_seqs(coli_model *m, coli_state *s, coli_seq *const *seqs, const int *tokens,
		      int n, float *logits, coli_err *err);

/* One step evaluating counts[i] consecutive new tokens on each of n_seqs
 * distinct sequences (tokens: all rows, sequence by sequence; at most
 * max_batch rows; a sequence with spilled rows must be alone): the
 * speculative-decoding verify step. Every weight and routed expert is
 * fetched once for all rows; logits (rows, vocab), and each row's logits
 * equal those of evaluating its tokens one at a time. counts NULL: one row
 * each (coli_forward_seqs). */
int coli_forward_rows(coli_model *m, coli_state *s, coli_seq *const *seqs, const int *counts,
		      int n_seqs, const int *tokens, float *logits, coli_err *err);
/* The same step giving only each sequence's last row's logits, (n_seqs,
 * vocab): the engine's step, whose prompt chunks need none but the last
 * (prompt chunks of many requests and decode rows in one forward). */
int coli_forward_rows_last(coli_model *m, coli_state *s, coli_seq *const *seqs, const int *counts,
			   int n_seqs, const int *tokens, float *logits, coli_err *err);

#endif
