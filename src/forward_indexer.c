/* forward_indexer.c - the DSA lightning indexer (GLM-5 glm_moe_dsa, DeepSeek-V3.2).
 *
 * In a layer that runs its own indexer, for a query at position t with
 * attention input x and low-rank query qr (q_a_layernorm(q_a_proj x)):
 *   q_h = rope(wq_b qr)_h       index_n_heads heads of index_head_dim
 *   k_t = rope(LayerNorm(wk x)) one key per token, shared by the heads,
 *                               cached in the token's KV row
 *   w_h = weights_proj(x)_h * index_n_heads^-0.5
 *   score(t, j) = sum_h w_h * relu(index_head_dim^-0.5 * q_h . k_j), j <= t
 * and the query attends only to the index_topk keys with the highest
 * score (ties: the earlier position). Heads are laid out [rope | nope]:
 * the first qk_rope_head_dim numbers get RoPE with the model's rope
 * parameters, interleaved pairs or NeoX halves (indexer_rope_interleave).
 * Everything is f32 (no fp8 rounding of q and k as the public kernels do,
 * no Hadamard rotation: it is orthogonal and leaves every score as is).
 *
 * A layer marked shared runs no indexer and reuses the selection of the
 * nearest earlier full layer: the selection lives in the state (isel)
 * from one layer to the next.
 *
 * Up to index_topk keys of context the selection is every key: the row is
 * marked dense (isel_n = -1) and attention runs its dense loop, exactly
 * as without an indexer. Past it, the scores of all keys are computed in
 * pool tasks over blocks of keys (each key's score by one thread, heads in
 * ascending order, coli_vec_dot_rows giving coli_vec_dot's bits whatever
 * the block), so the selection does not depend on the thread count, the
 * chunking of the prompt or which rows were spilled. */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "forward_ops.h"
#include "forward_indexer.h"
#include "forward_state.h"
#include "forward_vec_ops.h"

/* keys per scoring task: enough work per task, few tasks per row */
#define IDX_TASK_KEYS 512
/* keys per coli_vec_dot_rows call: the block stays in L1 for every head */
#define IDX_BLOCK 16

void indexer_queries(const coli_model *m, coli_state *s, int n)
{
	const coli_config *c = &m->cfg;
	const int IH = c->index_n_heads, ID = c->index_head_dim, R = c->qk_rope_head_dim;
	const float wscale = (float)(1.0 / sqrt((double)IH));
	for (int b = 0; b < n; b++) {
		for (int h = 0; h < IH; h++)
			fwd_rope(s->idx_q + ((size_t)b * IH + h) * ID, R, s->row_pos[b], m->rope_inv_freq, m->rope_mscale,
				 c->indexer_rope_interleave);
		for (int h = 0; h < IH; h++)
			s->idx_w[(size_t)b * IH + h] *= wscale;
	}
}

/* LayerNorm with weight and bias, eps 1e-6 (the indexer's k_norm),
 * accumulated in double. */
static void layer_norm(float *out, const float *x, const float *w, const float *bias, int n)
{
	double sum = 0.0, ss = 0.0;
	for (int i = 0; i < n; i++)
		sum += x[i];
	const double mean = sum / n;
	for (int i = 0; i < n; i++)
		ss += ((double)x[i] - mean) * ((double)x[i] - mean);
	const float r = (float)(1.0 / sqrt(ss / n + 1e-6));
	const float mu = (float)mean;
	for (int i = 0; i < n; i++)
		out[i] = (x[i] - mu) * r * w[i] + bias[i];
}

void indexer_keys(const coli_model *m, coli_state *s, const coli_layer_weights *w, int l, int n)
{
	const coli_config *c = &m->cfg;
	const int ID = c->index_head_dim;
	for (int b = 0; b < n; b++) {
		const int t = s->row_pos[b];
		float *dst = s->row_seq[b]->ikv[l] + (size_t)(t - s->row_seq[b]->base) * ID;
		layer_norm(dst, s->idx_k + (size_t)b * ID, w->idx_k_norm, w->idx_k_bias, ID);
		fwd_rope(dst, c->qk_rope_head_dim, t, m->rope_inv_freq, m->rope_mscale, c->indexer_rope_interleave);
	}
}

