/* model_hf_config.c - config.json <-> coli_config (see model_hf_config.h).
 *
 * Key handling, decided once here:
 * - required: vocab_size, hidden_size, intermediate_size,
 *   moe_intermediate_size, num_hidden_layers, num_attention_heads,
 *   kv_lora_rank, qk_nope_head_dim, qk_rope_head_dim, v_head_dim,
 *   n_routed_experts, num_experts_per_tok, first_k_dense_replace,
 *   routed_scaling_factor (a silent default would change outputs);
 * - defaults follow transformers' DeepseekV3Config: num_key_value_heads =
 *   num_attention_heads, n_shared_experts 1, moe_layer_freq 1,
 *   n_group/topk_group 1 (also for null), q_lora_rank null/absent -> 0,
 *   norm_topk_prob true, scoring_func sigmoid, topk_method noaux_tc,
 *   rms_norm_eps 1e-6, rope_theta 10000, max_position_embeddings 4096,
 *   tie_word_embeddings false, num_nextn_predict_layers 0;
 * - rope: either legacy rope_theta + rope_scaling (null, or {"type" or
 *   "rope_type": "yarn" | "default", ...}) or transformers-5 style
 *   rope_parameters {"rope_theta", "rope_type", ...} as GLM-5 ships; the
 *   writer emits the form the model type ships with (rope_parameters for
 *   glm_moe_dsa);
 * - the DSA indexer (glm_moe_dsa, deepseek_v32): index_topk must be
 *   positive; indexer_rope_interleave defaults to false (NeoX halves, as
 *   DeepSeek-V3.2); the per-layer full/shared schedule comes from
 *   indexer_types, else index_topk_pattern, else index_topk_freq (1) and
 *   index_skip_topk_offset (2); other model types ignore index_* keys;
 * - unknown keys are ignored; a present key of the wrong JSON type is an
 *   error naming it (integers must be JSON integers; floats accept both).
 *
 * attn_norm_eps (q_a_layernorm / kv_a_layernorm) = rms_norm_eps: vLLM and
 * Megatron use the config value, transformers hard-codes 1e-6. They agree
 * for DeepSeek-V3 / Kimi-K2 (1e-6) and differ by ~1e-4 in logits for
 * GLM-5's 1e-5; we follow the serving engines the checkpoints are tuned on. */
#include "config.h"

#include "model_hf_config.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coli_log.h"

enum { HF_OPT = 0, HF_REQ = 1, HF_NULL_DEFAULT = 2 };

static int bad_type(coli_err *err, const char *key, const char *want)
{
	return coli_err_set(err, -EINVAL, "config: key '%s' must be %s", key, want);
}

/* Fetch `key`; returns 1 if a usable value is present, 0 to use the default,
 * <0 on error (missing required key). */
static int lookup(const json_t *obj, const char *key, int flags, const json_t **v, coli_err *err)
{
	*v = json_object_get(obj, key);
	if (!*v || (json_is_null(*v) && (flags & HF_NULL_DEFAULT))) {
		if (flags & HF_REQ)
			return coli_err_set(err, -EINVAL, "config: missing required key '%s'", key);
		return 0;
	}
	return 1;
}

static int get_int(const json_t *obj, const char *key, int flags, int def, int *out, coli_err *err)
{
	const json_t *v;
	int rc = lookup(obj, key, flags, &v, err);
	if (rc <= 0) {
		*out = def;
		return rc;
	}
	if (!json_is_integer(v))
		return bad_type(err, key, "an integer");
	json_int_t x = json_integer_value(v);
	if (x < INT_MIN || x > INT_MAX)
		return coli_err_set(err, -ERANGE, "config: key '%s' is out of range", key);
	*out = (int)x;
	return 0;
}

