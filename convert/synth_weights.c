/* synth_weights.c - the tensor plan of a synthesized model and its data.
 *
 * Tensor names and shapes follow the Hugging Face DeepSeek-V3 layout
 * (model.layers.N.self_attn.q_a_proj.weight ...), including the MTP layers
 * stored after the main ones (model.layers.L.{embed_tokens, enorm, hnorm,
 * eh_proj, shared_head.norm, shared_head.head} plus a full decoder layer)
 * and, for glm_moe_dsa, the DSA indexer (self_attn.indexer.{wq_b, wk,
 * k_norm, weights_proj}).
 *
 * With --dtype fp8 the 2-D projection weights of the decoder layers are
 * F8_E4M3 with an F32 "<name>_scale_inv" [ceil(rows/128)][ceil(cols/128)]
 * right after them (dequantized weight = fp8 value * scale_inv), as in the
 * official releases; embeddings, lm_head, routers, eh_proj, the indexer's
 * weights_proj and all norms are BF16, e_score_correction_bias F32. */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coli_log.h"
#include "ingest_safetensors.h"
#include "ingest_safetensors_write.h"
#include "synth_impl.h"
#include "util_array.h"

enum synth_kind {
	SK_LINEAR,   /* N(0, 1/fan_in) */
	SK_EMBED,    /* N(0, 1) */
	SK_NORM,     /* 1 + N(0, 0.05^2) */
	SK_BIAS,     /* N(0, 0.02^2): router bias, LayerNorm bias */
	SK_SCALE,    /* block scales of the preceding FP8 tensor */
};

typedef struct synth_tensor {
	char name[128];
	int kind;
	int dtype;
	int ndim;
	int64_t shape[2];
} synth_tensor;

typedef struct synth_list {
	const synth_opts *o;
	synth_tensor *t;
	int n, cap;
	int oom;
} synth_list;

/* ---- PRNG: splitmix64 stream per tensor, Box-Muller normals ---- */

typedef struct synth_rng {
	uint64_t s;
	int have_spare;
	double spare;
} synth_rng;

static uint64_t synth_splitmix(uint64_t *s)
{
	uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	return z ^ (z >> 31);
}

static void synth_rng_init(synth_rng *r, uint64_t seed, const char *name)
{
	uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a of the name */
	for (const unsigned char *p = (const unsigned char *)name; *p; p++)
		h = (h ^ *p) * 0x100000001b3ull;
	r->s = seed * 0x9E3779B97F4A7C15ull ^ h;
	r->have_spare = 0;
	synth_splitmix(&r->s);
}

static double synth_normal(synth_rng *r)
{
	if (r->have_spare) {
		r->have_spare = 0;
		return r->spare;
	}
	/* u1 in (0, 1] so log() is finite. */
	double u1 = (double)((synth_splitmix(&r->s) >> 11) + 1) * 0x1.0p-53;
	double u2 = (double)(synth_splitmix(&r->s) >> 11) * 0x1.0p-53;
	double m = sqrt(-2.0 * log(u1)), a = 2.0 * M_PI * u2;
	r->spare = m * sin(a);
	r->have_spare = 1;
	return m * cos(a);
}

/* ---- the plan ---- */

static int synth_base_dtype(const synth_opts *o)
{
	return o->dtype == ST_F8_E4M3 ? ST_BF16 : o->dtype;
}

static synth_tensor *synth_push(synth_list *L, int kind, int dtype, int ndim, int64_t d0, int64_t d1,
				const char *fmt, ...) __attribute__((format(printf, 7, 8)));

static synth_tensor *synth_push(synth_list *L, int kind, int dtype, int ndim, int64_t d0, int64_t d1,
				const char *fmt, ...)
{
	if (L->oom)
		return NULL;
	if (util_array_grow(&L->t, &L->cap, L->n + 1, 512)) {
		L->oom = 1;
		return NULL;
	}
	synth_tensor *t = &L->t[L->n++];
	memset(t, 0, sizeof(*t));
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(t->name, sizeof(t->name), fmt, ap);
	va_end(ap);
	t->kind = kind;
	t->dtype = dtype;
	t->ndim = ndim;
	t->shape[0] = d0;
	t->shape[1] = d1;
	return t;
}

