/* synth.c - presets, validation and config.json of `coli synth`; the weight
 * generator is in synth_weights.c, the tokenizer in synth_tokenizer.c. */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "ingest_safetensors.h"
#include "synth.h"
#include "synth_impl.h"

static void synth_common(coli_config *c)
{
	strcpy(c->model_type, "deepseek_v3");
	c->moe_layer_freq = 1;
	c->n_shared_experts = 1;
	c->norm_topk_prob = true;
	c->rope_interleave = true;
	strcpy(c->scoring_func, "sigmoid");
	strcpy(c->topk_method, "noaux_tc");
	c->rope_theta = 10000.0;
	c->bos_token_id = SYNTH_BOS_ID;
	c->eos_token_ids[0] = SYNTH_EOS_ID;
	c->n_eos_token_ids = 1;
}

void synth_set_yarn(synth_opts *o, bool on)
{
	coli_config *c = &o->cfg;
	if (!on) {
		c->rope_kind = COLI_ROPE_DEFAULT;
		c->rope_factor = 1.0;
		c->rope_original_max_pos = 0;
		c->rope_beta_fast = c->rope_beta_slow = 0;
		c->rope_mscale = c->rope_mscale_all_dim = 0;
		return;
	}
	c->rope_kind = COLI_ROPE_YARN;
	c->rope_factor = 40.0;
	c->rope_original_max_pos = 4096;
	c->rope_beta_fast = 32.0;
	c->rope_beta_slow = 1.0;
	c->rope_mscale = 1.0;
	c->rope_mscale_all_dim = 1.0;
}

void synth_set_index_topk(synth_opts *o, int k)
{
	coli_config *c = &o->cfg;
	c->index_topk = k;
	o->indexer = k > 0;
	if (k <= 0) {
		if (!strcmp(c->model_type, "deepseek_v32"))
			strcpy(c->model_type, "deepseek_v3");
		c->index_head_dim = c->index_n_heads = 0;
		return;
	}
	if (strcmp(c->model_type, "glm_moe_dsa"))
		strcpy(c->model_type, "deepseek_v32");
	if (c->index_n_heads <= 0) {
		c->index_n_heads = 4;
		c->index_head_dim = 2 * c->qk_rope_head_dim;
	}
	if (!c->index_topk_freq) {
		c->index_topk_freq = 1;
		c->index_skip_topk_offset = 2;
	}
}

void synth_resolve_index(synth_opts *o)
{
	coli_config *c = &o->cfg;
	const int L = c->num_hidden_layers;
	if (c->index_topk <= 0 || L > COLI_MAX_LAYERS) {
		c->index_types[0] = '\0';
		return;
	}
	if (o->index_schedule == SYNTH_INDEX_DERIVED) {
		for (int i = 0; i < L; i++) {
			int k = i - c->index_skip_topk_offset + 1;
			c->index_types[i] = (k > 0 ? k : 0) % (c->index_topk_freq > 0 ? c->index_topk_freq : 1) ? 'S' : 'F';
		}
	}
	c->index_types[L] = '\0';
}

/* The presets: the real models' shapes (slices: fewer layers, a small
 * vocabulary) and tiny ones for tests. model_type NULL: deepseek_v3;
 * rope_theta 0: synth_common's; index_topk 0: no DSA indexer. */