static int get_num(const json_t *obj, const char *key, int flags, double def, double *out, coli_err *err)
{
	const json_t *v;
	int rc = lookup(obj, key, flags, &v, err);
	if (rc <= 0) {
		*out = def;
		return rc;
	}
	if (!json_is_number(v))
		return bad_type(err, key, "a number");
	*out = json_number_value(v);
	return 0;
}

static int get_float(const json_t *obj, const char *key, int flags, double def, float *out, coli_err *err)
{
	double d;
	int rc = get_num(obj, key, flags, def, &d, err);
	*out = (float)d;
	return rc;
}

static int get_bool(const json_t *obj, const char *key, bool def, bool *out, coli_err *err)
{
	const json_t *v = json_object_get(obj, key);
	if (!v || json_is_null(v)) {
		*out = def;
		return 0;
	}
	if (!json_is_boolean(v))
		return bad_type(err, key, "true or false");
	*out = json_is_true(v);
	return 0;
}

static int get_str(const json_t *obj, const char *key, const char *def, char *out, size_t size,
		   coli_err *err)
{
	const json_t *v = json_object_get(obj, key);
	const char *s = def;
	if (v && !json_is_null(v)) {
		if (!json_is_string(v))
			return bad_type(err, key, "a string");
		s = json_string_value(v);
	}
	if (!s)
		return coli_err_set(err, -EINVAL, "config: missing required key '%s'", key);
	if (strlen(s) >= size)
		return coli_err_set(err, -EINVAL, "config: unsupported %s '%.40s'", key, s);
	memcpy(out, s, strlen(s) + 1);
	return 0;
}

/* rope_scaling / rope_parameters object `rs` named `key`. */
static int parse_rope(const json_t *rs, const char *key, coli_config *c, coli_err *err)
{
	if (!rs || json_is_null(rs))
		return 0;
	if (!json_is_object(rs))
		return bad_type(err, key, "an object or null");
	const json_t *t = json_object_get(rs, "rope_type");
	if (!t)
		t = json_object_get(rs, "type");
	if (t && !json_is_string(t))
		return coli_err_set(err, -EINVAL, "config: key '%s.rope_type' must be a string", key);
	/* rope_parameters may omit rope_type (plain rope); rope_scaling must say */
	const char *type = t ? json_string_value(t) : strcmp(key, "rope_parameters") ? NULL : "default";
	if (!type)
		return coli_err_set(err, -EINVAL, "config: key '%s' has no type or rope_type", key);
	if (!strcmp(type, "default"))
		return 0;
	if (strcmp(type, "yarn"))
		return coli_err_set(err, -ENOTSUP, "config: %s type '%.40s' is not supported (yarn or none)",
				    key, type);
	c->rope_kind = COLI_ROPE_YARN;
	int rc;
	if ((rc = get_num(rs, "factor", HF_REQ, 0, &c->rope_factor, err)) ||
	    (rc = get_int(rs, "original_max_position_embeddings", HF_REQ, 0, &c->rope_original_max_pos, err)) ||
	    (rc = get_num(rs, "beta_fast", HF_NULL_DEFAULT, 32, &c->rope_beta_fast, err)) ||
	    (rc = get_num(rs, "beta_slow", HF_NULL_DEFAULT, 1, &c->rope_beta_slow, err)) ||
	    (rc = get_num(rs, "mscale", HF_NULL_DEFAULT, 1, &c->rope_mscale, err)) ||
	    (rc = get_num(rs, "mscale_all_dim", HF_NULL_DEFAULT, 0, &c->rope_mscale_all_dim, err)))
		return coli_err_wrap(err, "%s", key);
	return 0;
}

