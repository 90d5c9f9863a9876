/* forward.c - the DeepSeek-V3 forward pass: embedding, MLA attention over
 * the compressed KV cache (forward_attn.c), dense FFN, MoE (forward_moe.c),
 * final norm and lm_head.
 *
 * Positions are processed in chunks of up to max_batch so every weight
 * matrix is streamed once per chunk (prefill) and once per token (decode).
 * Attention always uses the absorbed form:
 *   score(t, j) = (W_UK^T q_nope_t) . latent_j + q_rope_t . k_rope_j
 *   out_t       = W_UV (sum_j p_j latent_j)
 * which equals attention over the expanded keys/values (k_nope = W_UK
 * latent, v = W_UV latent) but never expands the cache: the per-token cost
 * is O(context * kv_lora) per head. Prefill and decode run the same code
 * per position, so incremental decode reproduces the full pass exactly.
 *
 * Every matrix product of the model goes through coli_model_matmul(_group),
 * which quantizes its input to int8 when the model runs with --act-quant q8
 * (quant_kernels_q8.h: per input row, so this stays exact between prefill and
 * decode too); the heads' W_UV products run inside the attention tasks
 * (q8 with the state's per-head scratch). The W_UK absorption (a
 * transposed product, forward_vec_ops.c) runs per head in pool tasks and stays
 * f32. */
#include "config.h"

#include <errno.h>
#include <float.h>
#include <math.h>
#include <string.h>

#include "forward_attn.h"
#include "forward_ops.h"
#include "forward_indexer.h"
#include "forward_matmul.h"
#include "forward_moe.h"
#include "forward_state.h"
#include "forward_vec_ops.h"


static void dense_ffn(const coli_model *m, coli_state *s, int l, int n)
{
	const coli_config *c = &m->cfg;
	const coli_layer_weights *w = &m->layers[l];
	const int H = c->hidden_size, I = c->intermediate_size;
	const coli_mm gu[2] = { { &w->gate, s->xn, s->ffn_a, n }, { &w->up, s->xn, s->ffn_b, n } };
	coli_model_matmul_group(m, s, gu, 2);
	for (int b = 0; b < n; b++)
		fwd_swiglu(s->ffn_a + (size_t)b * I, s->ffn_b + (size_t)b * I, I);
	coli_model_matmul(m, s, &w->down, s->ffn_a, n, s->ffn_out);
	for (size_t i = 0; i < (size_t)n * H; i++)
		s->x[i] += s->ffn_out[i];
}

int forward_chunk(coli_model *m, coli_state *s, const int *tokens, int n, coli_err *err)
{
	const coli_config *c = &m->cfg;
	const int H = c->hidden_size;
	const double t_start = coli_now_s();
	for (int b = 0; b < n; b++) {
		if (tokens[b] < 0 || tokens[b] >= c->vocab_size)
			return coli_err_set(err, -EINVAL, "token id %d is outside the vocabulary (0..%d)",
					    tokens[b], c->vocab_size - 1);
		coli_qmat r = fwd_rows(&m->embed, tokens[b], 1);
		coli_dequantize_rows(r.qtype, r.data, 1, H, s->x + (size_t)b * H);
	}
	double t0 = coli_now_s(), t1;
	s->timing.other += t0 - t_start;
	for (int l = 0; l < c->num_hidden_layers; l++) {
		const coli_layer_weights *w = &m->layers[l];
		int arc = forward_attention(m, s, l, n, err);
		if (arc)
			return arc;
		for (int b = 0; b < n; b++)
			fwd_rmsnorm(s->xn + (size_t)b * H, s->x + (size_t)b * H, w->ffn_norm, H, c->rms_norm_eps);
		t1 = coli_now_s();
		s->timing.attention += t1 - t0;
		if (w->is_moe) {
			/* the experts' part is the layer's time the router's
			 * is not (moe_forward adds to both) */
			const double parts0 = s->timing.part[COLI_PART_ROUTER] + s->timing.part[COLI_PART_EXPERTS];
			const double cm = coli_cpu_s();
			int rc = moe_forward(m, s, l, n, err);
			if (rc)
				return rc;
			t0 = coli_now_s();
			s->timing.moe += t0 - t1;
			s->timing.part[COLI_PART_EXPERTS] += coli_cpu_s() - cm - (s->timing.part[COLI_PART_ROUTER] +
										 s->timing.part[COLI_PART_EXPERTS] - parts0);
		} else {
			/* the next layer's expert reads overlap this FFN */
			if (m->store)
				moe_prefetch_next(m, s, l, n);
			const double cf = coli_cpu_s();
			dense_ffn(m, s, l, n);
			s->timing.part[COLI_PART_DENSE_FFN] += coli_cpu_s() - cf;
			t0 = coli_now_s();
			s->timing.dense_ffn += t0 - t1;
		}
	}
	for (int b = 0; b < n; b++)
		s->row_seq[b]->pos = s->row_pos[b] + 1;
	return 0;
}

int coli_forward(coli_model *m, coli_state *s, const int *tokens, int n, float *logits,
		 int all_logits, coli_err *err)
{
	return coli_forward_seq(m, s, s->own, tokens, n, logits, all_logits, err);
}

