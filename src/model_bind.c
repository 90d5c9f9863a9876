/* model_bind.c - bind a container's resident tensors to the forward pass.
 *
 * All shape checks happen here, once, so the forward pass can trust every
 * view. Missing or mis-shaped tensors are refused naming the tensor. The
 * binding needs no weights (views of a container opened with skip_load
 * point at NULL), so coli doctor runs exactly this code through
 * coli_model_check; it is also what the manifest fuzzer exercises. */
#include "config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"

static int bind_mat(const coli_model *m, coli_qmat *out, int rows, int cols, coli_err *err,
		    const char *fmt, ...) __attribute__((format(printf, 6, 7)));

static int bind_mat(const coli_model *m, coli_qmat *out, int rows, int cols, coli_err *err,
		    const char *fmt, ...)
{
	char name[256];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(name, sizeof name, fmt, ap);
	va_end(ap);
	return coli_container_qmat(m->container, name, rows, cols, out, err);
}

static int bind_vec(const coli_model *m, const float **out, int len, int optional,
		    coli_err *err, const char *fmt, ...) __attribute__((format(printf, 6, 7)));

static int bind_vec(const coli_model *m, const float **out, int len, int optional,
		    coli_err *err, const char *fmt, ...)
{
	char name[256];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(name, sizeof name, fmt, ap);
	va_end(ap);
	const coli_container_tensor *t = coli_container_find(m->container, name);
	if (!t) {
		*out = NULL;
		if (optional)
			return 0;
		return coli_err_set(err, -ENOENT, "%s/manifest.json: tensor %s is missing", m->container->dir, name);
	}
	if (t->qtype != COLI_Q_F32 || (int64_t)t->rows * t->cols != len)
		return coli_err_set(err, -EINVAL, "%s/manifest.json: tensor %s must be an f32 vector of %d values (config)",
				    m->container->dir, name, len);
	*out = t->data;
	return 0;
}

static int bind_layer(coli_model *m, int l, coli_err *err);

/* The MTP layer's routed experts are ordinary resident tensors. */
static int bind_resident_experts(coli_model *m, coli_layer_weights *w, int l, coli_err *err)
{
	const coli_config *c = &m->cfg;
	const int E = c->n_routed_experts, H = c->hidden_size, I = c->moe_intermediate_size;
	w->res_experts = calloc((size_t)E * 3, sizeof *w->res_experts);
	if (!w->res_experts)
		return coli_err_set(err, -ENOMEM, "out of memory");
	for (int e = 0; e < E; e++) {
		int rc;
		if ((rc = bind_mat(m, &w->res_experts[e * 3 + 0], I, H, err, "model.layers.%d.mlp.experts.%d.gate_proj.weight", l, e)) ||
		    (rc = bind_mat(m, &w->res_experts[e * 3 + 1], I, H, err, "model.layers.%d.mlp.experts.%d.up_proj.weight", l, e)) ||
		    (rc = bind_mat(m, &w->res_experts[e * 3 + 2], H, I, err, "model.layers.%d.mlp.experts.%d.down_proj.weight", l, e)))
			return rc;
	}
	return 0;
}