static int parse_eos(const json_t *root, coli_config *c, coli_err *err)
{
	const json_t *v = json_object_get(root, "eos_token_id");
	c->n_eos_token_ids = 0;
	if (!v || json_is_null(v))
		return 0;
	if (json_is_integer(v))
		v = json_pack("[O]", v);  /* same path as a list; freed below */
	else if (json_is_array(v))
		json_incref((json_t *)v);
	else
		return bad_type(err, "eos_token_id", "an integer or a list of integers");
	int rc = 0;
	size_t i;
	const json_t *x;
	if (!v)
		return coli_err_set(err, -ENOMEM, "config: out of memory");
	if (json_array_size(v) > sizeof c->eos_token_ids / sizeof c->eos_token_ids[0]) {
		rc = coli_err_set(err, -E2BIG, "config: key 'eos_token_id' lists more than %zu ids",
				  sizeof c->eos_token_ids / sizeof c->eos_token_ids[0]);
		goto out;
	}
	json_array_foreach(v, i, x) {
		if (!json_is_integer(x) || json_integer_value(x) < 0 || json_integer_value(x) > INT_MAX) {
			rc = bad_type(err, "eos_token_id", "an integer or a list of integers");
			goto out;
		}
		c->eos_token_ids[c->n_eos_token_ids++] = (int)json_integer_value(x);
	}
out:
	json_decref((json_t *)v);
	return rc;
}

static const char *const model_types[] = { "deepseek_v3", "kimi_k2", "glm_moe_dsa", "deepseek_v32" };

static bool model_type_is_dsa(const char *t)
{
	return !strcmp(t, "glm_moe_dsa") || !strcmp(t, "deepseek_v32");
}

/* The per-layer indexer schedule: indexer_types, else index_topk_pattern
 * (a string of F/S or a list of them), else derived from
 * index_topk_freq / index_skip_topk_offset. */
static int parse_index_types(const json_t *root, coli_config *c, coli_err *err)
{
	const int L = c->num_hidden_layers;
	const json_t *types = json_object_get(root, "indexer_types");
	const json_t *pat = json_object_get(root, "index_topk_pattern");
	int rc;
	if ((rc = get_int(root, "index_topk_freq", HF_NULL_DEFAULT, 1, &c->index_topk_freq, err)) ||
	    (rc = get_int(root, "index_skip_topk_offset", HF_NULL_DEFAULT, 2, &c->index_skip_topk_offset, err)))
		return rc;
	if (c->index_topk_freq < 1)
		return coli_err_set(err, -EINVAL, "config: index_topk_freq = %d must be at least 1", c->index_topk_freq);
	if (L < 1 || L > COLI_MAX_LAYERS)
		return coli_err_set(err, -EINVAL, "config: num_hidden_layers = %d is outside [1, %d]", L, COLI_MAX_LAYERS);
	if (types && !json_is_null(types)) {
		if (!json_is_array(types) || (int)json_array_size(types) < L)
			return coli_err_set(err, -EINVAL, "config: indexer_types must list \"full\" or \"shared\" for each of "
					    "the %d layers", L);
		for (int i = 0; i < L; i++) {
			const json_t *v = json_array_get(types, (size_t)i);
			const char *t = json_is_string(v) ? json_string_value(v) : "";
			if (strcmp(t, "full") && strcmp(t, "shared"))
				return coli_err_set(err, -EINVAL, "config: indexer_types[%d] = '%.20s' is not \"full\" or "
						    "\"shared\"", i, json_is_string(v) ? t : "(not a string)");
			c->index_types[i] = t[0] == 'f' ? 'F' : 'S';
		}
	} else if (pat && !json_is_null(pat)) {
		int n = json_is_string(pat) ? (int)json_string_length(pat) : json_is_array(pat) ? (int)json_array_size(pat) : -1;
		if (n < L)
			return coli_err_set(err, -EINVAL, "config: index_topk_pattern must give F or S for each of the %d layers", L);
		for (int i = 0; i < L; i++) {
			const char *t = json_is_string(pat) ? json_string_value(pat) + i
				      : json_is_string(json_array_get(pat, (size_t)i)) ? json_string_value(json_array_get(pat, (size_t)i)) : "?";
			if (t[0] != 'F' && t[0] != 'S')
				return coli_err_set(err, -EINVAL, "config: index_topk_pattern entry %d is not F or S", i);
			c->index_types[i] = t[0];
		}
	} else {
		for (int i = 0; i < L; i++) {
			int k = i - c->index_skip_topk_offset + 1;
			c->index_types[i] = (k > 0 ? k : 0) % c->index_topk_freq == 0 ? 'F' : 'S';
		}
	}
	c->index_types[L] = '\0';
	if (c->index_types[0] != 'F')
		return coli_err_set(err, -EINVAL, "config: layer 0 is a shared indexer layer, but no earlier layer runs the indexer");
	return 0;
}

