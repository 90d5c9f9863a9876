/* convert_plan.c - what `coli convert` will write, decided before writing.
 *
 * From config.json and the checkpoint's tensor index we build the list of
 * output files and, for each, its tensors with their quant type and byte
 * offset. Every tensor the architecture needs is checked for presence and
 * shape here, before a byte is written, so a bad checkpoint fails in
 * seconds with one line naming the tensor. The plan is a pure function of
 * the arguments and the checkpoint, which is what makes resume possible: a
 * skipped file's offsets are known without reading it. */
#include "config.h"

#define COLI_CONVERT_INTERNAL 1
#include "convert.h"

#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "coli_log.h"
#include "model_hf_config.h"
#include "quant.h"
#include "util_array.h"
#include "util_sha256.h"

#define ALIGN_UP(x, a) (((x) + (a) - 1) / (a) * (a))

typedef struct plan_ctx {
	const convert_opts *o;
	convert_plan *p;
	unsigned char *claimed;   /* per checkpoint tensor */
	int n_indexer_skipped;    /* indexer tensors of shared layers (unused) */
	int n_unknown;            /* other tensors we do not know (kept f32) */
	const char *first_unknown;
} plan_ctx;

/* Tensors outside the known architecture are kept (f32) and reported in
 * one line each kind, not one line per tensor per layer. */
static void note_unknown(plan_ctx *c, const char *name)
{
	if (!c->n_unknown++)
		c->first_unknown = name;
}

