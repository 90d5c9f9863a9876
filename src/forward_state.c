/* forward_state.c - allocation of one sequence's KV cache and scratch buffers. */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "forward_state.h"

/* What a constructor asked for: a failure flag and the bytes, so the
 * state can say what it holds (coli_state_bytes; the automatic expert
 * budget reserves it). */
typedef struct alloc_tally {
	int failed;
	size_t bytes;
} alloc_tally;

static void *zalloc(size_t n, size_t size, alloc_tally *t)
{
	if (n == 0)
		n = 1;
	void *p = calloc(n, size);
	if (!p)
		t->failed = 1;
	t->bytes += n * size;
	return p;
}

int coli_seq_new(const coli_model *m, int cap, coli_seq **out, coli_err *err)
{
	const coli_config *c = &m->cfg;
	if (cap < 1)
		return coli_err_set(err, -EINVAL, "context size must be positive");
	coli_seq *q = calloc(1, sizeof *q);
	alloc_tally al = { !q, sizeof *q };
	if (q) {
		q->cap = cap;
		q->n_layers = c->num_hidden_layers + m->n_mtp;
		q->kv_width = coli_config_kv_width(c);
		q->index_width = coli_config_has_indexer(c) ? c->index_head_dim : 0;
		q->kv = zalloc((size_t)q->n_layers, sizeof *q->kv, &al);
		q->ikv = zalloc((size_t)q->n_layers, sizeof *q->ikv, &al);
		for (int l = 0; !al.failed && l < q->n_layers; l++) {
			q->kv[l] = zalloc((size_t)cap * (size_t)q->kv_width, sizeof(float), &al);
			if (q->index_width && coli_config_layer_index_full(c, l))
				q->ikv[l] = zalloc((size_t)cap * (size_t)q->index_width, sizeof(float), &al);
		}
	}
	if (q)
		q->bytes = al.bytes;
	if (al.failed) {
		coli_seq_free(q);
		return coli_err_set(err, -ENOMEM, "out of memory allocating a %d-token KV cache", cap);
	}
	*out = q;
	return 0;
}

int coli_seq_reserve(coli_seq *q, int cap, coli_err *err)
{
	if (cap <= q->cap)
		return 0;
	/* row r of the RAM window stays row r: the window starts at base
	 * whatever the capacity, so growing is a realloc per layer */
	const size_t old = (size_t)q->cap, grown = (size_t)cap - old;
	for (int l = 0; l < q->n_layers; l++) {
		float *kv = realloc(q->kv[l], sizeof(float) * (size_t)cap * (size_t)q->kv_width);
		if (!kv)
			return coli_err_set(err, -ENOMEM, "out of memory growing a KV cache to %d tokens", cap);
		q->kv[l] = kv;
		memset(kv + old * (size_t)q->kv_width, 0, sizeof(float) * grown * (size_t)q->kv_width);
		if (!q->ikv[l])
			continue;
		float *ik = realloc(q->ikv[l], sizeof(float) * (size_t)cap * (size_t)q->index_width);
		if (!ik)
			return coli_err_set(err, -ENOMEM, "out of memory growing a KV cache to %d tokens", cap);
		q->ikv[l] = ik;
		memset(ik + old * (size_t)q->index_width, 0, sizeof(float) * grown * (size_t)q->index_width);
	}
	/* a layer's width is fixed, so the bytes grow by the same per row */
	q->bytes += (q->bytes - sizeof *q - 2 * sizeof(float *) * (size_t)q->n_layers) / old * grown;
	q->cap = cap;
	return 0;
}

size_t coli_seq_bytes(const coli_seq *q) { return q ? q->bytes : 0; }

size_t coli_seq_row_bytes(const coli_model *m)
{
	const coli_config *c = &m->cfg;
	const int n_layers = c->num_hidden_layers + m->n_mtp;
	size_t floats = (size_t)n_layers * (size_t)coli_config_kv_width(c);
	for (int l = 0; coli_config_has_indexer(c) && l < n_layers; l++)
		if (coli_config_layer_index_full(c, l))
			floats += (size_t)c->index_head_dim;
	return floats * sizeof(float);
}

void coli_seq_free(coli_seq *q)
{
	if (!q)
		return;
	for (int l = 0; q->kv && l < q->n_layers; l++)
		free(q->kv[l]);
	for (int l = 0; q->ikv && l < q->n_layers; l++)
		free(q->ikv[l]);
	free(q->kv);
	free(q->ikv);
	free(q);
}

int coli_seq_pos(const coli_seq *q) { return q->pos; }
int coli_seq_base(const coli_seq *q) { return q->base; }
void coli_seq_count_routes(coli_seq *q, uint32_t *counts) { q->route_counts = counts; }

