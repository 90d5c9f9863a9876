/* forward_attn.c - MLA attention over the compressed KV cache, for a chunk
 * of rows of one layer (forward.c runs the layers). Attention always uses
 * the absorbed form:
 *   score(t, j) = (W_UK^T q_nope_t) . latent_j + q_rope_t . k_rope_j
 *   out_t       = W_UV (sum_j p_j latent_j)
 * which equals attention over the expanded keys/values (k_nope = W_UK
 * latent, v = W_UV latent) but never expands the cache: the per-token cost
 * is O(context * kv_lora) per head. The heads' W_UV products run inside the
 * attention tasks (q8 with the state's per-head scratch). The W_UK
 * absorption (a transposed product, forward_vec_ops.c) runs per head in
 * pool tasks and stays f32. With the DSA indexer (forward_indexer.c) a row
 * attends to the keys it selected. */
#include "config.h"

#include <errno.h>
#include <float.h>
#include <math.h>
#include <string.h>

#include "forward_attn.h"
#include "forward_indexer.h"
#include "forward_matmul.h"
#include "forward_ops.h"
#include "forward_state.h"
#include "forward_vec_ops.h"

struct attn_job {
	const coli_model *m;
	coli_state *s;
	const coli_layer_weights *w;
	int layer;
	int n;      /* rows in the chunk (s->row_seq / s->row_pos) */
	int heads_per_task;
	int qb_in_tasks; /* each task computes its heads' rows of q_b */
};

/* One head: absorb q_nope through W_UK for every position of the chunk
 * (qlat_b = W_UK_h^T q_nope_b). */
static void attn_absorb_head(void *arg, int h)
{
	struct attn_job *j = arg;
	const coli_config *c = &j->m->cfg;
	coli_state *s = j->s;
	const int L = c->kv_lora_rank, nope = c->qk_nope_head_dim;
	const int qk = coli_config_qk_head_dim(c), B = s->max_batch;
	const int qrow = c->num_attention_heads * qk;
	float *tile = s->absorb_tile + (size_t)h * nope * COLI_QK;
	coli_qrows_tmul(&j->w->kv_b, h * (nope + c->v_head_dim), nope, s->q + (size_t)h * qk, (size_t)qrow, j->n,
			s->qlat + (size_t)h * B * L, (size_t)L, tile);
}

/* Rows [r0, r0 + n) of w towards L2 (a prefetch per cache line). */
static void attn_prefetch_rows(const coli_qmat *w, int r0, int n)
{
	const size_t rb = coli_qtype_row_bytes(w->qtype, w->cols);
	const char *p = (const char *)w->data + (size_t)r0 * rb;
	for (size_t o = 0; o < (size_t)n * rb; o += 64)
		__builtin_prefetch(p + o, 0, 2);
}

/* Whether q_b runs with int8 activations (q8 mode, quantized weights),
 * as coli_model_matmul would run it. */
static int attn_qb_q8(const coli_model *m, const coli_layer_weights *w)
{
	return m->act_quant == COLI_ACT_Q8 && w->q_b.qtype != COLI_Q_F32;
}

/* Positions per block: a block's cached rows (16 x 576 floats = 36 KiB)
 * stay in L1 while every head of the task reads them, so the cache (2.4
 * MiB a layer at 1k tokens, more than L2) is streamed once per task, not
 * once per head. Tasks take as many heads as give two per thread (at most
 * ATTN_HEADS_MAX): measured on the GLM-5 slice at 1k tokens of context,
 * 4 heads per task 21.1 ms of attention a token, 8 21.2, 16 19.3. */
#define ATTN_POS_BLOCK 16
#define ATTN_HEADS_MAX 32

/* Rows [p0, p1) of the chunk row's cache, p1 clipped so the block does not
 * straddle the spilled/RAM boundary: returns the first row, sets *p1. */
static const float *attn_rows(const coli_state *s, const float *ram, int base, int p0, int end, int *p1)
{
	const int W = s->kv_width;
	int e = p0 + ATTN_POS_BLOCK < end ? p0 + ATTN_POS_BLOCK : end;
	if (p0 < base) {
		*p1 = e < base ? e : base;
		return s->old_kv + (size_t)p0 * W;
	}
	*p1 = e;
	return ram + (size_t)(p0 - base) * W;
}