static convert_file *file_add(convert_plan *p, int kind, int layer, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static convert_file *file_add(convert_plan *p, int kind, int layer, const char *fmt, ...)
{
	if (util_array_grow(&p->files, &p->cap_files, p->n_files + 1, 16))
		return NULL;
	convert_file *f = &p->files[p->n_files++];
	memset(f, 0, sizeof *f);
	f->kind = kind;
	f->layer = layer;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(f->path, sizeof f->path, fmt, ap);
	va_end(ap);
	return f;
}

static int dtype_supported(int dt)
{
	return dt == ST_F32 || dt == ST_F16 || dt == ST_BF16 || dt == ST_F8_E4M3;
}

/* The quant policy (coli-convert(1) explains each rule). */
static int policy_qtype(const convert_opts *o, int cls, int is_vector, int cols, int *fallback)
{
	int q;
	*fallback = 0;
	if (is_vector)
		return COLI_Q_F32;
	switch (cls) {
	case CONVERT_CLS_ROUTERS:
	case CONVERT_CLS_NORMS:
	case CONVERT_CLS_OTHER:
		return COLI_Q_F32;
	case CONVERT_CLS_EMBED:
	case CONVERT_CLS_LM_HEAD:
		if (o->embed_quant_set)
			q = o->embed_quant;
		else
			q = o->quant == COLI_Q_F32 ? COLI_Q_F32 : COLI_Q_INT8;
		break;
	case CONVERT_CLS_MTP:
		q = o->mtp_quant;
		break;
	case CONVERT_CLS_INDEXER:
		q = convert_indexer_qtype(o);
		break;
	default:
		q = o->quant;
	}
	if (q != COLI_Q_F32 && cols % COLI_QK != 0) {
		*fallback = 1;
		q = COLI_Q_F32;
	}
	return q;
}

/* Base name of the safetensors file holding t, for error messages. */
static const char *src_file(const convert_plan *p, const st_tensor *t)
{
	if (t->file_index < 0 || t->file_index >= p->ck->n_files)
		return "?";
	const char *f = p->ck->files[t->file_index], *b = strrchr(f, '/');
	return b ? b + 1 : f;
}

static void shape_str(const st_tensor *t, char *buf, size_t n)
{
	size_t k = 0;
	k += (size_t)snprintf(buf + k, n - k, "[");
	for (int i = 0; i < t->ndim && k < n; i++)
		k += (size_t)snprintf(buf + k, n - k, "%s%lld", i ? ", " : "", (long long)t->shape[i]);
	if (k < n)
		snprintf(buf + k, n - k, "]");
}

/* Append a tensor to f. rows/cols > 0: expected shape (cols == 0: vector of
 * `rows`); rows < 0: take the shape from the checkpoint (extras). */
static int add_tensor(plan_ctx *c, convert_file *f, const st_tensor *t, int rows, int cols,
		      int cls, coli_err *err)
{
	convert_plan *p = c->p;
	char got[96];
	shape_str(t, got, sizeof got);
	if (!dtype_supported(t->dtype))
		return coli_err_set(err, -EINVAL, "%s: tensor %s: unsupported dtype %s",
				    src_file(p, t), t->name, st_dtype_name(t->dtype));
	if (rows >= 0) {
		int ok = cols == 0 ? (t->ndim == 1 && t->shape[0] == rows)
				   : (t->ndim == 2 && t->shape[0] == rows && t->shape[1] == cols);
		if (!ok) {
			if (cols == 0)
				return coli_err_set(err, -EINVAL,
						    "%s: tensor %s: shape %s, config.json implies [%d]",
						    src_file(p, t), t->name, got, rows);
			return coli_err_set(err, -EINVAL,
					    "%s: tensor %s: shape %s, config.json implies [%d, %d]",
					    src_file(p, t), t->name, got, rows, cols);
		}
	} else {
		/* Unknown tensor: keep its elements, as rows x last dim. */
		int64_t r = 1, cc = t->ndim ? t->shape[t->ndim - 1] : 1;
		for (int i = 0; i + 1 < t->ndim; i++)
			r *= t->shape[i];
		if (t->ndim <= 1) {
			r = t->ndim ? t->shape[0] : 1;
			cc = 0;
		}
		if (r > 0x7fffffff || cc > 0x7fffffff || r <= 0)
			return coli_err_set(err, -EINVAL, "tensor %s: unsupported shape %s", t->name, got);
		rows = (int)r;
		cols = (int)cc;
	}
	int is_vector = cols == 0;
	if (is_vector)
		cols = 1;
	if (util_array_grow(&f->t, &f->cap_t, f->n_t + 1, 16))
		return coli_err_set(err, -ENOMEM, "out of memory");
	convert_tensor *nt = &f->t[f->n_t++];
	memset(nt, 0, sizeof *nt);
	nt->src = t;
	nt->cls = is_vector ? CONVERT_CLS_NORMS : cls;
	nt->rows = rows;
	nt->cols = cols;
	nt->qtype = policy_qtype(c->o, nt->cls, is_vector, cols, &nt->fallback);
	nt->offset = ALIGN_UP(f->size, 64);
	nt->nbytes = coli_qtype_bytes(nt->qtype, rows, cols);
	f->size = nt->offset + nt->nbytes;
	if (nt->fallback)
		p->n_fallback++;
	if ((size_t)rows * (size_t)cols > p->max_tensor_elems)
		p->max_tensor_elems = (size_t)rows * (size_t)cols;
	p->n_tensors++;
	c->claimed[t - p->ck->tensors] = 1;
	return 0;
}

static int need(plan_ctx *c, convert_file *f, const char *name, int rows, int cols, int cls,
		coli_err *err)
{
	const st_tensor *t = st_find(c->p->ck, name);
	if (!t)
		return coli_err_set(err, -ENOENT, "checkpoint has no tensor %s (required by config.json)",
				    name);
	return add_tensor(c, f, t, rows, cols, cls, err);
}

static int check_expert(plan_ctx *c, const char *name, int rows, int cols,
			const st_tensor **out, coli_err *err)
{
	char got[96];
	const st_tensor *t = st_find(c->p->ck, name);
	if (!t)
		return coli_err_set(err, -ENOENT, "checkpoint has no tensor %s (required by config.json)",
				    name);
	if (!dtype_supported(t->dtype))
		return coli_err_set(err, -EINVAL, "%s: tensor %s: unsupported dtype %s",
				    src_file(c->p, t), t->name, st_dtype_name(t->dtype));
	if (t->ndim != 2 || t->shape[0] != rows || t->shape[1] != cols) {
		shape_str(t, got, sizeof got);
		return coli_err_set(err, -EINVAL, "%s: tensor %s: shape %s, config.json implies [%d, %d]",
				    src_file(c->p, t), name, got, rows, cols);
	}
	c->claimed[t - c->p->ck->tensors] = 1;
	*out = t;
	return 0;
}

/* The tensors of one decoder layer (main or MTP). Routed experts go to
 * `shard` when given, else into f as resident tensors (MTP). */
static int plan_layer(plan_ctx *c, convert_file *f, convert_file *shard, int L, int mtp,
		      coli_err *err)
{
	const coli_config *g = &c->p->cfg;
	const int H = g->hidden_size, nh = g->num_attention_heads;
	const int qk = coli_config_qk_head_dim(g);
	char n[256];
	int rc = 0;
	int A = mtp ? CONVERT_CLS_MTP : CONVERT_CLS_ATTENTION;
	char sfx[96];
#define NEED(rows, cols, cls, suffix)                                  \
	do {                                                           \
		snprintf(n, sizeof n, "model.layers.%d.%s", L, suffix); \
		rc = need(c, f, n, rows, cols, cls, err);              \
		if (rc < 0)                                            \
			return rc;                                     \
	} while (0)
	NEED(H, 0, A, "input_layernorm.weight");
	if (g->q_lora_rank > 0) {
		NEED(g->q_lora_rank, H, A, "self_attn.q_a_proj.weight");
		NEED(g->q_lora_rank, 0, A, "self_attn.q_a_layernorm.weight");
		NEED(nh * qk, g->q_lora_rank, A, "self_attn.q_b_proj.weight");
	} else {
		NEED(nh * qk, H, A, "self_attn.q_proj.weight");
	}
	NEED(g->kv_lora_rank + g->qk_rope_head_dim, H, A, "self_attn.kv_a_proj_with_mqa.weight");
	NEED(g->kv_lora_rank, 0, A, "self_attn.kv_a_layernorm.weight");
	NEED(nh * (g->qk_nope_head_dim + g->v_head_dim), g->kv_lora_rank, A,
	     "self_attn.kv_b_proj.weight");
	NEED(H, nh * g->v_head_dim, A, "self_attn.o_proj.weight");
	if (coli_config_layer_index_full(g, L)) {
		/* the DSA indexer: its projections quantized like attention,
		 * the per-head weights and the key norm exact */
		const int IH = g->index_n_heads, ID = g->index_head_dim, I = mtp ? A : CONVERT_CLS_INDEXER;
		NEED(IH * ID, g->q_lora_rank, I, "self_attn.indexer.wq_b.weight");
		NEED(ID, H, I, "self_attn.indexer.wk.weight");
		NEED(ID, 0, I, "self_attn.indexer.k_norm.weight");
		NEED(ID, 0, I, "self_attn.indexer.k_norm.bias");
		NEED(IH, H, CONVERT_CLS_ROUTERS, "self_attn.indexer.weights_proj.weight");
	}
	NEED(H, 0, A, "post_attention_layernorm.weight");
	if (coli_config_layer_is_moe(g, L)) {
		const int E = g->n_routed_experts, I = g->moe_intermediate_size;
		NEED(E, H, CONVERT_CLS_ROUTERS, "mlp.gate.weight");
		NEED(E, 0, CONVERT_CLS_ROUTERS, "mlp.gate.e_score_correction_bias");
		if (g->n_shared_experts > 0) {
			int S = I * g->n_shared_experts, cls = mtp ? A : CONVERT_CLS_SHARED_EXPERTS;
			NEED(S, H, cls, "mlp.shared_experts.gate_proj.weight");
			NEED(S, H, cls, "mlp.shared_experts.up_proj.weight");
			NEED(H, S, cls, "mlp.shared_experts.down_proj.weight");
		}
		if (shard) {
			shard->experts = calloc((size_t)E * 3, sizeof *shard->experts);
			if (!shard->experts)
				return coli_err_set(err, -ENOMEM, "out of memory");
			static const char *const part[3] = { "gate_proj", "up_proj", "down_proj" };
			for (int e = 0; e < E; e++)
				for (int k = 0; k < 3; k++) {
					snprintf(n, sizeof n, "model.layers.%d.mlp.experts.%d.%s.weight",
						 L, e, part[k]);
					rc = check_expert(c, n, k == 2 ? H : I, k == 2 ? I : H,
							  &shard->experts[e * 3 + k], err);
					if (rc < 0)
						return rc;
				}
			shard->size = (uint64_t)E * c->p->record_size;
		} else {
			for (int e = 0; e < E; e++) {
				snprintf(sfx, sizeof sfx, "mlp.experts.%d.gate_proj.weight", e);
				NEED(I, H, A, sfx);
				snprintf(sfx, sizeof sfx, "mlp.experts.%d.up_proj.weight", e);
				NEED(I, H, A, sfx);
				snprintf(sfx, sizeof sfx, "mlp.experts.%d.down_proj.weight", e);
				NEED(H, I, A, sfx);
			}
		}
	} else {
		const int I = g->intermediate_size, cls = mtp ? A : CONVERT_CLS_DENSE_FFN;
		NEED(I, H, cls, "mlp.gate_proj.weight");
		NEED(I, H, cls, "mlp.up_proj.weight");
		NEED(H, I, cls, "mlp.down_proj.weight");
	}
#undef NEED
	/* Tensors of this layer we do not know (GLM-5 indexer, MTP extras such
	 * as enorm/hnorm/eh_proj/shared_head.*): stored so nothing is lost. */
	snprintf(n, sizeof n, "model.layers.%d.", L);
	size_t nl = strlen(n);
	for (int i = 0; i < c->p->ck->n_tensors; i++) {
		const st_tensor *t = &c->p->ck->tensors[i];
		if (c->claimed[i] || strncmp(t->name, n, nl) != 0)
			continue;
		if (st_is_fp8_scale(c->p->ck, t))
			continue;
		if (coli_config_has_indexer(g) && strstr(t->name, ".self_attn.indexer.")) {
			/* a shared layer's indexer is never run: not stored */
			c->claimed[i] = 1;
			c->n_indexer_skipped++;
			continue;
		}
		rc = add_tensor(c, f, t, -1, 0, mtp ? CONVERT_CLS_MTP : CONVERT_CLS_OTHER, err);
		if (rc < 0)
			return rc;
		if (!mtp)
			note_unknown(c, t->name);
	}
	return 0;
}

static void expert_layout(convert_plan *p, const convert_opts *o)
{
	const coli_config *g = &p->cfg;
	const int H = g->hidden_size, I = g->moe_intermediate_size;
	p->expert_qtype = o->quant;
	if (o->quant != COLI_Q_F32 && (H % COLI_QK || I % COLI_QK)) {
		p->expert_qtype = COLI_Q_F32;
		p->expert_fallback = 1;
	}
	p->part_rows[0] = p->part_rows[1] = I;
	p->part_cols[0] = p->part_cols[1] = H;
	p->part_rows[2] = H;
	p->part_cols[2] = I;
	uint64_t off = 0;
	for (int k = 0; k < 3; k++) {
		off = ALIGN_UP(off, 64);
		p->part_off[k] = off;
		off += coli_qtype_bytes(p->expert_qtype, p->part_rows[k], p->part_cols[k]);
	}
	p->record_size = ALIGN_UP(off, 4096);
	if ((size_t)H * (size_t)I > p->max_tensor_elems)
		p->max_tensor_elems = (size_t)H * (size_t)I;
}

int convert_is_tokenizer_file(const char *name)
{
	static const char *const exact[] = { "special_tokens_map.json", "added_tokens.json",
					     "vocab.json", "merges.txt", "chat_template.json",
					     "chat_template.jinja", "generation_config.json",
					     "tiktoken.model", NULL };
	size_t n = strlen(name);
	if (!strncmp(name, "tokenizer", 9))
		return 1;
	if (n > 9 && !strcmp(name + n - 9, ".tiktoken"))
		return 1;
	for (int i = 0; exact[i]; i++)
		if (!strcmp(name, exact[i]))
			return 1;
	return 0;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int plan_tokenizer(convert_plan *p, const char *src, coli_err *err)
{
	DIR *d = opendir(src);
	if (!d)
		return coli_err_set(err, -errno, "%s: %s", src, strerror(errno));
	char **names = NULL;
	int n = 0, cap = 0, rc = 0;
	struct dirent *de;
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.' || !convert_is_tokenizer_file(de->d_name))
			continue;
		if (util_array_grow(&names, &cap, n + 1, 8) || !(names[n] = strdup(de->d_name))) {
			rc = coli_err_set(err, -ENOMEM, "out of memory");
			goto out;
		}
		n++;
	}
	qsort(names, (size_t)n, sizeof *names, cmp_str);
	for (int i = 0; i < n; i++) {
		struct stat st;
		char path[4096];
		snprintf(path, sizeof path, "%s/%s", src, names[i]);
		if (stat(path, &st) < 0 || !S_ISREG(st.st_mode))
			continue;
		convert_file *f = file_add(p, CONVERT_FILE_COPY, -1, "tokenizer/%s", names[i]);
		if (!f || !(f->copy_src = strdup(path))) {
			rc = coli_err_set(err, -ENOMEM, "out of memory");
			goto out;
		}
		f->size = (uint64_t)st.st_size;
	}
	if (n == 0)
		coli_warn("%s: no tokenizer files (tokenizer.json ...) found", src);
out:
	for (int i = 0; i < n; i++)
		free(names[i]);
	free(names);
	closedir(d);
	return rc;
}

int convert_plan_build(const convert_opts *o, convert_plan *p, coli_err *err)
{
	int rc;
	char path[4096];
	plan_ctx c = { .o = o, .p = p };
	memset(p, 0, sizeof *p);
	snprintf(path, sizeof path, "%s/config.json", o->src_dir);
	rc = hf_config_load(path, &p->cfg, err);
	if (rc < 0)
		return rc;
	rc = hf_config_validate(&p->cfg, err);
	if (rc < 0)
		return coli_err_wrap(err, "%s", path);
	rc = coli_sha256_file(path, p->config_sha256, err);
	if (rc < 0)
		return rc;
	rc = st_open_dir(o->src_dir, &p->ck, err);
	if (rc < 0)
		return rc;
	if ((rc = convert_check_fp8(path, p->ck, err)) < 0)
		return rc;
	c.claimed = calloc((size_t)p->ck->n_tensors + 1, 1);
	if (!c.claimed)
		return coli_err_set(err, -ENOMEM, "out of memory");
	expert_layout(p, o);

	const coli_config *g = &p->cfg;
	const int H = g->hidden_size;
	convert_file *f;
	rc = -ENOMEM;
	if (!(f = file_add(p, CONVERT_FILE_TENSORS, -1, "dense/embed.bin")))
		goto oom;
	if ((rc = need(&c, f, "model.embed_tokens.weight", g->vocab_size, H, CONVERT_CLS_EMBED,
		       err)) < 0)
		goto out;
	for (int L = 0; L < g->num_hidden_layers; L++) {
		if (!file_add(p, CONVERT_FILE_TENSORS, L, "dense/layer-%03d.bin", L))
			goto oom;
		convert_file *shard = NULL;
		if (coli_config_layer_is_moe(g, L)) {
			if (!file_add(p, CONVERT_FILE_EXPERTS, L, "experts/shard-%03d.bin", L))
				goto oom;
			shard = &p->files[p->n_files - 1];
		}
		f = &p->files[p->n_files - (shard ? 2 : 1)];
		if ((rc = plan_layer(&c, f, shard, L, 0, err)) < 0)
			goto out;
	}
	if (!(f = file_add(p, CONVERT_FILE_TENSORS, -1, "dense/head.bin")))
		goto oom;
	if ((rc = need(&c, f, "model.norm.weight", H, 0, CONVERT_CLS_NORMS, err)) < 0)
		goto out;
	const st_tensor *lm = st_find(p->ck, "lm_head.weight");
	if (!lm && !g->tie_word_embeddings) {
		rc = coli_err_set(err, -ENOENT, "checkpoint has no tensor lm_head.weight "
				  "(config.json: tie_word_embeddings is false)");
		goto out;
	}
	if (lm && (rc = add_tensor(&c, f, lm, g->vocab_size, H, CONVERT_CLS_LM_HEAD, err)) < 0)
		goto out;
	/* MTP layers: every model.layers.{L}.* with L >= num_hidden_layers. */
	int max_layer = -1;
	for (int i = 0; i < p->ck->n_tensors; i++) {
		int L;
		if (sscanf(p->ck->tensors[i].name, "model.layers.%d.", &L) == 1 && L > max_layer)
			max_layer = L;
	}
	for (int L = g->num_hidden_layers; L <= max_layer; L++) {
		char pre[64];
		snprintf(pre, sizeof pre, "model.layers.%d.", L);
		int present = 0;
		for (int i = 0; i < p->ck->n_tensors && !present; i++)
			present = !strncmp(p->ck->tensors[i].name, pre, strlen(pre));
		if (!present)
			continue;
		if (!(f = file_add(p, CONVERT_FILE_TENSORS, L, "mtp/layer-%03d.bin", L)))
			goto oom;
		if ((rc = plan_layer(&c, f, NULL, L, 1, err)) < 0)
			goto out;
		p->n_mtp_layers++;
	}
	if (p->n_mtp_layers < g->num_nextn_predict_layers)
		coli_warn("config.json declares %d MTP layer(s), the checkpoint holds %d",
			  g->num_nextn_predict_layers, p->n_mtp_layers);
	/* Whatever is left outside the layers is kept (f32) in head.bin. */
	f = NULL;
	for (int i = 0; i < p->n_files; i++)
		if (!strcmp(p->files[i].path, "dense/head.bin"))
			f = &p->files[i];
	for (int i = 0; i < p->ck->n_tensors; i++) {
		const st_tensor *t = &p->ck->tensors[i];
		if (c.claimed[i] || st_is_fp8_scale(p->ck, t))
			continue;
		if (!strncmp(t->name, "model.layers.", 13))
			continue;
		note_unknown(&c, t->name);
		if ((rc = add_tensor(&c, f, t, -1, 0, CONVERT_CLS_OTHER, err)) < 0)
			goto out;
	}
	if ((rc = plan_tokenizer(p, o->src_dir, err)) < 0)
		goto out;
	if (c.n_indexer_skipped)
		coli_info("%d DSA indexer tensors of shared layers left out (those layers reuse an earlier "
			  "layer's key selection)", c.n_indexer_skipped);
	if (c.n_unknown)
		coli_warn("%d tensor(s) not part of the known architecture kept f32 (e.g. %s)",
			  c.n_unknown, c.first_unknown);
	if (p->n_fallback)
		coli_info("%d matrices kept f32: their cols are not a multiple of %d "
			  "(listed in manifest.json quant.f32_fallback)", p->n_fallback, COLI_QK);
	if (p->expert_fallback)
		coli_warn("routed experts kept f32: hidden_size or moe_intermediate_size is not "
			  "a multiple of %d", COLI_QK);
	p->embed_qtype = policy_qtype(o, CONVERT_CLS_EMBED, 0, H, &(int){ 0 });
	p->lm_head_qtype = policy_qtype(o, CONVERT_CLS_LM_HEAD, 0, H, &(int){ 0 });
	p->indexer_qtype = convert_indexer_qtype(o);
	for (int i = 0; i < p->n_files; i++)
		if (p->files[i].kind == CONVERT_FILE_EXPERTS)
			p->n_experts += g->n_routed_experts;
	rc = 0;
	goto out;
oom:
	rc = coli_err_set(err, -ENOMEM, "out of memory");
out:
	free(c.claimed);
	return rc;
}

void convert_plan_free(convert_plan *p)
{
	if (!p)
		return;
	for (int i = 0; i < p->n_files; i++) {
		free(p->files[i].t);
		free(p->files[i].experts);
		free(p->files[i].copy_src);
		free(p->files[i].rec_crc);
	}
	free(p->files);
	st_close(p->ck);
	memset(p, 0, sizeof *p);
}
