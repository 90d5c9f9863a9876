/* forward_state.h - layout of coli_state (private to the forward pass). */
#ifndef COLI_STATE_H
#define COLI_STATE_H

#include "quant_kernels_q8.h"
#include "model.h"

/* Attention over a prompt chunk takes up to COLI_ATTN_ROWS_MAX rows at a
 * time, so each block of cached rows is read once for all of them; their
 * scores (heads x rows x context floats) are held within
 * COLI_ATTN_SCORES_BYTES, or one row's when a single row needs more. */
#define COLI_ATTN_ROWS_MAX 8
#define COLI_ATTN_SCORES_BYTES ((size_t)16 << 20)

/* One sequence's compressed KV cache. */
struct coli_seq {
	int cap;                /* rows held in RAM */
	int pos;                /* tokens in the sequence */
	int mtp_pos;            /* positions in the MTP layer's KV (layer
	                         * n_layers - 1 when the model has MTP) */
	int base;               /* position of RAM row 0; rows before it were
	                         * spilled and are read back through spill_read */
	int n_layers;
	int kv_width;           /* kv_lora + rope */
	float **kv;             /* (layers) -> (cap, kv_width): latent | roped key */
	int index_width;        /* index_head_dim (0: no DSA indexer) */
	float **ikv;            /* (layers) -> (cap, index_width): the DSA index
	                         * key of each token, for layers that run their
	                         * own indexer; NULL for the others */
	coli_seq_spill_fn spill_read;
	void *spill_ctx;
	size_t bytes;           /* allocated by coli_seq_new, this struct included */
	uint32_t *route_counts; /* (layers, routed experts) or NULL: each row's
	                         * routed experts are counted here (the engine's
	                         * profile of the request being served; owned
	                         * by the engine slot) */
};

struct coli_state {
	int cap;                /* longest context the scratch serves (tokens) */
	int max_batch;          /* B: rows per forward chunk */
	int hidden;             /* H */
	int n_layers;
	int kv_width;
	coli_seq *own;          /* the state's own sequence (coli_forward) */
	size_t bytes;           /* allocated by coli_state_new but its own
	                         * sequence (coli_state_scratch_bytes) */
	float *old_kv;          /* (cap, kv_width) spilled rows of one layer */
	float *old_ikv;         /* (cap, index_dim) their index keys (full layers) */
	/* the rows of the chunk being evaluated: sequence and position */
	coli_seq **row_seq;     /* (B) */
	int *row_pos;           /* (B) */
	/* activations for one chunk of B positions */
	float *x;               /* (B, H) residual stream */
	float *xn;              /* (B, H) normed input of a block */
	float *qa;              /* (B, q_lora) */
	float *q;               /* (B, heads * qk_head_dim) */
	float *kva;             /* (B, kv_lora + rope) */
	float *qlat;            /* (heads, B, kv_lora): q_nope absorbed through W_UK */
	float *ctxlat;          /* (heads, B, kv_lora): attention-weighted latents */
	float *vhead;           /* (heads, B, v) */
	float *vout;            /* (B, heads * v) */
	float *absorb_tile;     /* (heads, qk_nope, 64) W_UK column groups (coli_qrows_tmul) */
	int attn_rows;          /* chunk rows attended to at once (<= COLI_ATTN_ROWS_MAX) */
	float *qcat;            /* (heads, attn_rows, kv_width) [absorbed q_nope; q_rope] */
	float *qb_xsum;         /* (B, q_lora / 64) block sums of q_b's input */
	float *scores;          /* (heads, attn_rows, cap) */
	/* DSA indexer (models with index_topk > 0) */
	float *idx_q;           /* (B, index_heads * index_dim) index queries */
	float *idx_k;           /* (B, index_dim) wk x, before its LayerNorm */
	float *idx_w;           /* (B, index_heads) head weights */
	float *idx_scores;      /* (cap) one row's score of every key */
	int *idx_order;         /* (cap) positions being selected */
	unsigned char *idx_mark; /* (cap) selected flags */
	int *spill_runs;        /* (cap + 2) runs of selected spilled rows
	                         * to read back (indexer_spill_runs) */
	int isel_cap;           /* min(index_topk, cap) */
	int *isel;              /* (B, isel_cap) selected positions, ascending,
	                         * in force for the current and following
	                         * shared layers */
	int *isel_n;            /* (B) count, or -1: every key (dense) */
	int *idx_kept;          /* (layers) keys kept for the last row */
	int *idx_context;       /* (layers) keys in its context */
	int *idx_trace;         /* (layers, isel_cap) the last row's selection,
	                         * when coli_state_trace_index is on; else NULL */
	int *idx_trace_n;       /* (layers) its count, -1: every key */
	float *ffn_a, *ffn_b;   /* (B, max FFN width) */
	float *ffn_out;         /* (B, H) */
	float *router_logits;   /* (B, E) */
	int *sel;               /* (B, topk) chosen experts, ascending */
	float *sel_w;           /* (B, topk) their weights */
	float *moe_out;         /* (B, topk, H) each chosen expert's output */
	int *union_experts;     /* (E) experts used by the chunk, ascending */
	int *union_tmp;         /* (2 E) moe_interleave's scratch */
	int *tok_slot;          /* (B * topk) (b * topk + k) routed to the current expert */
	float *exp_in;          /* (B, H) gathered inputs for one expert */
	float *exp_a, *exp_b;   /* (B, moe_I) */
	float *exp_out;         /* (B, H) */
	const void **recs;      /* (E) expert records of the current group */
	int *predict;           /* (E) predicted experts for the next layer */
	float *pred_scores;     /* (E) */
	float *route_tmp;       /* (3E) scratch for moe_route */
	unsigned char *route_taken; /* (2E) scratch for moe_route */
	int *expert_rows;       /* (E) positions of the chunk routed to each expert */
	float *pred_w;          /* (topk) */
	float *logits_h;        /* (B, H) final-normed states for lm_head */
	float *mtp_cat;         /* (B, 2H) MTP input [enorm(embed); hnorm(hidden)] */
	coli_q8act *head_q8;    /* (heads) small scratches for the W_UV products
	                         * inside attention tasks (q8 mode only) */
	int n_head_q8;
	coli_q8act q8act;       /* (B, widest matmul input) int8 copy of a matmul's
	                         * input, when m->act_quant is COLI_ACT_Q8 */
	double *task_time;      /* (heads, 4) seconds each attention task spent
	                         * in q_b, absorb, attend, w_uv (the breakdown) */
	coli_routing routing;   /* (layers, topk) of the last position */
	coli_timing timing;
};

/* forward.c: every layer over the chunk's n rows, whose sequence and
 * position are s->row_seq / s->row_pos (forward_rows.c fills them for
 * rows of several sequences). */
int forward_chunk(coli_model *m, coli_state *s, const int *tokens, int n, coli_err *err);

#endif