/* Head h's query of the sub-block's row r ([absorbed q_nope; roped
 * q_rope], kv_width floats) and its scores (cap floats). */
static inline float *attn_qcat(const coli_state *s, int h, int r)
{
	return s->qcat + ((size_t)h * (size_t)s->attn_rows + (size_t)r) * (size_t)s->kv_width;
}

static inline float *attn_scores(const coli_state *s, int h, int r)
{
	return s->scores + ((size_t)h * (size_t)s->attn_rows + (size_t)r) * (size_t)s->cap;
}

/* Scores -> probabilities: exp(score - max), summed in double in
 * ascending position, each times the float reciprocal of the sum. */
static void attn_softmax(float *sc, int n, float mx)
{
	double sum = 0.0;
	for (int i = 0; i < n; i++) {
		sc[i] = expf(sc[i] - mx);
		sum += sc[i];
	}
	const float inv = (float)(1.0 / sum);
	for (int i = 0; i < n; i++)
		sc[i] *= inv;
}

/* Chunk row b (slot r of the sub-block) of heads [h0, h1) over the keys
 * the indexer selected (s->isel, ascending positions): the dense loop's
 * operations per key, in the same order and in blocks of ATTN_POS_BLOCK
 * selected rows read where they lie (coli_vec_dot_gather /
 * coli_vec_wsum_gather: coli_vec_dot's and coli_vec_wsum's bits), so a
 * block stays in L1 for every head of the task and nothing of the cache
 * is copied. */
static void attn_sparse_row(struct attn_job *j, int b, int r, int h0, int h1, float *mx)
{
	const coli_config *c = &j->m->cfg;
	coli_state *s = j->s;
	const int L = c->kv_lora_rank, W = s->kv_width, B = s->max_batch, AW = coli_config_attn_width(c);
	const coli_seq *q = s->row_seq[b];
	const float *ram = q->kv[j->layer];
	const int *sel = s->isel + (size_t)b * s->isel_cap, ns = s->isel_n[b];
	const float *rows[ATTN_POS_BLOCK];
	for (int i0 = 0; i0 < ns; i0 += ATTN_POS_BLOCK) {
		const int nb = ns - i0 < ATTN_POS_BLOCK ? ns - i0 : ATTN_POS_BLOCK;
		for (int i = 0; i < nb; i++) {
			const int p = sel[i0 + i];
			rows[i] = p < q->base ? s->old_kv + (size_t)p * W : ram + (size_t)(p - q->base) * W;
		}
		for (int h = h0; h < h1; h++) {
			float *sc = attn_scores(s, h, r) + i0;
			coli_vec_dot_gather(attn_qcat(s, h, r), rows, nb, AW, sc);
			for (int i = 0; i < nb; i++) {
				const float d = sc[i] * j->m->softmax_scale;
				sc[i] = d;
				if (d > mx[h - h0])
					mx[h - h0] = d;
			}
		}
	}
	for (int h = h0; h < h1; h++) {
		attn_softmax(attn_scores(s, h, r), ns, mx[h - h0]);
		memset(s->ctxlat + ((size_t)h * B + b) * L, 0, sizeof(float) * L);
	}
	for (int i0 = 0; i0 < ns; i0 += ATTN_POS_BLOCK) {
		const int nb = ns - i0 < ATTN_POS_BLOCK ? ns - i0 : ATTN_POS_BLOCK;
		for (int i = 0; i < nb; i++) {
			const int p = sel[i0 + i];
			rows[i] = p < q->base ? s->old_kv + (size_t)p * W : ram + (size_t)(p - q->base) * W;
		}
		for (int h = h0; h < h1; h++)
			coli_vec_wsum_gather(s->ctxlat + ((size_t)h * B + b) * L, attn_scores(s, h, r) + i0, rows, nb, L);
	}
}

/* Keys per score tile and latent columns per weighted-sum slice: a tile
 * of 4 cached rows (9 KiB at GLM-5's 576 numbers) or a 16-row block's
 * 128-column slice (8 KiB) stays in L1 while the queries of every row and
 * head of the sub-block pass over it. coli_vec_dot_rows gives each key
 * coli_vec_dot's bits however the keys are grouped, and coli_vec_wsum
 * sums each column on its own in ascending position, so neither the
 * tiles nor the slices change a bit. */