/* DSA models: the indexer's sizes, rope pairing and schedule; other
 * model types carry no indexer. */
static int parse_indexer(const json_t *root, coli_config *c, coli_err *err)
{
	int rc;
	if (!model_type_is_dsa(c->model_type)) {
		c->index_topk = c->index_head_dim = c->index_n_heads = 0;
		return 0;
	}
	if ((rc = get_int(root, "index_topk", HF_NULL_DEFAULT, 0, &c->index_topk, err)) ||
	    (rc = get_int(root, "index_head_dim", HF_NULL_DEFAULT, 0, &c->index_head_dim, err)) ||
	    (rc = get_int(root, "index_n_heads", HF_NULL_DEFAULT, 0, &c->index_n_heads, err)) ||
	    (rc = get_bool(root, "indexer_rope_interleave", false, &c->indexer_rope_interleave, err)))
		return rc;
	if (c->index_topk <= 0)
		return coli_err_set(err, -EINVAL, "config: index_topk = %d must be positive for %s (keys each query attends to)",
				    c->index_topk, c->model_type);
	return parse_index_types(root, c, err);
}

int hf_config_from_json(const json_t *root, coli_config *c, coli_err *err)
{
	int rc;
	memset(c, 0, sizeof *c);
	if (!json_is_object(root))
		return coli_err_set(err, -EINVAL, "config: not a JSON object");
	if ((rc = get_str(root, "model_type", NULL, c->model_type, sizeof c->model_type, err)))
		return rc;
	size_t k;
	for (k = 0; k < sizeof model_types / sizeof *model_types; k++)
		if (!strcmp(c->model_type, model_types[k]))
			break;
	if (k == sizeof model_types / sizeof *model_types)
		return coli_err_set(err, -ENOTSUP,
				    "config: model_type '%s' is not supported (deepseek_v3, kimi_k2, glm_moe_dsa, deepseek_v32)",
				    c->model_type);
	if ((rc = get_int(root, "vocab_size", HF_REQ, 0, &c->vocab_size, err)) ||
	    (rc = get_int(root, "hidden_size", HF_REQ, 0, &c->hidden_size, err)) ||
	    (rc = get_int(root, "intermediate_size", HF_REQ, 0, &c->intermediate_size, err)) ||
	    (rc = get_int(root, "moe_intermediate_size", HF_REQ, 0, &c->moe_intermediate_size, err)) ||
	    (rc = get_int(root, "num_hidden_layers", HF_REQ, 0, &c->num_hidden_layers, err)) ||
	    (rc = get_int(root, "first_k_dense_replace", HF_REQ, 0, &c->first_k_dense_replace, err)) ||
	    (rc = get_int(root, "moe_layer_freq", HF_OPT, 1, &c->moe_layer_freq, err)) ||
	    (rc = get_int(root, "num_attention_heads", HF_REQ, 0, &c->num_attention_heads, err)) ||
	    (rc = get_int(root, "num_key_value_heads", HF_NULL_DEFAULT, c->num_attention_heads,
			  &c->num_key_value_heads, err)) ||
	    (rc = get_int(root, "q_lora_rank", HF_NULL_DEFAULT, 0, &c->q_lora_rank, err)) ||
	    (rc = get_int(root, "kv_lora_rank", HF_REQ, 0, &c->kv_lora_rank, err)) ||
	    (rc = get_int(root, "qk_nope_head_dim", HF_REQ, 0, &c->qk_nope_head_dim, err)) ||
	    (rc = get_int(root, "qk_rope_head_dim", HF_REQ, 0, &c->qk_rope_head_dim, err)) ||
	    (rc = get_int(root, "v_head_dim", HF_REQ, 0, &c->v_head_dim, err)) ||
	    (rc = get_int(root, "n_routed_experts", HF_REQ, 0, &c->n_routed_experts, err)) ||
	    (rc = get_int(root, "n_shared_experts", HF_OPT, 1, &c->n_shared_experts, err)) ||
	    (rc = get_int(root, "num_experts_per_tok", HF_REQ, 0, &c->num_experts_per_tok, err)) ||
	    (rc = get_int(root, "n_group", HF_NULL_DEFAULT, 1, &c->n_group, err)) ||
	    (rc = get_int(root, "topk_group", HF_NULL_DEFAULT, 1, &c->topk_group, err)) ||
	    (rc = get_float(root, "routed_scaling_factor", HF_REQ, 0, &c->routed_scaling_factor, err)) ||
	    (rc = get_bool(root, "norm_topk_prob", true, &c->norm_topk_prob, err)) ||
	    (rc = get_str(root, "scoring_func", "sigmoid", c->scoring_func, sizeof c->scoring_func, err)) ||
	    (rc = get_str(root, "topk_method", "noaux_tc", c->topk_method, sizeof c->topk_method, err)) ||
	    (rc = get_float(root, "rms_norm_eps", HF_OPT, 1e-6, &c->rms_norm_eps, err)) ||
	    (rc = get_num(root, "rope_theta", HF_OPT, 10000.0, &c->rope_theta, err)) ||
	    (rc = get_int(root, "max_position_embeddings", HF_OPT, 4096, &c->max_position_embeddings, err)) ||
	    (rc = get_int(root, "num_nextn_predict_layers", HF_NULL_DEFAULT, 0, &c->num_nextn_predict_layers,
			  err)) ||
	    (rc = get_bool(root, "tie_word_embeddings", false, &c->tie_word_embeddings, err)) ||
	    (rc = get_bool(root, "rope_interleave", true, &c->rope_interleave, err)) ||
	    (rc = get_int(root, "bos_token_id", HF_NULL_DEFAULT, -1, &c->bos_token_id, err)) ||
	    (rc = parse_eos(root, c, err)) ||
	    (rc = parse_indexer(root, c, err)))
		return rc;
	c->attn_norm_eps = c->rms_norm_eps;  /* see the top of this file */
	const json_t *rp = json_object_get(root, "rope_parameters");
	if (rp && !json_is_null(rp)) {
		if (json_is_object(rp) && (rc = get_num(rp, "rope_theta", HF_OPT, c->rope_theta, &c->rope_theta, err)))
			return coli_err_wrap(err, "rope_parameters");
		rc = parse_rope(rp, "rope_parameters", c, err);
	} else {
		rc = parse_rope(json_object_get(root, "rope_scaling"), "rope_scaling", c, err);
	}
	if (rc || (rc = hf_config_validate(c, err)))
		return rc;
	return 0;
}