static const struct synth_shape {
	const char *name, *model_type;
	int vocab, hidden, inter, moe_inter, layers, dense, heads, q_lora, kv_lora, nope, rope, v;
	int experts, per_tok, n_group, topk_group, mtp, index_head_dim, index_heads, index_topk;
	float eps;
	double rope_theta;
	int max_pos, dtype;
	bool yarn;
} synth_shapes[] = {
	{ "tiny", NULL, SYNTH_TOKENIZER_SIZE, 128, 256, 64, 4, 1, 4, 64, 64, 32, 32, 32,
	  16, 4, 4, 2, 1, 0, 0, 0, 1e-6f, 0, 163840, ST_F32, true },
	{ "glm5-slice", "glm_moe_dsa", 4096, 6144, 12288, 2048, 4, 1, 64, 2048, 512, 192, 64, 256,
	  256, 8, 1, 1, 0, 128, 32, 2048, 1e-5f, 1000000.0, 202752, ST_BF16, false },
	/* GLM-5's config keys, eps and DSA indexer at tiny size, with unequal
	 * nope/rope/v head dims so a mixed-up dimension cannot pass unnoticed
	 * (tiny has them all equal, as in the brief). */
	{ "glm5-tiny", "glm_moe_dsa", SYNTH_TOKENIZER_SIZE, 256, 512, 64, 3, 1, 4, 128, 64, 48, 16, 64,
	  16, 4, 1, 1, 1, 32, 4, 2048, 1e-5f, 1000000.0, 202752, ST_F32, false },
	{ "dsv3-slice", NULL, 4096, 7168, 18432, 2048, 4, 1, 128, 1536, 512, 128, 64, 128,
	  256, 8, 8, 4, 0, 0, 0, 0, 1e-6f, 0, 163840, ST_BF16, true },
};

int synth_preset(const char *name, synth_opts *o, coli_err *err)
{
	memset(o, 0, sizeof(*o));
	coli_config *c = &o->cfg;
	synth_common(c);
	o->n_shards = 1;
	const struct synth_shape *p = NULL;
	for (size_t i = 0; i < sizeof(synth_shapes) / sizeof(synth_shapes[0]); i++)
		if (!strcmp(name, synth_shapes[i].name))
			p = &synth_shapes[i];
	if (!p)
		return coli_err_set(err, -EINVAL, "--preset: unknown preset '%s' (tiny, glm5-tiny, glm5-slice, dsv3-slice)", name);
	if (p->model_type)
		strcpy(c->model_type, p->model_type);
	c->vocab_size = p->vocab;
	c->hidden_size = p->hidden;
	c->intermediate_size = p->inter;
	c->moe_intermediate_size = p->moe_inter;
	c->num_hidden_layers = p->layers;
	c->first_k_dense_replace = p->dense;
	c->num_attention_heads = p->heads;
	c->q_lora_rank = p->q_lora;
	c->kv_lora_rank = p->kv_lora;
	c->qk_nope_head_dim = p->nope;
	c->qk_rope_head_dim = p->rope;
	c->v_head_dim = p->v;
	c->n_routed_experts = p->experts;
	c->num_experts_per_tok = p->per_tok;
	c->n_group = p->n_group;
	c->topk_group = p->topk_group;
	c->routed_scaling_factor = 2.5f;
	c->rms_norm_eps = p->eps;
	if (p->rope_theta)
		c->rope_theta = p->rope_theta;
	c->max_position_embeddings = p->max_pos;
	c->num_nextn_predict_layers = p->mtp;
	if (p->index_topk) {
		c->index_head_dim = p->index_head_dim;
		c->index_n_heads = p->index_heads;
		c->indexer_rope_interleave = true;
		synth_set_index_topk(o, p->index_topk);
	}
	o->dtype = p->dtype;
	synth_set_yarn(o, p->yarn);
	c->num_key_value_heads = c->num_attention_heads;
	c->attn_norm_eps = c->rms_norm_eps;
	snprintf(o->preset, sizeof(o->preset), "%s", name);
	synth_resolve_index(o);
	return 0;
}