void coli_seq_set_spill(coli_seq *q, coli_seq_spill_fn fn, void *ctx)
{
	q->spill_read = fn;
	q->spill_ctx = ctx;
}

int coli_seq_slide(coli_seq *q, int shift, coli_err *err)
{
	const int in_ram = q->pos - q->base;
	if (shift <= 0 || shift > in_ram || !q->spill_read)
		return coli_err_set(err, -EINVAL, "cannot drop %d of %d KV rows%s", shift, in_ram,
				    q->spill_read ? "" : " (nowhere to read them back from)");
	for (int l = 0; l < q->n_layers; l++) {
		memmove(q->kv[l], q->kv[l] + (size_t)shift * q->kv_width,
			sizeof(float) * (size_t)(in_ram - shift) * q->kv_width);
		if (q->ikv[l])
			memmove(q->ikv[l], q->ikv[l] + (size_t)shift * q->index_width,
				sizeof(float) * (size_t)(in_ram - shift) * q->index_width);
	}
	q->base += shift;
	return 0;
}

int coli_seq_set_window(coli_seq *q, int base, int pos, coli_err *err)
{
	if (base < 0 || pos < base || pos - base > q->cap || (base > 0 && !q->spill_read))
		return coli_err_set(err, -EINVAL, "bad KV window %d..%d for %d RAM rows", base, pos, q->cap);
	q->base = base;
	q->pos = pos;
	/* rows restored from outside (a session file) carry no MTP rows */
	q->mtp_pos = 0;
	return 0;
}
int coli_seq_capacity(const coli_seq *q) { return q->cap; }
float *coli_seq_kv(coli_seq *q, int layer) { return q->kv[layer]; }
float *coli_seq_index_keys(coli_seq *q, int layer) { return q->ikv[layer]; }

int coli_config_index_slot(const coli_config *c, int layer)
{
	int k = 0;
	for (int l = 0; l < layer && l < c->num_hidden_layers; l++)
		k += c->index_types[l] == 'F';
	return c->num_hidden_layers + k;
}

void coli_seq_rewind(coli_seq *q, int n)
{
	if (n >= 0 && q->mtp_pos > n)
		q->mtp_pos = n;
	if (n >= 0 && n < q->pos) {
		q->pos = n;
		/* rows before base are not in RAM: rewinding below it empties
		 * the window (the caller re-evaluates or reloads) */
		if (n < q->base)
			q->pos = q->base = q->mtp_pos = 0;
	}
}

int coli_seq_mtp_pos(const coli_seq *q) { return q->mtp_pos; }

void coli_seq_rewind_mtp(coli_seq *q, int n)
{
	if (n >= 0 && q->mtp_pos > n)
		q->mtp_pos = n;
}

int coli_seq_mtp_skip(coli_seq *q, int n, int main_layers)
{
	/* rows of the MTP layer are the last layer of the sequence */
	if (q->n_layers <= main_layers || q->base > 0 || n > q->cap)
		return -EINVAL;
	if (n > q->mtp_pos) {
		float *kv = q->kv[q->n_layers - 1], *ik = q->ikv[q->n_layers - 1];
		memset(kv + (size_t)q->mtp_pos * q->kv_width, 0,
		       sizeof(float) * (size_t)(n - q->mtp_pos) * q->kv_width);
		if (ik)
			memset(ik + (size_t)q->mtp_pos * q->index_width, 0,
			       sizeof(float) * (size_t)(n - q->mtp_pos) * q->index_width);
		q->mtp_pos = n;
	}
	return 0;
}