/* A projection [out][in]; FP8 (plus its scale tensor) when allowed. */
static void synth_linear(synth_list *L, bool fp8_ok, int64_t out, int64_t in, const char *pfx,
			 const char *name)
{
	bool fp8 = fp8_ok && L->o->dtype == ST_F8_E4M3;
	synth_push(L, SK_LINEAR, fp8 ? ST_F8_E4M3 : synth_base_dtype(L->o), 2, out, in, "%s%s.weight", pfx,
		   name);
	if (fp8)
		synth_push(L, SK_SCALE, ST_F32, 2, (out + SYNTH_FP8_BLOCK - 1) / SYNTH_FP8_BLOCK,
			   (in + SYNTH_FP8_BLOCK - 1) / SYNTH_FP8_BLOCK, "%s%s.weight_scale_inv", pfx, name);
}

static void synth_norm(synth_list *L, int64_t n, const char *pfx, const char *name)
{
	synth_push(L, SK_NORM, synth_base_dtype(L->o), 1, n, 0, "%s%s.weight", pfx, name);
}

static void synth_mlp(synth_list *L, int64_t width, const char *pfx)
{
	int64_t H = L->o->cfg.hidden_size;
	synth_linear(L, true, width, H, pfx, "gate_proj");
	synth_linear(L, true, width, H, pfx, "up_proj");
	synth_linear(L, true, H, width, pfx, "down_proj");
}

static void synth_layer(synth_list *L, int i)
{
	const coli_config *c = &L->o->cfg;
	int64_t H = c->hidden_size, nh = c->num_attention_heads;
	int64_t qk = c->qk_nope_head_dim + c->qk_rope_head_dim;
	char p[96], q[128];
	snprintf(p, sizeof(p), "model.layers.%d.", i);
	if (i >= c->num_hidden_layers) { /* MTP head in front of the layer */
		synth_push(L, SK_EMBED, synth_base_dtype(L->o), 2, c->vocab_size, H, "%sembed_tokens.weight", p);
		synth_norm(L, H, p, "enorm");
		synth_norm(L, H, p, "hnorm");
		synth_linear(L, false, H, 2 * H, p, "eh_proj");
		synth_norm(L, H, p, "shared_head.norm");
		synth_linear(L, false, c->vocab_size, H, p, "shared_head.head");
	}
	synth_norm(L, H, p, "input_layernorm");
	snprintf(q, sizeof(q), "%sself_attn.", p);
	if (c->q_lora_rank) {
		synth_linear(L, true, c->q_lora_rank, H, q, "q_a_proj");
		synth_norm(L, c->q_lora_rank, q, "q_a_layernorm");
		synth_linear(L, true, nh * qk, c->q_lora_rank, q, "q_b_proj");
	} else {
		synth_linear(L, true, nh * qk, H, q, "q_proj");
	}
	synth_linear(L, true, c->kv_lora_rank + c->qk_rope_head_dim, H, q, "kv_a_proj_with_mqa");
	synth_norm(L, c->kv_lora_rank, q, "kv_a_layernorm");
	synth_linear(L, true, nh * (c->qk_nope_head_dim + c->v_head_dim), c->kv_lora_rank, q, "kv_b_proj");
	synth_linear(L, true, H, nh * c->v_head_dim, q, "o_proj");
	/* shared layers reuse an earlier layer's selection: GLM-5.2 stores no
	 * indexer there, other checkpoints may (--shared-indexer-weights) */
	if (L->o->indexer && c->q_lora_rank && c->index_n_heads > 0 &&
	    (coli_config_layer_index_full(c, i) || L->o->shared_indexer_weights)) {
		snprintf(q, sizeof(q), "%sself_attn.indexer.", p);
		synth_linear(L, true, (int64_t)c->index_n_heads * c->index_head_dim, c->q_lora_rank, q, "wq_b");
		synth_linear(L, true, c->index_head_dim, H, q, "wk");
		synth_norm(L, c->index_head_dim, q, "k_norm");
		synth_push(L, SK_BIAS, synth_base_dtype(L->o), 1, c->index_head_dim, 0, "%sk_norm.bias", q);
		synth_linear(L, false, c->index_n_heads, H, q, "weights_proj");
	}
	synth_norm(L, H, p, "post_attention_layernorm");
	if (!coli_config_layer_is_moe(c, i)) {
		snprintf(q, sizeof(q), "%smlp.", p);
		synth_mlp(L, c->intermediate_size, q);
		return;
	}
	snprintf(q, sizeof(q), "%smlp.", p);
	synth_linear(L, false, c->n_routed_experts, H, q, "gate");
	synth_push(L, SK_BIAS, ST_F32, 1, c->n_routed_experts, 0, "%sgate.e_score_correction_bias", q);
	for (int e = 0; e < c->n_routed_experts; e++) {
		snprintf(q, sizeof(q), "%smlp.experts.%d.", p, e);
		synth_mlp(L, c->moe_intermediate_size, q);
	}
	if (c->n_shared_experts > 0) {
		snprintf(q, sizeof(q), "%smlp.shared_experts.", p);
		synth_mlp(L, (int64_t)c->n_shared_experts * c->moe_intermediate_size, q);
	}
}