int synth_check(const synth_opts *o, coli_err *err)
{
	const coli_config *c = &o->cfg;
	struct { const char *flag; int v; } m64[] = {
		{ "hidden_size", c->hidden_size },
		{ "--q-lora", c->q_lora_rank },
		{ "kv_lora_rank", c->kv_lora_rank },
		{ "intermediate_size", c->intermediate_size },
		{ "moe_intermediate_size", c->moe_intermediate_size },
		{ "heads*v_head_dim", c->num_attention_heads * c->v_head_dim },
	};
	for (size_t i = 0; i < sizeof(m64) / sizeof(m64[0]); i++)
		if (m64[i].v < 0 || m64[i].v % 64)
			return coli_err_set(err, -EINVAL, "%s: %d is not a multiple of 64", m64[i].flag, m64[i].v);
	if (c->num_hidden_layers < 1 || c->num_hidden_layers > 1000)
		return coli_err_set(err, -EINVAL, "--layers: %d out of range 1..1000", c->num_hidden_layers);
	if (c->first_k_dense_replace < 0 || c->first_k_dense_replace > c->num_hidden_layers)
		return coli_err_set(err, -EINVAL, "--dense-layers: %d not in 0..%d", c->first_k_dense_replace,
				    c->num_hidden_layers);
	if (c->n_routed_experts < 1 || c->n_routed_experts > 4096)
		return coli_err_set(err, -EINVAL, "--experts: %d out of range 1..4096", c->n_routed_experts);
	if (c->n_group < 1 || c->n_routed_experts % c->n_group)
		return coli_err_set(err, -EINVAL, "--groups: %d does not divide %d experts", c->n_group,
				    c->n_routed_experts);
	if (c->n_group > 1 && c->n_routed_experts / c->n_group < 2)
		return coli_err_set(err, -EINVAL, "--groups: group scores need at least 2 experts per group");
	if (c->topk_group < 1 || c->topk_group > c->n_group)
		return coli_err_set(err, -EINVAL, "--topk-groups: %d not in 1..%d", c->topk_group, c->n_group);
	int reachable = c->topk_group * (c->n_routed_experts / c->n_group);
	if (c->num_experts_per_tok < 1 || c->num_experts_per_tok > reachable)
		return coli_err_set(err, -EINVAL, "--topk: %d not in 1..%d (experts in the kept groups)",
				    c->num_experts_per_tok, reachable);
	if (!(c->routed_scaling_factor > 0.0f && c->routed_scaling_factor < 1000.0f))
		return coli_err_set(err, -EINVAL, "--scaling: must be positive");
	if (c->vocab_size < SYNTH_TOKENIZER_SIZE || c->vocab_size > 1 << 20)
		return coli_err_set(err, -EINVAL, "--vocab: %d not in %d..%d (the tokenizer has %d ids)",
				    c->vocab_size, SYNTH_TOKENIZER_SIZE, 1 << 20, SYNTH_TOKENIZER_SIZE);
	if (c->num_nextn_predict_layers < 0 || c->num_nextn_predict_layers > 4)
		return coli_err_set(err, -EINVAL, "--mtp: %d not in 0..4", c->num_nextn_predict_layers);
	if (o->dtype != ST_F32 && o->dtype != ST_BF16 && o->dtype != ST_F16 && o->dtype != ST_F8_E4M3)
		return coli_err_set(err, -EINVAL, "--dtype: unsupported element type");
	if (o->n_shards < 1 || o->n_shards > 999)
		return coli_err_set(err, -EINVAL, "--shards: %d not in 1..999", o->n_shards);
	/* The tensor plan is held in memory (~200 bytes a tensor). */
	int64_t per_layer = 3LL * c->n_routed_experts * (o->dtype == ST_F8_E4M3 ? 2 : 1) + 64;
	int64_t n_t = per_layer * (c->num_hidden_layers + c->num_nextn_predict_layers);
	if (n_t > (1 << 22))
		return coli_err_set(err, -EINVAL, "--layers x --experts: about %lld tensors, more than %d",
				    (long long)n_t, 1 << 22);
	if (c->qk_rope_head_dim % 2 || c->qk_rope_head_dim < 2)
		return coli_err_set(err, -EINVAL, "qk_rope_head_dim: %d must be even", c->qk_rope_head_dim);
	if (c->index_topk > 0) {
		if (!c->q_lora_rank)
			return coli_err_set(err, -EINVAL, "--index-topk: the DSA indexer needs --q-lora > 0");
		if ((int)strlen(c->index_types) != c->num_hidden_layers || c->index_types[0] != 'F')
			return coli_err_set(err, -EINVAL, "--indexer-types: %d entries of F/S starting with F expected",
					    c->num_hidden_layers);
	}
	return 0;
}

/* A float as the double of its shortest decimal spelling, so config.json
 * says 1e-05 rather than the float's binary expansion 9.99999975e-06. */