int coli_state_new(const coli_model *m, int max_ctx, int max_batch, coli_state **out,
		   coli_err *err)
{
	const coli_config *c = &m->cfg;
	if (max_ctx < 1 || max_batch < 1)
		return coli_err_set(err, -EINVAL, "context and batch sizes must be positive");
	coli_state *s = calloc(1, sizeof *s);
	if (!s)
		return coli_err_set(err, -ENOMEM, "out of memory");
	alloc_tally al = { 0, sizeof *s };
	const size_t B = (size_t)max_batch, H = (size_t)c->hidden_size;
	const size_t nh = (size_t)c->num_attention_heads, L = (size_t)c->kv_lora_rank;
	const size_t E = (size_t)(c->n_routed_experts > 0 ? c->n_routed_experts : 1);
	const size_t K = (size_t)(c->num_experts_per_tok > 0 ? c->num_experts_per_tok : 1);
	size_t ffn = (size_t)c->intermediate_size;
	size_t shared = (size_t)c->moe_intermediate_size * (size_t)c->n_shared_experts;
	if (shared > ffn)
		ffn = shared;
	s->cap = max_ctx;
	s->max_batch = max_batch;
	s->hidden = c->hidden_size;
	s->n_layers = c->num_hidden_layers + m->n_mtp;
	s->kv_width = coli_config_kv_width(c);
	if (coli_seq_new(m, max_ctx, &s->own, err)) {
		free(s);
		return -ENOMEM;
	}
	s->old_kv = zalloc((size_t)max_ctx * (size_t)s->kv_width, sizeof(float), &al);
	s->row_seq = zalloc(B, sizeof *s->row_seq, &al);
	s->row_pos = zalloc(B, sizeof *s->row_pos, &al);
	s->x = zalloc(B * H, sizeof(float), &al);
	s->xn = zalloc(B * H, sizeof(float), &al);
	s->qa = zalloc(B * (size_t)(c->q_lora_rank > 0 ? c->q_lora_rank : 1), sizeof(float), &al);
	s->q = zalloc(B * nh * (size_t)coli_config_qk_head_dim(c), sizeof(float), &al);
	s->kva = zalloc(B * (size_t)s->kv_width, sizeof(float), &al);
	s->qlat = zalloc(nh * B * L, sizeof(float), &al);
	s->ctxlat = zalloc(nh * B * L, sizeof(float), &al);
	s->vhead = zalloc(nh * B * (size_t)c->v_head_dim, sizeof(float), &al);
	s->vout = zalloc(B * nh * (size_t)c->v_head_dim, sizeof(float), &al);
	s->absorb_tile = zalloc(nh * (size_t)c->qk_nope_head_dim * COLI_QK, sizeof(float), &al);
	/* chunk rows whose scores are held at once (attention over the chunk
	 * runs in sub-blocks of them, forward.c): as many as fit the budget,
	 * at least one (a long context holds one row's, as before) */
	size_t per_row = nh * (size_t)max_ctx * sizeof(float);
	size_t rows = per_row ? COLI_ATTN_SCORES_BYTES / per_row : 1;
	rows = rows < 1 ? 1 : rows > COLI_ATTN_ROWS_MAX ? COLI_ATTN_ROWS_MAX : rows;
	s->attn_rows = (int)(rows < B ? rows : B);
	s->qcat = zalloc(nh * (size_t)s->attn_rows * (size_t)coli_config_kv_width(c), sizeof(float), &al);
	s->qb_xsum = zalloc(B * (size_t)(c->q_lora_rank / COLI_QK + 1), sizeof(float), &al);
	s->scores = zalloc(nh * (size_t)s->attn_rows * (size_t)max_ctx, sizeof(float), &al);
	s->task_time = zalloc(nh * 4, sizeof(double), &al);
	if (coli_config_has_indexer(c)) {
		const size_t IH = (size_t)c->index_n_heads, ID = (size_t)c->index_head_dim;
		s->isel_cap = c->index_topk < max_ctx ? c->index_topk : max_ctx;
		s->idx_q = zalloc(B * IH * ID, sizeof(float), &al);
		s->idx_k = zalloc(B * ID, sizeof(float), &al);
		s->idx_w = zalloc(B * IH, sizeof(float), &al);
		s->idx_scores = zalloc((size_t)max_ctx, sizeof(float), &al);
		s->old_ikv = zalloc((size_t)max_ctx * ID, sizeof(float), &al);
		s->idx_order = zalloc((size_t)max_ctx, sizeof(int), &al);
		s->idx_mark = zalloc((size_t)max_ctx, 1, &al);
		/* runs of selected spilled rows: at most (base + 1) / 2 */
		s->spill_runs = zalloc((size_t)max_ctx + 2, sizeof(int), &al);
		s->isel = zalloc(B * (size_t)s->isel_cap, sizeof(int), &al);
		s->isel_n = zalloc(B, sizeof(int), &al);
		s->idx_kept = zalloc((size_t)s->n_layers, sizeof(int), &al);
		s->idx_context = zalloc((size_t)s->n_layers, sizeof(int), &al);
	}
	s->ffn_a = zalloc(B * ffn, sizeof(float), &al);
	s->ffn_b = zalloc(B * ffn, sizeof(float), &al);
	s->ffn_out = zalloc(B * H, sizeof(float), &al);
	s->router_logits = zalloc(B * E, sizeof(float), &al);
	s->sel = zalloc(B * K, sizeof(int), &al);
	s->sel_w = zalloc(B * K, sizeof(float), &al);
	s->moe_out = zalloc(B * K * H, sizeof(float), &al);
	s->union_experts = zalloc(E, sizeof(int), &al);
	s->union_tmp = zalloc(2 * E, sizeof(int), &al);
	s->tok_slot = zalloc(B * K, sizeof(int), &al);
	s->exp_in = zalloc(B * H, sizeof(float), &al);
	s->exp_a = zalloc(B * (size_t)c->moe_intermediate_size, sizeof(float), &al);
	s->exp_b = zalloc(B * (size_t)c->moe_intermediate_size, sizeof(float), &al);
	s->exp_out = zalloc(B * H, sizeof(float), &al);
	s->recs = zalloc(E, sizeof(void *), &al);
	s->predict = zalloc(E, sizeof(int), &al);
	s->pred_scores = zalloc(E, sizeof(float), &al);
	s->route_tmp = zalloc(3 * E, sizeof(float), &al);
	s->route_taken = zalloc(2 * E, 1, &al);
	s->expert_rows = zalloc(E, sizeof(int), &al);
	s->pred_w = zalloc(K, sizeof(float), &al);
	s->logits_h = zalloc(B * H, sizeof(float), &al);
	s->mtp_cat = zalloc(B * 2 * H, sizeof(float), &al);
	s->routing.experts = zalloc((size_t)s->n_layers * K, sizeof(int), &al);
	s->routing.weights = zalloc((size_t)s->n_layers * K, sizeof(float), &al);
	s->bytes = al.bytes;
	if (al.failed) {
		coli_state_free(s);
		return coli_err_set(err, -ENOMEM, "out of memory allocating a %d-token context", max_ctx);
	}
	if (m->act_quant == COLI_ACT_Q8) {
		/* widest input of any matmul: hidden, q_lora, heads * v (o),
		 * the FFN widths, 2 * hidden (MTP eh_proj) */
		size_t wide = 2 * H;
		size_t cand[] = { (size_t)c->q_lora_rank, nh * (size_t)c->v_head_dim, ffn,
				  (size_t)c->moe_intermediate_size };
		for (size_t i = 0; i < sizeof cand / sizeof cand[0]; i++)
			wide = cand[i] > wide ? cand[i] : wide;
		int rc = coli_q8act_init(&s->q8act, max_batch, (int)wide, err);
		/* W_UV inside the attention tasks: one scratch per head (a task's
		 * heads are its own), 16 rows at a time */
		s->head_q8 = rc ? NULL : calloc(nh, sizeof *s->head_q8);
		if (!rc && !s->head_q8)
			rc = coli_err_set(err, -ENOMEM, "out of memory for the attention scratch");
		for (size_t h = 0; !rc && h < nh; h++) {
			rc = coli_q8act_init(&s->head_q8[h], max_batch < 16 ? max_batch : 16, (int)L, err);
			s->n_head_q8 = (int)h + 1;
		}
		if (rc) {
			coli_state_free(s);
			return rc;
		}
		s->bytes += coli_q8act_bytes(&s->q8act) + nh * sizeof *s->head_q8;
		for (size_t h = 0; h < nh; h++)
			s->bytes += coli_q8act_bytes(&s->head_q8[h]);
	}
	for (size_t i = 0; i < (size_t)s->n_layers * K; i++)
		s->routing.experts[i] = -1;
	*out = s;
	return 0;
}