struct score_job {
	const coli_model *m;
	coli_state *s;
	const float *ram;   /* the row's sequence's RAM index keys of this layer */
	int base;           /* position of RAM row 0 (earlier: s->old_ikv) */
	int b;              /* chunk row */
	int n_keys;         /* t + 1 */
};

/* Scores of keys [task * IDX_TASK_KEYS, ...) for chunk row j->b. */
static void score_task(void *arg, int task)
{
	struct score_job *j = arg;
	const coli_config *c = &j->m->cfg;
	coli_state *s = j->s;
	const int IH = c->index_n_heads, ID = c->index_head_dim;
	const float dscale = (float)(1.0 / sqrt((double)ID));
	const float *q = s->idx_q + (size_t)j->b * IH * ID, *wh = s->idx_w + (size_t)j->b * IH;
	const int k0 = task * IDX_TASK_KEYS;
	const int k1 = k0 + IDX_TASK_KEYS < j->n_keys ? k0 + IDX_TASK_KEYS : j->n_keys;
	for (int p0 = k0, p1; p0 < k1; p0 = p1) {
		p1 = p0 + IDX_BLOCK < k1 ? p0 + IDX_BLOCK : k1;
		const float *rows;
		if (p0 < j->base) {
			p1 = p1 < j->base ? p1 : j->base;
			rows = s->old_ikv + (size_t)p0 * ID;
		} else {
			rows = j->ram + (size_t)(p0 - j->base) * ID;
		}
		float acc[IDX_BLOCK] = { 0 }, dot[IDX_BLOCK];
		for (int h = 0; h < IH; h++) {
			coli_vec_dot_rows(q + (size_t)h * ID, rows, (size_t)ID, p1 - p0, ID, dot);
			for (int p = 0; p < p1 - p0; p++) {
				float d = dot[p] * dscale;
				acc[p] += wh[h] * (d > 0.0f ? d : 0.0f);
			}
		}
		memcpy(s->idx_scores + p0, acc, sizeof(float) * (size_t)(p1 - p0));
	}
}

/* a ranks before b: higher score, then the earlier position */
static int ranks_before(const float *sc, int a, int b)
{
	return sc[a] > sc[b] || (sc[a] == sc[b] && a < b);
}

/* Reorder idx[0..n) so its first k entries are the k best (any order):
 * quickselect with a median-of-three pivot; the order is total, so the
 * chosen set is unique. */
static void select_best(const float *sc, int *idx, int n, int k)
{
	int lo = 0, hi = n - 1;
	while (lo < hi) {
		int mid = lo + (hi - lo) / 2;
		int a = idx[lo], b = idx[mid], d = idx[hi], piv;
		if (ranks_before(sc, a, b))
			piv = ranks_before(sc, b, d) ? b : ranks_before(sc, a, d) ? d : a;
		else
			piv = ranks_before(sc, a, d) ? a : ranks_before(sc, b, d) ? d : b;
		int i = lo, e = hi;
		while (i <= e) {
			while (ranks_before(sc, idx[i], piv))
				i++;
			while (ranks_before(sc, piv, idx[e]))
				e--;
			if (i <= e) {
				int tmp = idx[i];
				idx[i++] = idx[e];
				idx[e--] = tmp;
			}
		}
		if (k - 1 <= e)
			hi = e;
		else if (k - 1 >= i)
			lo = i;
		else
			break;
	}
}