static json_t *synth_real(float f)
{
	char b[32];
	for (int prec = 1; prec <= 9; prec++) {
		snprintf(b, sizeof(b), "%.*g", prec, (double)f);
		if (strtof(b, NULL) == f)
			break;
	}
	return json_real(strtod(b, NULL));
}

/* The indexer's keys; the schedule in the form the options chose (GLM-5.2
 * ships an indexer_types list; DeepSeek-V3.2 none, i.e. all full). */
static void synth_index_json(const synth_opts *o, json_t *j)
{
	const coli_config *c = &o->cfg;
	json_object_set_new(j, "index_topk", json_integer(c->index_topk));
	json_object_set_new(j, "index_head_dim", json_integer(c->index_head_dim));
	json_object_set_new(j, "index_n_heads", json_integer(c->index_n_heads));
	if (c->indexer_rope_interleave)
		json_object_set_new(j, "indexer_rope_interleave", json_true());
	if (o->index_schedule == SYNTH_INDEX_TYPES) {
		json_t *a = json_array();
		for (int i = 0; c->index_types[i]; i++)
			json_array_append_new(a, json_string(c->index_types[i] == 'F' ? "full" : "shared"));
		json_object_set_new(j, "indexer_types", a);
	} else if (o->index_schedule == SYNTH_INDEX_PATTERN) {
		json_object_set_new(j, "index_topk_pattern", json_string(c->index_types));
	} else if (c->index_topk_freq != 1 || c->index_skip_topk_offset != 2) {
		json_object_set_new(j, "index_topk_freq", json_integer(c->index_topk_freq));
		json_object_set_new(j, "index_skip_topk_offset", json_integer(c->index_skip_topk_offset));
	}
}