#define ATTN_KEY_TILE 4
#define ATTN_WSUM_COLS 128

/* Dense chunk rows bs[0..nr) of one sequence (slots bs[i] - b0 of the
 * sub-block), heads [h0, h1): the scores over the cache, the softmax and
 * the weighted sum of latents. The cache is walked once for all of them,
 * block by block (ATTN_POS_BLOCK positions, split at the spilled/RAM
 * boundary), each row taking the part of a block its position covers
 * (causal: keys <= its position). Per (row, head) the operations and
 * their order are those of a loop over that row alone. */
static void attn_dense_rows(struct attn_job *j, const int *bs, int nr, int b0, int h0, int h1,
			    float (*mx)[ATTN_HEADS_MAX])
{
	const coli_model *m = j->m;
	coli_state *s = j->s;
	const int L = m->cfg.kv_lora_rank, W = s->kv_width, B = s->max_batch;
	const int AW = coli_config_attn_width(&m->cfg);
	const coli_seq *q = s->row_seq[bs[0]];
	/* position p is RAM row p - base, or spilled row p read back into
	 * old_kv for this layer by attention() */
	const float *ram = q->kv[j->layer];
	int end = 0;
	for (int i = 0; i < nr; i++)
		if (s->row_pos[bs[i]] + 1 > end)
			end = s->row_pos[bs[i]] + 1;
	/* scores: each head's query against a cached row [latent; rope key],
	 * one dot product of attn_width */
	for (int p0 = 0, p1; p0 < end; p0 = p1) {
		const float *rows = attn_rows(s, ram, q->base, p0, end, &p1);
		for (int k0 = p0; k0 < p1; k0 += ATTN_KEY_TILE) {
			const int k1 = k0 + ATTN_KEY_TILE < p1 ? k0 + ATTN_KEY_TILE : p1;
			for (int i = 0; i < nr; i++) {
				const int r = bs[i] - b0, t = s->row_pos[bs[i]];
				const int nk = (k1 <= t + 1 ? k1 : t + 1) - k0;
				if (nk <= 0)
					continue;
				for (int h = h0; h < h1; h++) {
					float *sc = attn_scores(s, h, r);
					float dot[ATTN_KEY_TILE];
					coli_vec_dot_rows(attn_qcat(s, h, r), rows + (size_t)(k0 - p0) * W, (size_t)W, nk,
							  AW, dot);
					for (int k = 0; k < nk; k++) {
						const float d = dot[k] * m->softmax_scale;
						sc[k0 + k] = d;
						if (d > mx[r][h - h0])
							mx[r][h - h0] = d;
					}
				}
			}
		}
	}
	for (int i = 0; i < nr; i++)
		for (int h = h0; h < h1; h++) {
			attn_softmax(attn_scores(s, h, bs[i] - b0), s->row_pos[bs[i]] + 1, mx[bs[i] - b0][h - h0]);
			memset(s->ctxlat + ((size_t)h * B + bs[i]) * L, 0, sizeof(float) * L);
		}
	/* weighted sums, ascending positions: spilled rows, then RAM rows */
	for (int p0 = 0, p1; p0 < end; p0 = p1) {
		const float *rows = attn_rows(s, ram, q->base, p0, end, &p1);
		for (int c0 = 0; c0 < L; c0 += ATTN_WSUM_COLS) {
			const int nc = L - c0 < ATTN_WSUM_COLS ? L - c0 : ATTN_WSUM_COLS;
			for (int i = 0; i < nr; i++) {
				const int b = bs[i], t = s->row_pos[b];
				const int np = (p1 <= t + 1 ? p1 : t + 1) - p0;
				if (np <= 0)
					continue;
				for (int h = h0; h < h1; h++)
					coli_vec_wsum(s->ctxlat + ((size_t)h * B + b) * L + c0,
						      attn_scores(s, h, b - b0) + p0, rows + c0, (size_t)W, np, nc);
			}
		}
	}
}