int hf_config_load(const char *path, coli_config *cfg, coli_err *err)
{
	json_error_t jerr;
	json_t *root = json_load_file(path, JSON_REJECT_DUPLICATES, &jerr);
	if (!root)
		return coli_err_set(err, -EINVAL, "%s: %s (line %d)", path, jerr.text, jerr.line);
	int rc = hf_config_from_json(root, cfg, err);
	json_decref(root);
	if (rc)
		coli_err_wrap(err, "%s", path);
	return rc;
}

/* Bounds that keep every derived size of a supported model far from int
 * overflow in the modules that compute with these numbers. */
#define HF_MAX_DIM (1 << 20)
#define HF_MAX_VOCAB (1 << 24)
#define HF_MAX_LAYERS 4096
#define HF_MAX_EXPERTS 65536

static int check_range(const char *key, long long v, long long lo, long long hi, coli_err *err)
{
	if (v < lo || v > hi)
		return coli_err_set(err, -EINVAL, "config: %s = %lld is outside [%lld, %lld]", key, v, lo, hi);
	return 0;
}

static int check_pos(const char *key, double v, coli_err *err)
{
	if (!(v > 0) || !isfinite(v))
		return coli_err_set(err, -EINVAL, "config: %s = %g must be a positive finite number", key, v);
	return 0;
}