int indexer_select(const coli_model *m, coli_state *s, int l, int n)
{
	const coli_config *c = &m->cfg;
	const int K = c->index_topk;
	for (int b = 0; b < n; b++) {
		const int t = s->row_pos[b];
		if (t + 1 <= K) {
			s->isel_n[b] = -1; /* every key: dense attention */
			continue;
		}
		const coli_seq *q = s->row_seq[b];
		struct score_job job = { m, s, q->ikv[l], q->base, b, t + 1 };
		coli_pool_run(m->pool, (t + IDX_TASK_KEYS) / IDX_TASK_KEYS, score_task, &job);
		int *idx = s->idx_order;
		for (int p = 0; p <= t; p++)
			idx[p] = p;
		select_best(s->idx_scores, idx, t + 1, K);
		/* the chosen positions in ascending order (attention sums them
		 * in that order) */
		unsigned char *mark = s->idx_mark;
		memset(mark, 0, (size_t)(unsigned)t + 1u);
		for (int i = 0; i < K; i++)
			mark[idx[i]] = 1;
		int *sel = s->isel + (size_t)b * s->isel_cap, k = 0;
		for (int p = 0; p <= t; p++)
			if (mark[p])
				sel[k++] = p;
		s->isel_n[b] = k;
	}
	return 0;
}

int indexer_spill_runs(coli_state *s, int n, int base, int **runs)
{
	if (!s->isel_n || !s->spill_runs)
		return 1;
	for (int b = 0; b < n; b++)
		if (s->isel_n[b] < 0)
			return 1; /* a dense row reads every key */
	/* mark the selected spilled positions, then walk them into runs:
	 * each selection is ascending, the union is not */
	unsigned char *mark = s->idx_mark;
	memset(mark, 0, (size_t)(unsigned)base);
	for (int b = 0; b < n; b++) {
		const int *sel = s->isel + (size_t)b * s->isel_cap;
		for (int i = 0; i < s->isel_n[b] && sel[i] < base; i++)
			mark[sel[i]] = 1;
	}
	int nr = 0, *out = s->spill_runs;
	for (int p = 0; p < base; p++) {
		if (!mark[p])
			continue;
		if (nr > 0 && out[2 * nr - 2] + out[2 * nr - 1] == p) {
			out[2 * nr - 1]++;
		} else {
			out[2 * nr] = p;
			out[2 * nr + 1] = 1;
			nr++;
		}
	}
	*runs = out;
	return nr;
}

void indexer_note(const coli_model *m, coli_state *s, int l, int n)
{
	if (n <= 0 || !s->idx_kept)
		return;
	const int t = s->row_pos[n - 1];
	s->idx_kept[l] = s->isel_n[n - 1] < 0 ? t + 1 : s->isel_n[n - 1];
	s->idx_context[l] = t + 1;
	if (s->idx_trace) {
		s->idx_trace_n[l] = s->isel_n[n - 1];
		if (s->isel_n[n - 1] > 0)
			memcpy(s->idx_trace + (size_t)l * s->isel_cap, s->isel + (size_t)(n - 1) * s->isel_cap,
			       (size_t)s->isel_n[n - 1] * sizeof(int));
	}
	expert_store_note_index(m->store, l, s->idx_kept[l], s->idx_context[l]);
}

int coli_state_trace_index(coli_state *s)
{
	if (!s->isel_cap)
		return -EINVAL;
	if (s->idx_trace)
		return 0;
	s->idx_trace = calloc((size_t)s->n_layers * (size_t)s->isel_cap, sizeof(int));
	s->idx_trace_n = malloc((size_t)s->n_layers * sizeof(int));
	if (!s->idx_trace || !s->idx_trace_n) {
		free(s->idx_trace);
		free(s->idx_trace_n);
		s->idx_trace = s->idx_trace_n = NULL;
		return -ENOMEM;
	}
	for (int l = 0; l < s->n_layers; l++)
		s->idx_trace_n[l] = -1;
	return 0;
}

const int *coli_state_index_selection(const coli_state *s, int layer, int *n)
{
	*n = -1;
	if (!s->idx_trace || layer < 0 || layer >= s->n_layers || s->idx_trace_n[layer] < 0)
		return NULL;
	*n = s->idx_trace_n[layer];
	return s->idx_trace + (size_t)layer * s->isel_cap;
}