size_t coli_state_scratch_bytes(const coli_state *s) { return s ? s->bytes : 0; }

void coli_state_free(coli_state *s)
{
	if (!s)
		return;
	coli_seq_free(s->own);
	void *bufs[] = { s->old_kv, s->row_seq, s->row_pos, s->x, s->xn, s->qa, s->q, s->kva, s->qlat, s->ctxlat, s->vhead,
			 s->vout, s->absorb_tile, s->qcat, s->qb_xsum, s->scores, s->ffn_a, s->ffn_b, s->ffn_out,
			 s->router_logits, s->sel, s->sel_w, s->moe_out, s->union_experts, s->union_tmp,
			 s->tok_slot, s->exp_in, s->exp_a, s->exp_b, s->exp_out, (void *)s->recs,
			 s->predict, s->pred_scores, s->route_tmp, s->route_taken, s->expert_rows, s->pred_w, s->logits_h, s->mtp_cat, s->routing.experts,
			 s->routing.weights, s->idx_q, s->idx_k, s->idx_w, s->idx_scores, s->idx_order, s->idx_mark,
			 s->isel, s->isel_n, s->idx_kept, s->idx_context, s->old_ikv, s->task_time, s->spill_runs,
			 s->idx_trace, s->idx_trace_n };
	for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
		free(bufs[i]);
	coli_q8act_free(&s->q8act);
	for (int h = 0; h < s->n_head_q8; h++)
		coli_q8act_free(&s->head_q8[h]);
	free(s->head_q8);
	free(s);
}

coli_seq *coli_state_seq(coli_state *s) { return s->own; }
const coli_routing *coli_state_routing(const coli_state *s) { return &s->routing; }
const coli_timing *coli_state_timing(const coli_state *s) { return &s->timing; }

const float *coli_state_hidden(const coli_state *s, int row)
{
	return s->logits_h + (size_t)row * (size_t)s->hidden;
}

void coli_state_rewind(coli_state *s, int n)
{
	coli_seq_rewind(s->own, n);
}