static json_t *synth_config_json(const synth_opts *o)
{
	const coli_config *c = &o->cfg;
	bool glm = !strcmp(c->model_type, "glm_moe_dsa");
	bool v32 = !strcmp(c->model_type, "deepseek_v32");
	json_t *j = json_object();
	json_t *arch = json_array();
	json_array_append_new(arch, json_string(glm ? "GlmMoeDsaForCausalLM" : v32 ? "DeepseekV32ForCausalLM"
									   : "DeepseekV3ForCausalLM"));
	json_object_set_new(j, "architectures", arch);
	json_object_set_new(j, "model_type", json_string(c->model_type));
	json_object_set_new(j, "vocab_size", json_integer(c->vocab_size));
	json_object_set_new(j, "hidden_size", json_integer(c->hidden_size));
	json_object_set_new(j, "intermediate_size", json_integer(c->intermediate_size));
	json_object_set_new(j, "moe_intermediate_size", json_integer(c->moe_intermediate_size));
	json_object_set_new(j, "num_hidden_layers", json_integer(c->num_hidden_layers));
	json_object_set_new(j, "num_nextn_predict_layers", json_integer(c->num_nextn_predict_layers));
	json_object_set_new(j, "num_attention_heads", json_integer(c->num_attention_heads));
	json_object_set_new(j, "num_key_value_heads", json_integer(c->num_key_value_heads));
	json_object_set_new(j, "n_shared_experts", json_integer(c->n_shared_experts));
	json_object_set_new(j, "n_routed_experts", json_integer(c->n_routed_experts));
	json_object_set_new(j, "routed_scaling_factor", synth_real(c->routed_scaling_factor));
	json_object_set_new(j, "kv_lora_rank", json_integer(c->kv_lora_rank));
	json_object_set_new(j, "q_lora_rank", c->q_lora_rank ? json_integer(c->q_lora_rank) : json_null());
	json_object_set_new(j, "qk_rope_head_dim", json_integer(c->qk_rope_head_dim));
	json_object_set_new(j, "v_head_dim", json_integer(c->v_head_dim));
	json_object_set_new(j, "qk_nope_head_dim", json_integer(c->qk_nope_head_dim));
	json_object_set_new(j, "topk_method", json_string(c->topk_method));
	json_object_set_new(j, "n_group", json_integer(c->n_group));
	json_object_set_new(j, "topk_group", json_integer(c->topk_group));
	json_object_set_new(j, "num_experts_per_tok", json_integer(c->num_experts_per_tok));
	json_object_set_new(j, "moe_layer_freq", json_integer(c->moe_layer_freq));
	json_object_set_new(j, "first_k_dense_replace", json_integer(c->first_k_dense_replace));
	json_object_set_new(j, "norm_topk_prob", json_boolean(c->norm_topk_prob));
	json_object_set_new(j, "scoring_func", json_string(c->scoring_func));
	json_object_set_new(j, "hidden_act", json_string("silu"));
	json_object_set_new(j, "max_position_embeddings", json_integer(c->max_position_embeddings));
	json_object_set_new(j, "initializer_range", json_real(0.02));
	json_object_set_new(j, "rms_norm_eps", synth_real(c->rms_norm_eps));
	json_object_set_new(j, "rope_theta", json_real(c->rope_theta));
	if (c->rope_kind == COLI_ROPE_YARN) {
		json_t *y = json_object();
		json_object_set_new(y, "type", json_string("yarn"));
		json_object_set_new(y, "rope_type", json_string("yarn"));
		json_object_set_new(y, "factor", json_real(c->rope_factor));
		json_object_set_new(y, "original_max_position_embeddings",
				    json_integer(c->rope_original_max_pos));
		json_object_set_new(y, "beta_fast", json_real(c->rope_beta_fast));
		json_object_set_new(y, "beta_slow", json_real(c->rope_beta_slow));
		json_object_set_new(y, "mscale", json_real(c->rope_mscale));
		json_object_set_new(y, "mscale_all_dim", json_real(c->rope_mscale_all_dim));
		json_object_set_new(j, "rope_scaling", y);
	} else {
		json_object_set_new(j, "rope_scaling", json_null());
	}
	if (glm) {
		/* GLM-5 ships both spellings of the rope settings and states the
		 * interleaved (DeepSeek) rope layout explicitly. */
		json_t *rp = json_object();
		json_object_set_new(rp, "rope_theta", json_real(c->rope_theta));
		json_object_set_new(rp, "rope_type", json_string("default"));
		json_object_set_new(j, "rope_parameters", rp);
		json_object_set_new(j, "rope_interleave", json_boolean(c->rope_interleave));
	}
	if (glm || v32)
		synth_index_json(o, j);
	if (!glm && !c->rope_interleave)
		json_object_set_new(j, "rope_interleave", json_false());
	json_object_set_new(j, "attention_bias", json_false());
	json_object_set_new(j, "attention_dropout", json_real(0.0));
	json_object_set_new(j, "tie_word_embeddings", json_boolean(c->tie_word_embeddings));
	json_object_set_new(j, "bos_token_id", json_integer(c->bos_token_id));
	json_object_set_new(j, "eos_token_id", json_integer(c->eos_token_ids[0]));
	json_object_set_new(j, "use_cache", json_true());
	json_object_set_new(j, "torch_dtype", json_string(o->dtype == ST_F32 ? "float32" :
							 o->dtype == ST_F16 ? "float16" : "bfloat16"));
	if (o->dtype == ST_F8_E4M3) {
		json_t *q = json_object(), *bs = json_array();
		json_object_set_new(q, "activation_scheme", json_string("dynamic"));
		json_object_set_new(q, "fmt", json_string("e4m3"));
		json_object_set_new(q, "quant_method", json_string("fp8"));
		json_array_append_new(bs, json_integer(SYNTH_FP8_BLOCK));
		json_array_append_new(bs, json_integer(SYNTH_FP8_BLOCK));
		json_object_set_new(q, "weight_block_size", bs);
		json_object_set_new(j, "quantization_config", q);
	}
	json_object_set_new(j, "synth_preset", json_string(o->preset));
	json_object_set_new(j, "synth_seed", json_integer((json_int_t)o->seed));
	return j;
}

/* Is `name` a weight file (or a temporary one) of an earlier run? */
static bool synth_is_weight_file(const char *name)
{
	size_t n = strlen(name);
	if (strncmp(name, "model", 5))
		return false;
	if (n > 4 && !strcmp(name + n - 4, ".tmp"))
		n -= 4;
	static const char index[] = "model.safetensors.index.json";
	return (n > 12 && !strncmp(name + n - 12, ".safetensors", 12)) ||
	       (n == sizeof(index) - 1 && !strncmp(name, index, n));
}