static int bind_mtp(coli_model *m, coli_err *err)
{
	const coli_config *c = &m->cfg;
	const int L = c->num_hidden_layers, H = c->hidden_size, V = c->vocab_size;
	coli_mtp_weights *t = &m->mtp;
	int rc;
	if ((rc = bind_layer(m, L, err)))
		return rc;
	if (m->layers[L].is_moe && (rc = bind_resident_experts(m, &m->layers[L], L, err)))
		return rc;
#define P "model.layers.%d."
	if ((rc = bind_vec(m, &t->enorm, H, 0, err, P "enorm.weight", L)) ||
	    (rc = bind_vec(m, &t->hnorm, H, 0, err, P "hnorm.weight", L)) ||
	    (rc = bind_mat(m, &t->eh_proj, H, 2 * H, err, P "eh_proj.weight", L)) ||
	    (rc = bind_vec(m, &t->head_norm, H, 0, err, P "shared_head.norm.weight", L)))
		return rc;
	char name[128];
	snprintf(name, sizeof name, P "embed_tokens.weight", L);
	if (coli_container_find(m->container, name)) {
		if ((rc = bind_mat(m, &t->embed, V, H, err, "%s", name)))
			return rc;
	} else {
		t->embed = m->embed;
	}
	snprintf(name, sizeof name, P "shared_head.head.weight", L);
	if (coli_container_find(m->container, name)) {
		if ((rc = bind_mat(m, &t->head, V, H, err, "%s", name)))
			return rc;
	} else {
		t->head = m->lm_head;
	}
#undef P
	return 0;
}

static int bind_layer(coli_model *m, int l, coli_err *err)
{
	const coli_config *c = &m->cfg;
	coli_layer_weights *w = &m->layers[l];
	const int H = c->hidden_size, nh = c->num_attention_heads;
	const int qk = coli_config_qk_head_dim(c);
	int rc;
#define P "model.layers.%d."
	if ((rc = bind_vec(m, &w->attn_norm, H, 0, err, P "input_layernorm.weight", l)) ||
	    (rc = bind_vec(m, &w->ffn_norm, H, 0, err, P "post_attention_layernorm.weight", l)))
		return rc;
	if (c->q_lora_rank > 0) {
		if ((rc = bind_mat(m, &w->q_a, c->q_lora_rank, H, err, P "self_attn.q_a_proj.weight", l)) ||
		    (rc = bind_vec(m, &w->q_a_norm, c->q_lora_rank, 0, err, P "self_attn.q_a_layernorm.weight", l)) ||
		    (rc = bind_mat(m, &w->q_b, nh * qk, c->q_lora_rank, err, P "self_attn.q_b_proj.weight", l)))
			return rc;
	} else if ((rc = bind_mat(m, &w->q, nh * qk, H, err, P "self_attn.q_proj.weight", l))) {
		return rc;
	}
	if ((rc = bind_mat(m, &w->kv_a, c->kv_lora_rank + c->qk_rope_head_dim, H, err,
			   P "self_attn.kv_a_proj_with_mqa.weight", l)) ||
	    (rc = bind_vec(m, &w->kv_a_norm, c->kv_lora_rank, 0, err, P "self_attn.kv_a_layernorm.weight", l)) ||
	    (rc = bind_mat(m, &w->kv_b, nh * (c->qk_nope_head_dim + c->v_head_dim), c->kv_lora_rank, err,
			   P "self_attn.kv_b_proj.weight", l)) ||
	    (rc = bind_mat(m, &w->o, H, nh * c->v_head_dim, err, P "self_attn.o_proj.weight", l)))
		return rc;
	/* a shared layer's indexer weights are never loaded (convert leaves
	 * them out); a full layer must have them */
	w->has_indexer = coli_config_layer_index_full(c, l);
	if (w->has_indexer) {
		const int IH = c->index_n_heads, ID = c->index_head_dim;
		if ((rc = bind_mat(m, &w->idx_wq_b, IH * ID, c->q_lora_rank, err, P "self_attn.indexer.wq_b.weight", l)) ||
		    (rc = bind_mat(m, &w->idx_wk, ID, H, err, P "self_attn.indexer.wk.weight", l)) ||
		    (rc = bind_vec(m, &w->idx_k_norm, ID, 0, err, P "self_attn.indexer.k_norm.weight", l)) ||
		    (rc = bind_vec(m, &w->idx_k_bias, ID, 0, err, P "self_attn.indexer.k_norm.bias", l)) ||
		    (rc = bind_mat(m, &w->idx_w, IH, H, err, P "self_attn.indexer.weights_proj.weight", l)))
			return rc;
	}
	w->is_moe = coli_config_layer_is_moe(c, l);
	if (!w->is_moe) {
		const int I = c->intermediate_size;
		if ((rc = bind_mat(m, &w->gate, I, H, err, P "mlp.gate_proj.weight", l)) ||
		    (rc = bind_mat(m, &w->up, I, H, err, P "mlp.up_proj.weight", l)) ||
		    (rc = bind_mat(m, &w->down, H, I, err, P "mlp.down_proj.weight", l)))
			return rc;
		return 0;
	}
	if ((rc = bind_mat(m, &w->router, c->n_routed_experts, H, err, P "mlp.gate.weight", l)) ||
	    (rc = bind_vec(m, &w->router_bias, c->n_routed_experts, 1, err,
			   P "mlp.gate.e_score_correction_bias", l)))
		return rc;
	w->has_shared = c->n_shared_experts > 0;
	if (w->has_shared) {
		const int Is = c->moe_intermediate_size * c->n_shared_experts;
		if ((rc = bind_mat(m, &w->sh_gate, Is, H, err, P "mlp.shared_experts.gate_proj.weight", l)) ||
		    (rc = bind_mat(m, &w->sh_up, Is, H, err, P "mlp.shared_experts.up_proj.weight", l)) ||
		    (rc = bind_mat(m, &w->sh_down, H, Is, err, P "mlp.shared_experts.down_proj.weight", l)))
			return rc;
	}
#undef P
	return 0;
}