static int synth_build_plan(const synth_opts *o, synth_list *L, coli_err *err)
{
	const coli_config *c = &o->cfg;
	memset(L, 0, sizeof(*L));
	L->o = o;
	synth_push(L, SK_EMBED, synth_base_dtype(o), 2, c->vocab_size, c->hidden_size, "model.embed_tokens.weight");
	for (int i = 0; i < c->num_hidden_layers + c->num_nextn_predict_layers; i++)
		synth_layer(L, i);
	synth_norm(L, c->hidden_size, "model.", "norm");
	if (!c->tie_word_embeddings)
		synth_linear(L, false, c->vocab_size, c->hidden_size, "", "lm_head");
	if (L->oom) {
		free(L->t);
		L->t = NULL;
		return coli_err_set(err, -ENOMEM, "synth: out of memory planning tensors");
	}
	return 0;
}

static int synth_declare_all(st_writer *w, const synth_list *L, coli_err *err)
{
	for (int i = 0; i < L->n; i++) {
		const synth_tensor *t = &L->t[i];
		int rc = st_writer_declare(w, t->name, t->dtype, t->ndim, t->shape, err);
		if (rc)
			return rc;
	}
	return 0;
}

int synth_plan(const synth_opts *o, int *n_tensors, uint64_t *bytes, coli_err *err)
{
	synth_list L;
	st_writer *w = NULL;
	int rc = synth_check(o, err);
	if (rc || (rc = synth_build_plan(o, &L, err)))
		return rc;
	if (!(rc = st_writer_new(".", 1, &w, err)) && !(rc = synth_declare_all(w, &L, err))) {
		*n_tensors = st_writer_n_tensors(w);
		*bytes = st_writer_total_bytes(w);
	}
	st_writer_free(w);
	free(L.t);
	return rc;
}

/* ---- data ---- */

static double synth_value(const synth_tensor *t, synth_rng *r)
{
	switch (t->kind) {
	case SK_LINEAR: return synth_normal(r) / sqrt((double)t->shape[1]);
	case SK_EMBED: return synth_normal(r);
	case SK_NORM: return 1.0 + 0.05 * synth_normal(r);
	default: return 0.02 * synth_normal(r);
	}
}

/* Generate one tensor band by band (128 rows). For FP8 each 128x128 block
 * is divided by its scale amax/448 before conversion; the scales are kept
 * in `sc` for the _scale_inv tensor that follows. */