int coli_forward_seq(coli_model *m, coli_state *s, coli_seq *q, const int *tokens, int n,
		     float *logits, int all_logits, coli_err *err)
{
	const coli_config *c = &m->cfg;
	const int H = c->hidden_size;
	if (n <= 0)
		return coli_err_set(err, -EINVAL, "nothing to evaluate");
	if (q->pos - q->base + n > q->cap || q->pos + n > s->cap)
		return coli_err_set(err, -E2BIG, "context is full: %d tokens + %d new exceed %d",
				    q->pos, n, q->pos - q->base + n > q->cap ? q->base + q->cap : s->cap);
	const double t_call = coli_now_s();
	for (int done = 0; done < n;) {
		int chunk = n - done < s->max_batch ? n - done : s->max_batch;
		for (int b = 0; b < chunk; b++) {
			s->row_seq[b] = q;
			s->row_pos[b] = q->pos + b;
		}
		int rc = forward_chunk(m, s, tokens + done, chunk, err);
		if (rc)
			return rc;
		done += chunk;
		if (!logits)
			continue;
		const double ch = coli_cpu_s();
		if (all_logits) {
			for (int b = 0; b < chunk; b++)
				fwd_rmsnorm(s->logits_h + (size_t)b * H, s->x + (size_t)b * H, m->final_norm, H,
					    c->rms_norm_eps);
			coli_model_matmul(m, s, &m->lm_head, s->logits_h, chunk,
				    logits + (size_t)(done - chunk) * c->vocab_size);
		} else if (done == n) {
			fwd_rmsnorm(s->logits_h, s->x + (size_t)(chunk - 1) * H, m->final_norm, H, c->rms_norm_eps);
			coli_model_matmul(m, s, &m->lm_head, s->logits_h, 1, logits);
		}
		s->timing.part[COLI_PART_LM_HEAD] += coli_cpu_s() - ch;
	}
	const double t_end = coli_now_s();
	s->timing.total += t_end - t_call;
	s->timing.other = s->timing.total - s->timing.attention - s->timing.moe - s->timing.dense_ffn;
	return 0;
}

const float *coli_state_final_hidden(const coli_model *m, coli_state *s, int n)
{
	const coli_config *c = &m->cfg;
	const int H = c->hidden_size;
	for (int b = 0; b < n && b < s->max_batch; b++)
		fwd_rmsnorm(s->logits_h + (size_t)b * H, s->x + (size_t)b * H, m->final_norm, H, c->rms_norm_eps);
	return s->logits_h;
}

int coli_forward_mtp(coli_model *m, coli_state *s, coli_seq *q, const float *hidden, const int *next,
		     int n, float *logits, coli_err *err)
{
	return coli_forward_mtp_tail(m, s, q, hidden, next, n, logits, n, err);
}

int coli_forward_mtp_tail(coli_model *m, coli_state *s, coli_seq *q, const float *hidden, const int *next,
			  int n, float *logits, int n_logits, coli_err *err)
{
	const coli_config *c = &m->cfg;
	const int H = c->hidden_size, L = c->num_hidden_layers;
	const coli_mtp_weights *t = &m->mtp;
	if (!m->n_mtp)
		return coli_err_set(err, -ENOTSUP, "the MTP module is not loaded (--mtp)");
	if (n <= 0 || n > s->max_batch)
		return coli_err_set(err, -EINVAL, "MTP batch of %d rows: the state was sized for at most %d rows per step (its max_batch)", n, s->max_batch);
	if (q->base > 0)
		return coli_err_set(err, -ENOTSUP, "MTP drafts need the whole context in RAM");
	if (q->mtp_pos + n > q->cap || q->mtp_pos + n > s->cap)
		return coli_err_set(err, -E2BIG, "MTP context is full: %d positions", q->mtp_pos);
	const double t_call = coli_now_s();
	for (int b = 0; b < n; b++) {
		if (next[b] < 0 || next[b] >= c->vocab_size)
			return coli_err_set(err, -EINVAL, "token id %d is outside the vocabulary", next[b]);
		float *cat = s->mtp_cat + (size_t)b * 2 * H;
		coli_qmat r = fwd_rows(&t->embed, next[b], 1);
		coli_dequantize_rows(r.qtype, r.data, 1, H, s->xn + (size_t)b * H);
		fwd_rmsnorm(cat, s->xn + (size_t)b * H, t->enorm, H, c->rms_norm_eps);
		fwd_rmsnorm(cat + H, hidden + (size_t)b * H, t->hnorm, H, c->rms_norm_eps);
		s->row_seq[b] = q;
		s->row_pos[b] = q->mtp_pos + b;
	}
	coli_model_matmul(m, s, &t->eh_proj, s->mtp_cat, n, s->x);
	int rc = forward_attention(m, s, L, n, err);
	if (rc)
		return rc;
	const coli_layer_weights *w = &m->layers[L];
	for (int b = 0; b < n; b++)
		fwd_rmsnorm(s->xn + (size_t)b * H, s->x + (size_t)b * H, w->ffn_norm, H, c->rms_norm_eps);
	if (w->is_moe) {
		if ((rc = moe_forward(m, s, L, n, err)))
			return rc;
	} else {
		dense_ffn(m, s, L, n);
	}
	/* the head only for the rows whose drafts are wanted (prefill feeds
	 * the module every prompt row but drafts from the last) */
	const int h0 = n_logits < 0 ? 0 : n_logits > n ? 0 : n - n_logits;
	for (int b = h0; b < n; b++)
		fwd_rmsnorm(s->logits_h + (size_t)b * H, s->x + (size_t)b * H, t->head_norm, H, c->rms_norm_eps);
	if (h0 < n)
		coli_model_matmul(m, s, &t->head, s->logits_h + (size_t)h0 * H, n - h0, logits);
	q->mtp_pos += n;
	s->timing.total += coli_now_s() - t_call;
	s->timing.other = s->timing.total - s->timing.attention - s->timing.moe - s->timing.dense_ffn;
	return 0;
}
