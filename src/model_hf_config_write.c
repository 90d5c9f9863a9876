/* model_hf_config_write.c - coli_config -> config.json keys (see model_hf_config.h).
 *
 * The output parses back (hf_config_from_json) to the identical struct, and
 * writing that struct again gives an equal JSON object. Single-precision
 * fields are written as the shortest decimal that reads back to the same
 * float, so 1e-06 stays 1e-06 instead of 9.99999997e-07. */
#include "config.h"

#include "model_hf_config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static json_t *real_from_float(float f)
{
	char buf[32];
	for (int prec = 1; prec <= 9; prec++) {
		snprintf(buf, sizeof buf, "%.*g", prec, (double)f);
		if (strtof(buf, NULL) == f)
			break;
	}
	return json_real(strtod(buf, NULL));
}

static void set(json_t *o, const char *key, json_t *v)
{
	json_object_set_new(o, key, v);  /* NULL v (no memory) is ignored */
}

static json_t *rope_object(const coli_config *c, int with_theta)
{
	json_t *r = json_object();
	if (!r)
		return NULL;
	if (with_theta)
		set(r, "rope_theta", json_real(c->rope_theta));
	if (c->rope_kind != COLI_ROPE_YARN) {
		set(r, "rope_type", json_string("default"));
		return r;
	}
	set(r, with_theta ? "rope_type" : "type", json_string("yarn"));
	set(r, "factor", json_real(c->rope_factor));
	set(r, "original_max_position_embeddings", json_integer(c->rope_original_max_pos));
	set(r, "beta_fast", json_real(c->rope_beta_fast));
	set(r, "beta_slow", json_real(c->rope_beta_slow));
	set(r, "mscale", json_real(c->rope_mscale));
	set(r, "mscale_all_dim", json_real(c->rope_mscale_all_dim));
	return r;
}

json_t *hf_config_to_json(const coli_config *c)
{
	json_t *o = json_object();
	if (!o)
		return NULL;
	set(o, "model_type", json_string(c->model_type));
	set(o, "vocab_size", json_integer(c->vocab_size));
	set(o, "hidden_size", json_integer(c->hidden_size));
	set(o, "intermediate_size", json_integer(c->intermediate_size));
	set(o, "moe_intermediate_size", json_integer(c->moe_intermediate_size));
	set(o, "num_hidden_layers", json_integer(c->num_hidden_layers));
	set(o, "first_k_dense_replace", json_integer(c->first_k_dense_replace));
	set(o, "moe_layer_freq", json_integer(c->moe_layer_freq));
	set(o, "num_attention_heads", json_integer(c->num_attention_heads));
	set(o, "num_key_value_heads", json_integer(c->num_key_value_heads));
	set(o, "q_lora_rank", c->q_lora_rank ? json_integer(c->q_lora_rank) : json_null());
	set(o, "kv_lora_rank", json_integer(c->kv_lora_rank));
	set(o, "qk_nope_head_dim", json_integer(c->qk_nope_head_dim));
	set(o, "qk_rope_head_dim", json_integer(c->qk_rope_head_dim));
	set(o, "v_head_dim", json_integer(c->v_head_dim));
	set(o, "n_routed_experts", json_integer(c->n_routed_experts));
	set(o, "n_shared_experts", json_integer(c->n_shared_experts));
	set(o, "num_experts_per_tok", json_integer(c->num_experts_per_tok));
	set(o, "n_group", json_integer(c->n_group));
	set(o, "topk_group", json_integer(c->topk_group));
	set(o, "routed_scaling_factor", real_from_float(c->routed_scaling_factor));
	set(o, "norm_topk_prob", json_boolean(c->norm_topk_prob));
	set(o, "scoring_func", json_string(c->scoring_func));
	set(o, "topk_method", json_string(c->topk_method));
	set(o, "rms_norm_eps", real_from_float(c->rms_norm_eps));
	set(o, "max_position_embeddings", json_integer(c->max_position_embeddings));
	if (!strcmp(c->model_type, "glm_moe_dsa")) {
		set(o, "rope_parameters", rope_object(c, 1));
	} else {
		set(o, "rope_theta", json_real(c->rope_theta));
		set(o, "rope_scaling", c->rope_kind == COLI_ROPE_YARN ? rope_object(c, 0) : json_null());
	}
	set(o, "num_nextn_predict_layers", json_integer(c->num_nextn_predict_layers));
	set(o, "tie_word_embeddings", json_boolean(c->tie_word_embeddings));
	set(o, "rope_interleave", json_boolean(c->rope_interleave));
	if (c->bos_token_id >= 0)
		set(o, "bos_token_id", json_integer(c->bos_token_id));
	if (c->n_eos_token_ids == 1) {
		set(o, "eos_token_id", json_integer(c->eos_token_ids[0]));
	} else if (c->n_eos_token_ids > 1) {
		json_t *a = json_array();
		for (int i = 0; a && i < c->n_eos_token_ids; i++)
			json_array_append_new(a, json_integer(c->eos_token_ids[i]));
		set(o, "eos_token_id", a);
	}
	if (c->index_topk > 0) {
		set(o, "index_topk", json_integer(c->index_topk));
		set(o, "index_head_dim", json_integer(c->index_head_dim));
		set(o, "index_n_heads", json_integer(c->index_n_heads));
		set(o, "indexer_rope_interleave", json_boolean(c->indexer_rope_interleave));
		set(o, "index_topk_freq", json_integer(c->index_topk_freq));
		set(o, "index_skip_topk_offset", json_integer(c->index_skip_topk_offset));
		/* the schedule as resolved, so the manifest needs no derivation */
		json_t *a = json_array();
		for (int i = 0; a && c->index_types[i]; i++)
			json_array_append_new(a, json_string(c->index_types[i] == 'F' ? "full" : "shared"));
		set(o, "indexer_types", a);
	}
	return o;
}