/* Heads [h0, h1): their rows of q_b (unless computed already), rope and
 * absorption (attn_absorb_head), then, for sub-blocks of the chunk's rows,
 * the scores over the cache, softmax and the weighted sum of latents
 * (attn_dense_rows, attn_sparse_row), then each head's W_UV product on this thread (a head's 73 KB of W_UV
 * streams while the other threads compute; coli_model_matmul's bits). Per
 * head and row the operations and their order are those of a loop over
 * positions; only the interleaving of heads changes. */
static void attn_heads(void *arg, int task)
{
	struct attn_job *j = arg;
	const coli_model *m = j->m;
	const coli_config *c = &m->cfg;
	coli_state *s = j->s;
	const int nh = c->num_attention_heads, L = c->kv_lora_rank, R = c->qk_rope_head_dim;
	const int qk = coli_config_qk_head_dim(c), B = s->max_batch;
	const int qrow = nh * qk;
	const int h0 = task * j->heads_per_task;
	const int h1 = h0 + j->heads_per_task < nh ? h0 + j->heads_per_task : nh;
	/* this task's seconds in q_b, absorb, attend, w_uv (the breakdown) */
	double *tt = s->task_time + (size_t)task * 4, tp = coli_now_s(), tn;
	for (int h = h0; h < h1; h++) {
		/* the head's rows of q_b (streamed), then its absorption
		 * (computed): the two alternate head by head, so the memory bus
		 * stays busy while a thread computes; the head's W_UK rows are
		 * on their way to L2 while q_b streams (the transposed product
		 * has no prefetch of its own that runs far enough ahead) */
		attn_prefetch_rows(&j->w->kv_b, h * (c->qk_nope_head_dim + c->v_head_dim), c->qk_nope_head_dim);
		if (j->qb_in_tasks) {
			if (attn_qb_q8(m, j->w))
				coli_matmul_q8_rows(&j->w->q_b, &s->q8act, h * qk, (h + 1) * qk, s->q);
			else
				coli_matmul_rows(&j->w->q_b, s->qa, j->n, s->qb_xsum, h * qk, (h + 1) * qk, s->q);
			tn = coli_now_s();
			tt[0] += tn - tp;
			tp = tn;
		}
		for (int b = 0; b < j->n; b++)
			fwd_rope(s->q + (size_t)b * qrow + (size_t)h * qk + c->qk_nope_head_dim, R, s->row_pos[b],
				 m->rope_inv_freq, m->rope_mscale, c->rope_interleave);
		attn_absorb_head(arg, h);
		tn = coli_now_s();
		tt[1] += tn - tp;
		tp = tn;
	}
	/* the chunk's rows in sub-blocks of attn_rows: their queries, then
	 * the sparse (DSA-selected) rows one by one and the dense rows of each
	 * sequence together (attn_dense_rows) */
	const int RB = s->attn_rows;
	for (int b0 = 0; b0 < j->n; b0 += RB) {
		const int b1 = b0 + RB < j->n ? b0 + RB : j->n;
		float mx[COLI_ATTN_ROWS_MAX][ATTN_HEADS_MAX];
		int dense[COLI_ATTN_ROWS_MAX], nd = 0;
		for (int b = b0; b < b1; b++) {
			for (int h = h0; h < h1; h++) {
				mx[b - b0][h - h0] = -FLT_MAX;
				float *qc = attn_qcat(s, h, b - b0);
				memcpy(qc, s->qlat + ((size_t)h * B + b) * L, sizeof(float) * L);
				memcpy(qc + L, s->q + (size_t)b * qrow + (size_t)h * qk + c->qk_nope_head_dim,
				       sizeof(float) * R);
			}
			if (s->isel_n && s->isel_n[b] >= 0)
				attn_sparse_row(j, b, b - b0, h0, h1, mx[b - b0]);
			else
				dense[nd++] = b;
		}
		while (nd > 0) {
			/* the dense rows of the first one's sequence */
			const coli_seq *q = s->row_seq[dense[0]];
			int grp[COLI_ATTN_ROWS_MAX], ng = 0, rest = 0;
			for (int i = 0; i < nd; i++) {
				if (s->row_seq[dense[i]] == q)
					grp[ng++] = dense[i];
				else
					dense[rest++] = dense[i];
			}
			nd = rest;
			attn_dense_rows(j, grp, ng, b0, h0, h1, mx);
		}
	}
	tn = coli_now_s();
	tt[2] += tn - tp;
	tp = tn;
	const int V = c->v_head_dim;
	for (int h = h0; h < h1; h++) {
		coli_qmat wuv = fwd_rows(&j->w->kv_b, h * (c->qk_nope_head_dim + V) + c->qk_nope_head_dim, V);
		coli_model_product(m, NULL, &wuv, s->ctxlat + (size_t)h * B * L, j->n, s->vhead + (size_t)h * B * V,
			      s->head_q8 ? &s->head_q8[h] : NULL);
	}
	tt[3] += coli_now_s() - tp;
}