/* Every view the forward pass uses, bound and shape-checked against the
 * config: shared by coli_model_open and coli_model_check (coli doctor), so
 * what doctor accepts is exactly what runs. Works on a container opened
 * with skip_load (views then point at NULL). */
int coli_model_bind(coli_model *m, coli_err *err)
{
	const coli_config *c = &m->cfg;
	const char *dir = m->container->dir;
	int rc = 0;
	if (c->qk_rope_head_dim % 2)
		return coli_err_set(err, -EINVAL, "%s: config: qk_rope_head_dim %d must be even", dir,
				    c->qk_rope_head_dim);
	m->layers = calloc((size_t)(c->num_hidden_layers + m->n_mtp), sizeof *m->layers);
	if (!m->layers)
		return coli_err_set(err, -ENOMEM, "out of memory");
	if ((rc = bind_mat(m, &m->embed, c->vocab_size, c->hidden_size, err, "model.embed_tokens.weight")) ||
	    (rc = bind_vec(m, &m->final_norm, c->hidden_size, 0, err, "model.norm.weight")))
		return rc;
	if (coli_container_find(m->container, "lm_head.weight"))
		rc = bind_mat(m, &m->lm_head, c->vocab_size, c->hidden_size, err, "lm_head.weight");
	else if (c->tie_word_embeddings)
		m->lm_head = m->embed;
	else
		rc = coli_err_set(err, -ENOENT, "%s/manifest.json: tensor lm_head.weight is missing", dir);
	if (rc)
		return rc;
	for (int l = 0; l < c->num_hidden_layers; l++)
		if ((rc = bind_layer(m, l, err)))
			return rc;
	if (m->n_mtp && (rc = bind_mtp(m, err)))
		return rc;
	return 0;
}

void coli_model_unbind(coli_model *m)
{
	for (int l = 0; m->layers && l < m->cfg.num_hidden_layers + m->n_mtp; l++)
		free(m->layers[l].res_experts);
	free(m->layers);
	m->layers = NULL;
}

int coli_model_check(const coli_container *c, int mtp, coli_err *err)
{
	coli_model m;
	memset(&m, 0, sizeof m);
	m.container = (coli_container *)c;
	m.cfg = c->config;
	m.n_mtp = mtp && c->config.num_nextn_predict_layers > 0;
	int rc = coli_model_bind(&m, err);
	coli_model_unbind(&m);
	return rc;
}

