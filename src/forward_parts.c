/* forward_parts.c - the parts of a forward step (enum coli_part): their
 * names and the weight bytes a decode token reads in each, so a time
 * breakdown can be set against what each part must stream. */
#include "config.h"

#include <stddef.h>

#include "model.h"
#include "model_container.h"

static const char *const part_names[COLI_PART_COUNT] = {
	[COLI_PART_Q_A_KV_A] = "q_a_kv_a", [COLI_PART_INDEXER] = "indexer",
	[COLI_PART_Q_B] = "q_b",           [COLI_PART_ABSORB] = "absorb",
	[COLI_PART_ATTEND] = "attend",     [COLI_PART_W_UV] = "w_uv",
	[COLI_PART_O_PROJ] = "o_proj",     [COLI_PART_DENSE_FFN] = "dense_ffn",
	[COLI_PART_ROUTER] = "router",     [COLI_PART_EXPERTS] = "experts",
	[COLI_PART_LM_HEAD] = "lm_head",
};

const char *coli_part_name(int part)
{
	return part >= 0 && part < COLI_PART_COUNT ? part_names[part] : NULL;
}

/* Bytes of rows [0, rows) of w (0 for a matrix the model does not have). */
static double qmat_bytes(const coli_qmat *w, int rows)
{
	if (!w->data || rows <= 0)
		return 0.0;
	return (double)coli_qtype_bytes(w->qtype, rows, w->cols);
}

void coli_model_part_bytes(const coli_model *m, double bytes[COLI_PART_COUNT])
{
	const coli_config *c = &m->cfg;
	const int nh = c->num_attention_heads, nope = c->qk_nope_head_dim, V = c->v_head_dim;
	for (int i = 0; i < COLI_PART_COUNT; i++)
		bytes[i] = 0.0;
	for (int l = 0; l < c->num_hidden_layers; l++) {
		const coli_layer_weights *w = &m->layers[l];
		bytes[COLI_PART_Q_A_KV_A] += qmat_bytes(&w->q_a, w->q_a.rows) + qmat_bytes(&w->q, w->q.rows) +
					     qmat_bytes(&w->kv_a, w->kv_a.rows) + qmat_bytes(&w->idx_wk, w->idx_wk.rows);
		bytes[COLI_PART_INDEXER] += qmat_bytes(&w->idx_wq_b, w->idx_wq_b.rows) +
					    qmat_bytes(&w->idx_w, w->idx_w.rows);
		bytes[COLI_PART_Q_B] += qmat_bytes(&w->q_b, w->q_b.rows);
		/* kv_b holds per head nope rows of W_UK, then V rows of W_UV */
		bytes[COLI_PART_ABSORB] += qmat_bytes(&w->kv_b, nh * nope);
		bytes[COLI_PART_W_UV] += qmat_bytes(&w->kv_b, nh * V);
		bytes[COLI_PART_O_PROJ] += qmat_bytes(&w->o, w->o.rows);
		if (!w->is_moe) {
			bytes[COLI_PART_DENSE_FFN] += qmat_bytes(&w->gate, w->gate.rows) +
						      qmat_bytes(&w->up, w->up.rows) +
						      qmat_bytes(&w->down, w->down.rows);
			continue;
		}
		bytes[COLI_PART_ROUTER] += qmat_bytes(&w->router, w->router.rows);
		bytes[COLI_PART_EXPERTS] += (double)c->num_experts_per_tok * (double)m->container->expert_record_size;
		if (w->has_shared)
			bytes[COLI_PART_EXPERTS] += qmat_bytes(&w->sh_gate, w->sh_gate.rows) +
						    qmat_bytes(&w->sh_up, w->sh_up.rows) +
						    qmat_bytes(&w->sh_down, w->sh_down.rows);
	}
	bytes[COLI_PART_LM_HEAD] = qmat_bytes(&m->lm_head, m->lm_head.rows);
}
