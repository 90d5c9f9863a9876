/* forward_rows.c - one forward over rows of several sequences (a batched
 * decode step, drafts, prompt chunks of many requests together). */
#include "config.h"

#include <errno.h>

#include "forward_matmul.h"
#include "forward_ops.h"
#include "forward_state.h"

int coli_forward_seqs(coli_model *m, coli_state *s, coli_seq *const *seqs, const int *tokens,
		      int n, float *logits, coli_err *err)
{
	return coli_forward_rows(m, s, seqs, NULL, n, tokens, logits, err);
}

/* last_only: logits of each sequence's last row alone, (n_seqs, vocab);
 * else of every row. */
static int forward_rows(coli_model *m, coli_state *s, coli_seq *const *seqs, const int *counts,
			int n_seqs, const int *tokens, float *logits, int last_only, coli_err *err)
{
	const coli_config *c = &m->cfg;
	const int H = c->hidden_size;
	int n = 0;
	for (int i = 0; i < n_seqs; i++) {
		const coli_seq *q = seqs[i];
		const int k = counts ? counts[i] : 1;
		if (k < 1)
			return coli_err_set(err, -EINVAL, "sequence %d of the step has %d rows", i, k);
		if (n + k > s->max_batch)
			return coli_err_set(err, -EINVAL, "more than %d rows in one step: the state was sized for at most that many (its max_batch)", s->max_batch);
		if (q->pos - q->base + k > q->cap || q->pos + k > s->cap)
			return coli_err_set(err, -E2BIG, "context is full: %d tokens + %d new", q->pos, k);
		if (q->base > 0 && n_seqs > 1)
			return coli_err_set(err, -EINVAL, "a sequence with spilled KV rows must be decoded alone");
		for (int j = 0; j < i; j++)
			if (seqs[j] == q)
				return coli_err_set(err, -EINVAL, "a sequence appears twice in one step");
		/* a sequence's rows are consecutive positions: the chunk writes
		 * every row's KV before any attention reads it, as in prefill */
		for (int b = 0; b < k; b++) {
			s->row_seq[n + b] = seqs[i];
			s->row_pos[n + b] = q->pos + b;
		}
		n += k;
	}
	if (n < 1)
		return coli_err_set(err, -EINVAL, "nothing to evaluate");
	const double t_call = coli_now_s();
	int rc = forward_chunk(m, s, tokens, n, err);
	if (rc)
		return rc;
	const double ch = coli_cpu_s();
	int n_out = 0;
	for (int i = 0, b = -1; i < n_seqs; i++) {
		const int k = counts ? counts[i] : 1;
		for (int j = last_only ? k - 1 : 0; j < k; j++, n_out++)
			fwd_rmsnorm(s->logits_h + (size_t)n_out * H, s->x + (size_t)(b + 1 + j) * H, m->final_norm,
				    H, c->rms_norm_eps);
		b += k;
	}
	coli_model_matmul(m, s, &m->lm_head, s->logits_h, n_out, logits);
	s->timing.part[COLI_PART_LM_HEAD] += coli_cpu_s() - ch;
	s->timing.total += coli_now_s() - t_call;
	s->timing.other = s->timing.total - s->timing.attention - s->timing.moe - s->timing.dense_ffn;
	return 0;
}


int coli_forward_rows(coli_model *m, coli_state *s, coli_seq *const *seqs, const int *counts,
		      int n_seqs, const int *tokens, float *logits, coli_err *err)
{
	return forward_rows(m, s, seqs, counts, n_seqs, tokens, logits, 0, err);
}

int coli_forward_rows_last(coli_model *m, coli_state *s, coli_seq *const *seqs, const int *counts,
			   int n_seqs, const int *tokens, float *logits, coli_err *err)
{
	return forward_rows(m, s, seqs, counts, n_seqs, tokens, logits, 1, err);
}