/* The attention tasks' CPU time `cpu`, shared out among q_b, absorb,
 * attend and w_uv in proportion to the (wall) seconds the tasks spent in
 * each: they run interleaved on every thread, and a CPU clock read per
 * head would cost microseconds. */
static void attn_share_time(coli_state *s, int tasks, double cpu)
{
	static const int parts[4] = { COLI_PART_Q_B, COLI_PART_ABSORB, COLI_PART_ATTEND, COLI_PART_W_UV };
	double sum[4] = { 0 }, all = 0.0;
	for (int t = 0; t < tasks; t++)
		for (int k = 0; k < 4; k++)
			sum[k] += s->task_time[(size_t)t * 4 + k];
	for (int k = 0; k < 4; k++)
		all += sum[k];
	for (int k = 0; k < 4 && all > 0.0; k++)
		s->timing.part[parts[k]] += cpu * sum[k] / all;
}

int forward_attention(const coli_model *m, coli_state *s, int l, int n, coli_err *err)
{
	const coli_config *c = &m->cfg;
	const coli_layer_weights *w = &m->layers[l];
	const int H = c->hidden_size, L = c->kv_lora_rank, R = c->qk_rope_head_dim;
	const int nh = c->num_attention_heads;
	const int V = c->v_head_dim, W = s->kv_width, B = s->max_batch, AW = coli_config_attn_width(c);
	/* the breakdown's CPU seconds (process clock: every thread) */
	double *part = s->timing.part, idx_cpu = 0.0;
	const double c0 = coli_cpu_s();
	for (int b = 0; b < n; b++)
		fwd_rmsnorm(s->xn + (size_t)b * H, s->x + (size_t)b * H, w->attn_norm, H, c->rms_norm_eps);
	/* queries */
	/* the products of the normed input in one run: the query's first
	 * projection (or the whole query) and the compressed KV */
	const coli_mm in[3] = {
		{ c->q_lora_rank > 0 ? &w->q_a : &w->q, s->xn, c->q_lora_rank > 0 ? s->qa : s->q, n },
		{ &w->kv_a, s->xn, s->kva, n },
		{ &w->idx_wk, s->xn, s->idx_k, n },
	};
	/* the indexer's key projection joins the group (a group gives each
	 * product's own bits) */
	coli_model_matmul_group(m, s, in, w->has_indexer ? 3 : 2);
	int qb_in_tasks = c->q_lora_rank > 0;
	if (c->q_lora_rank > 0) {
		const int Q = c->q_lora_rank;
		for (int b = 0; b < n; b++)
			fwd_rmsnorm(s->qa + (size_t)b * Q, s->qa + (size_t)b * Q, w->q_a_norm, Q, c->attn_norm_eps);
		if (w->has_indexer) {
			/* before q_b's input is prepared: both use the q8 scratch;
			 * the head weights stay exact (f32 activations) */
			const double ti = coli_now_s(), ci = coli_cpu_s();
			coli_model_matmul(m, s, &w->idx_wq_b, s->qa, n, s->idx_q);
			coli_matmul(m->pool, &w->idx_w, s->xn, n, s->idx_w);
			indexer_queries(m, s, n);
			s->timing.indexer += coli_now_s() - ti;
			idx_cpu += coli_cpu_s() - ci;
		}
		/* q_b runs inside the attention tasks, each for its own heads'
		 * rows (attn_heads): its input is prepared once here */
		if (!attn_qb_q8(m, w))
			coli_matmul_xsum(&w->q_b, s->qa, n, s->qb_xsum);
		else if (coli_q8act_quantize(&s->q8act, s->qa, n, Q))
			qb_in_tasks = 0; /* cannot happen with the state's sizing */
		if (!qb_in_tasks)
			coli_model_matmul(m, s, &w->q_b, s->qa, n, s->q);
	}
	/* compressed KV: normalized latent + roped shared key, into the cache */
	for (int b = 0; b < n; b++) {
		const int t = s->row_pos[b];
		const float *src = s->kva + (size_t)b * AW;
		float *dst = s->row_seq[b]->kv[l] + (size_t)(t - s->row_seq[b]->base) * W;
		fwd_rmsnorm(dst, src, w->kv_a_norm, L, c->attn_norm_eps);
		memcpy(dst + L, src + L, sizeof(float) * R);
		fwd_rope(dst + L, R, t, m->rope_inv_freq, m->rope_mscale, c->rope_interleave);
	}
	/* spilled rows of this layer (only a sequence alone in its chunk
	 * may have them; coli_forward_seq* check): the index keys first (all
	 * of them: the indexer scores every key), then of the attention rows
	 * only those the selection takes (indexer_spill_runs) */
	const coli_seq *q0 = s->row_seq[0];
	if (q0->base > 0 && w->has_indexer && s->old_ikv) {
		const int all[2] = { 0, q0->base };
		int rc = q0->spill_read(q0->spill_ctx, coli_config_index_slot(c, l), all, 1, s->old_ikv);
		if (rc < 0)
			return coli_err_set(err, rc, "reading %d spilled index keys of layer %d back failed", q0->base,
					    l);
	}
	/* the keys each row attends to: this layer's own indexer, or the
	 * selection of the nearest earlier full layer (already in s->isel) */
	if (w->has_indexer) {
		const double ti = coli_now_s(), ci = coli_cpu_s();
		indexer_keys(m, s, w, l, n);
		indexer_select(m, s, l, n);
		s->timing.indexer += coli_now_s() - ti;
		idx_cpu += coli_cpu_s() - ci;
	}
	if (q0->base > 0) {
		int all[2] = { 0, q0->base }, *runs = all;
		const int nr = indexer_spill_runs(s, n, q0->base, &runs);
		int rc = q0->spill_read(q0->spill_ctx, l, runs, nr, s->old_kv);
		if (rc < 0)
			return coli_err_set(err, rc, "reading %d spilled KV rows of layer %d back failed", q0->base, l);
	}
	if (coli_config_has_indexer(c))
		indexer_note(m, s, l, n);
	const double c1 = coli_cpu_s();
	/* everything before the heads' tasks that is not the indexer's */
	part[COLI_PART_INDEXER] += idx_cpu;
	part[COLI_PART_Q_A_KV_A] += c1 - c0 - idx_cpu;
	int hpt = (nh + 2 * coli_pool_size(m->pool) - 1) / (2 * coli_pool_size(m->pool));
	hpt = hpt < 1 ? 1 : hpt > ATTN_HEADS_MAX ? ATTN_HEADS_MAX : hpt;
	struct attn_job job = { m, s, w, l, n, hpt, qb_in_tasks };
	const int tasks = (nh + hpt - 1) / hpt;
	memset(s->task_time, 0, sizeof(double) * 4 * (size_t)tasks);
	coli_pool_run(m->pool, tasks, attn_heads, &job);
	const double c2 = coli_cpu_s();
	attn_share_time(s, tasks, c2 - c1);
	for (int h = 0; h < nh; h++)
		for (int b = 0; b < n; b++)
			memcpy(s->vout + (size_t)b * nh * V + (size_t)h * V,
			       s->vhead + ((size_t)h * B + b) * V, sizeof(float) * V);
	coli_model_matmul(m, s, &w->o, s->vout, n, s->ffn_out);
	for (size_t i = 0; i < (size_t)n * H; i++)
		s->x[i] += s->ffn_out[i];
	part[COLI_PART_O_PROJ] += coli_cpu_s() - c2;
	return 0;
}