static int synth_gen_tensor(st_writer *w, const synth_tensor *t, uint64_t seed, float *buf, float *sc,
			    coli_err *err)
{
	synth_rng r;
	synth_rng_init(&r, seed, t->name);
	int64_t rows = t->ndim == 2 ? t->shape[0] : 1;
	int64_t cols = t->ndim == 2 ? t->shape[1] : t->shape[0];
	int64_t ncb = (cols + SYNTH_FP8_BLOCK - 1) / SYNTH_FP8_BLOCK;
	for (int64_t r0 = 0; r0 < rows; r0 += SYNTH_FP8_BLOCK) {
		int64_t nr = rows - r0 < SYNTH_FP8_BLOCK ? rows - r0 : SYNTH_FP8_BLOCK;
		for (int64_t k = 0; k < nr * cols; k++)
			buf[k] = (float)synth_value(t, &r);
		if (t->dtype == ST_F8_E4M3) {
			for (int64_t cb = 0; cb < ncb; cb++) {
				int64_t c0 = cb * SYNTH_FP8_BLOCK;
				int64_t c1 = c0 + SYNTH_FP8_BLOCK < cols ? c0 + SYNTH_FP8_BLOCK : cols;
				float amax = 0.0f;
				for (int64_t i = 0; i < nr; i++)
					for (int64_t j = c0; j < c1; j++)
						amax = fmaxf(amax, fabsf(buf[i * cols + j]));
				float s = amax > 0.0f ? amax / 448.0f : 1.0f;
				sc[(r0 / SYNTH_FP8_BLOCK) * ncb + cb] = s;
				for (int64_t i = 0; i < nr; i++)
					for (int64_t j = c0; j < c1; j++)
						buf[i * cols + j] /= s;
			}
		}
		int rc = st_writer_write_f32(w, buf, (size_t)(nr * cols), err);
		if (rc)
			return rc;
	}
	return 0;
}

int synth_weights_write(const char *out_dir, const synth_opts *o, coli_err *err)
{
	synth_list L;
	st_writer *w = NULL;
	float *buf = NULL, *sc = NULL;
	int64_t sc_n = 0;
	int rc = synth_build_plan(o, &L, err);
	if (rc)
		return rc;
	int64_t maxcols = 1, maxblocks = 1;
	for (int i = 0; i < L.n; i++) {
		int64_t cols = L.t[i].ndim == 2 ? L.t[i].shape[1] : L.t[i].shape[0];
		if (cols > maxcols)
			maxcols = cols;
		if (L.t[i].kind == SK_SCALE && L.t[i].shape[0] * L.t[i].shape[1] > maxblocks)
			maxblocks = L.t[i].shape[0] * L.t[i].shape[1];
	}
	buf = malloc((size_t)(maxcols * SYNTH_FP8_BLOCK) * sizeof(float));
	sc = malloc((size_t)maxblocks * sizeof(float));
	if (!buf || !sc) {
		rc = coli_err_set(err, -ENOMEM, "synth: out of memory");
		goto out;
	}
	if ((rc = st_writer_new(out_dir, o->n_shards, &w, err)) || (rc = synth_declare_all(w, &L, err)) ||
	    (rc = st_writer_begin(w, err)))
		goto out;
	for (int i = 0; i < L.n; i++) {
		const synth_tensor *t = &L.t[i];
		if (t->kind == SK_SCALE) {
			if (t->shape[0] * t->shape[1] != sc_n) {
				rc = coli_err_set(err, -EINVAL, "synth: %s does not follow its weight", t->name);
				goto out;
			}
			rc = st_writer_write_f32(w, sc, (size_t)sc_n, err);
		} else {
			rc = synth_gen_tensor(w, t, o->seed, buf, sc, err);
			sc_n = t->dtype == ST_F8_E4M3 ? ((t->shape[0] + SYNTH_FP8_BLOCK - 1) / SYNTH_FP8_BLOCK) *
							       ((t->shape[1] + SYNTH_FP8_BLOCK - 1) / SYNTH_FP8_BLOCK)
						      : 0;
		}
		if (rc)
			goto out;
		if (i % 256 == 255)
			coli_debug("synth: %d/%d tensors written", i + 1, L.n);
		if (o->progress)
			o->progress(o->progress_opaque, i + 1, L.n);
	}
	rc = st_writer_finish(w, err);
out:
	st_writer_free(w);
	free(buf);
	free(sc);
	free(L.t);
	return rc;
}