int hf_config_validate(const coli_config *c, coli_err *err)
{
	int rc;
	int experts = c->n_routed_experts;
	size_t k;
	for (k = 0; k < sizeof model_types / sizeof *model_types; k++)
		if (!strcmp(c->model_type, model_types[k]))
			break;
	if (k == sizeof model_types / sizeof *model_types)
		return coli_err_set(err, -ENOTSUP, "config: model_type '%.32s' is not supported", c->model_type);
	if (strcmp(c->scoring_func, "sigmoid"))
		return coli_err_set(err, -ENOTSUP, "config: scoring_func '%.16s' is not supported (sigmoid)",
				    c->scoring_func);
	if (strcmp(c->topk_method, "noaux_tc") && strcmp(c->topk_method, "greedy"))
		return coli_err_set(err, -ENOTSUP,
				    "config: topk_method '%.16s' is not supported (noaux_tc or greedy)",
				    c->topk_method);
	if ((rc = check_range("vocab_size", c->vocab_size, 1, HF_MAX_VOCAB, err)) ||
	    (rc = check_range("hidden_size", c->hidden_size, 1, HF_MAX_DIM, err)) ||
	    (rc = check_range("intermediate_size", c->intermediate_size, 1, HF_MAX_DIM, err)) ||
	    (rc = check_range("moe_intermediate_size", c->moe_intermediate_size, 1, HF_MAX_DIM, err)) ||
	    (rc = check_range("num_hidden_layers", c->num_hidden_layers, 1, HF_MAX_LAYERS, err)) ||
	    (rc = check_range("first_k_dense_replace", c->first_k_dense_replace, 0, c->num_hidden_layers, err)) ||
	    (rc = check_range("moe_layer_freq", c->moe_layer_freq, 1, HF_MAX_LAYERS, err)) ||
	    (rc = check_range("num_attention_heads", c->num_attention_heads, 1, HF_MAX_DIM, err)) ||
	    (rc = check_range("num_key_value_heads", c->num_key_value_heads, 1, HF_MAX_DIM, err)) ||
	    (rc = check_range("q_lora_rank", c->q_lora_rank, 0, HF_MAX_DIM, err)) ||
	    (rc = check_range("kv_lora_rank", c->kv_lora_rank, 1, HF_MAX_DIM, err)) ||
	    (rc = check_range("qk_nope_head_dim", c->qk_nope_head_dim, 1, HF_MAX_DIM, err)) ||
	    (rc = check_range("qk_rope_head_dim", c->qk_rope_head_dim, 2, HF_MAX_DIM, err)) ||
	    (rc = check_range("v_head_dim", c->v_head_dim, 1, HF_MAX_DIM, err)) ||
	    (rc = check_range("n_routed_experts", experts, 0, HF_MAX_EXPERTS, err)) ||
	    (rc = check_range("n_shared_experts", c->n_shared_experts, 0, HF_MAX_EXPERTS, err)) ||
	    (rc = check_range("n_group", c->n_group, 1, experts > 0 ? experts : 1, err)) ||
	    (rc = check_range("topk_group", c->topk_group, 1, c->n_group, err)) ||
	    (rc = check_range("max_position_embeddings", c->max_position_embeddings, 1, INT_MAX, err)) ||
	    (rc = check_range("num_nextn_predict_layers", c->num_nextn_predict_layers, 0, HF_MAX_LAYERS, err)) ||
	    (rc = check_range("bos_token_id", c->bos_token_id, -1, c->vocab_size - 1, err)) ||
	    (rc = check_range("eos_token_id count", c->n_eos_token_ids, 0, 8, err)) ||
	    (rc = check_range("index_topk", c->index_topk, 0, INT_MAX, err)) ||
	    (rc = check_range("index_head_dim", c->index_head_dim, 0, HF_MAX_DIM, err)) ||
	    (rc = check_range("index_n_heads", c->index_n_heads, 0, HF_MAX_DIM, err)))
		return rc;
	if (c->qk_rope_head_dim % 2)
		return coli_err_set(err, -EINVAL, "config: qk_rope_head_dim = %d must be even (rotary pairs)",
				    c->qk_rope_head_dim);
	if (c->index_topk > 0) {
		if (c->index_n_heads < 1 || c->index_head_dim < c->qk_rope_head_dim)
			return coli_err_set(err, -EINVAL, "config: index_n_heads = %d and index_head_dim = %d must be positive "
					    "and hold the %d rope dims", c->index_n_heads, c->index_head_dim, c->qk_rope_head_dim);
		if (c->q_lora_rank < 1)
			return coli_err_set(err, -EINVAL, "config: the DSA indexer needs q_lora_rank > 0 (its queries start "
					    "from the low-rank query)");
		if ((int)strlen(c->index_types) != c->num_hidden_layers || c->index_types[0] != 'F' ||
		    strspn(c->index_types, "FS") != strlen(c->index_types))
			return coli_err_set(err, -EINVAL, "config: the indexer schedule must give F or S for each layer, "
					    "starting with F");
	}
	if (experts > 0) {
		if (experts % c->n_group)
			return coli_err_set(err, -EINVAL, "config: n_routed_experts = %d is not a multiple of n_group = %d",
					    experts, c->n_group);
		/* top-k must be reachable from the kept groups alone */
		int reach = c->topk_group * (experts / c->n_group);
		if ((rc = check_range("num_experts_per_tok", c->num_experts_per_tok, 1, reach, err)))
			return rc;
	}
	for (int i = 0; i < c->n_eos_token_ids; i++)
		if ((rc = check_range("eos_token_id", c->eos_token_ids[i], 0, c->vocab_size - 1, err)))
			return rc;
	if ((rc = check_pos("routed_scaling_factor", c->routed_scaling_factor, err)) ||
	    (rc = check_pos("rms_norm_eps", c->rms_norm_eps, err)) ||
	    (rc = check_pos("attn_norm_eps", c->attn_norm_eps, err)) ||
	    (rc = check_pos("rope_theta", c->rope_theta, err)))
		return rc;
	if (c->rope_kind == COLI_ROPE_YARN) {
		if ((rc = check_pos("rope_scaling.factor", c->rope_factor, err)) ||
		    (rc = check_range("rope_scaling.original_max_position_embeddings", c->rope_original_max_pos, 1,
				      INT_MAX, err)) ||
		    (rc = check_pos("rope_scaling.beta_fast", c->rope_beta_fast, err)) ||
		    (rc = check_pos("rope_scaling.beta_slow", c->rope_beta_slow, err)) ||
		    (rc = check_pos("rope_scaling.mscale", c->rope_mscale, err)))
			return rc;
		if (!isfinite(c->rope_mscale_all_dim) || c->rope_mscale_all_dim < 0)
			return coli_err_set(err, -EINVAL, "config: rope_scaling.mscale_all_dim = %g must be >= 0",
					    c->rope_mscale_all_dim);
	} else if (c->rope_kind != COLI_ROPE_DEFAULT) {
		return coli_err_set(err, -EINVAL, "config: unknown rope kind %d", c->rope_kind);
	}
	return 0;
}