/* True when dir/config.json was written by coli synth. */
static bool synth_dir_is_ours(const char *dir)
{
	char p[4096];
	snprintf(p, sizeof(p), "%s/config.json", dir);
	json_t *j = json_load_file(p, 0, NULL);
	bool ours = j && json_is_string(json_object_get(j, "synth_preset"));
	json_decref(j);
	return ours;
}

/* Remove weights of an earlier run so a loader never mixes two layouts
 * (e.g. a stale index next to a fresh single file). A non-empty directory
 * that coli synth did not write is refused: it may hold a real checkpoint. */
static int synth_clean_dir(const char *dir, coli_err *err)
{
	DIR *d = opendir(dir);
	if (!d)
		return coli_err_set(err, -errno, "%s: %s", dir, strerror(errno));
	struct dirent *e;
	bool empty = true;
	while ((e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			empty = false;
	if (!empty && !synth_dir_is_ours(dir)) {
		closedir(d);
		return coli_err_set(err, -EEXIST, "%s: not empty and not written by coli synth; refusing to overwrite",
				    dir);
	}
	rewinddir(d);
	int rc = 0;
	while ((e = readdir(d))) {
		if (!synth_is_weight_file(e->d_name))
			continue;
		char p[4096];
		snprintf(p, sizeof(p), "%s/%s", dir, e->d_name);
		if (unlink(p) != 0) {
			rc = coli_err_set(err, -errno, "%s: %s", p, strerror(errno));
			break;
		}
	}
	closedir(d);
	return rc;
}

/* mkdir -p: the output directory and any missing parents. */
static int synth_mkdirs(const char *dir, coli_err *err)
{
	char p[4096];
	if (snprintf(p, sizeof(p), "%s", dir) >= (int)sizeof(p))
		return coli_err_set(err, -ENAMETOOLONG, "%s: path too long", dir);
	for (char *s = p + 1;; s++) {
		if (*s != '/' && *s)
			continue;
		char c = *s;
		*s = 0;
		if (mkdir(p, 0755) != 0 && errno != EEXIST)
			return coli_err_set(err, -errno, "%s: %s", p, strerror(errno));
		if (!c)
			break;
		*s = c;
	}
	struct stat st;
	if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
		return coli_err_set(err, -ENOTDIR, "%s: not a directory", dir);
	return 0;
}

int synth_write(const char *out_dir, const synth_opts *o, coli_err *err)
{
	int rc = synth_check(o, err);
	if (rc)
		return rc;
	if ((rc = synth_mkdirs(out_dir, err)))
		return rc;
	if ((rc = synth_clean_dir(out_dir, err)))
		return rc;
	/* Refuse up front rather than fill the disk halfway (a default
	 * glm5-slice is ~60 GB). */
	int n_tensors;
	uint64_t need;
	struct statvfs vf;
	if ((rc = synth_plan(o, &n_tensors, &need, err)))
		return rc;
	if (!o->dry_run && statvfs(out_dir, &vf) == 0 && (uint64_t)vf.f_bavail * vf.f_frsize < need + (need >> 6))
		return coli_err_set(err, -ENOSPC, "%s: %.1f GB needed, %.1f GB free (see --experts, --layers, --dtype)",
				    out_dir, (double)need / 1e9, (double)vf.f_bavail * (double)vf.f_frsize / 1e9);
	char path[4096];
	snprintf(path, sizeof(path), "%s/config.json", out_dir);
	json_t *cj = synth_config_json(o);
	int bad = json_dump_file(cj, path, JSON_INDENT(2) | JSON_REAL_PRECISION(10));
	json_decref(cj);
	if (bad)
		return coli_err_set(err, -EIO, "%s: cannot write", path);
	if ((rc = synth_tokenizer_write(out_dir, err)))
		return rc;
	if (o->dry_run)
		return 0;
	return synth_weights_write(out_dir, o, err);
}
