/* model_config.h - the normalized architecture description.
 *
 * One struct for DeepSeek-V3, Kimi-K2 (model_type kimi_k2 / deepseek_v3) and
 * GLM-5 (glm_moe_dsa): MLA attention, dense first layers, MoE layers with
 * shared + routed experts (sigmoid scoring, bias-corrected group-limited
 * top-k), optional MTP layers. Parsed from a Hugging Face config.json by
 * model_hf_config.c and stored verbatim (same keys) in the container manifest, so
 * one parser serves both. */
#ifndef COLI_MODEL_CONFIG_H
#define COLI_MODEL_CONFIG_H

#include <stdbool.h>
#include <stdint.h>

enum coli_rope_kind { COLI_ROPE_DEFAULT = 0, COLI_ROPE_YARN = 1 };

/* Most main layers a config may declare (hf_config_validate). */
#define COLI_MAX_LAYERS 4096

typedef struct coli_config {
	char model_type[32];         /* "deepseek_v3", "kimi_k2", "glm_moe_dsa", "deepseek_v32" */
	int vocab_size;
	int hidden_size;             /* H */
	int intermediate_size;       /* dense FFN width */
	int moe_intermediate_size;   /* routed/shared expert width */
	int num_hidden_layers;       /* main layers, MTP layers not included */
	int first_k_dense_replace;   /* layers [0, k) are dense FFN */
	int moe_layer_freq;          /* 1 for all supported models */
	int num_attention_heads;
	int num_key_value_heads;     /* informational for MLA */
	int q_lora_rank;             /* 0 = no q LoRA (q_proj directly) */
	int kv_lora_rank;
	int qk_nope_head_dim;
	int qk_rope_head_dim;
	int v_head_dim;
	int n_routed_experts;
	int n_shared_experts;
	int num_experts_per_tok;
	int n_group;
	int topk_group;
	float routed_scaling_factor;
	bool norm_topk_prob;
	char scoring_func[16];       /* "sigmoid" (only supported value) */
	char topk_method[16];        /* "noaux_tc" (or "greedy" when n_group == 1) */
	float rms_norm_eps;
	/* epsilon used for q_a_layernorm / kv_a_layernorm; we use rms_norm_eps
	 * (vLLM / Megatron) rather than transformers' hard-coded 1e-6. */
	float attn_norm_eps;
	double rope_theta;
	int max_position_embeddings;
	/* rope_scaling (YaRN) */
	int rope_kind;               /* enum coli_rope_kind */
	double rope_factor;
	int rope_original_max_pos;
	double rope_beta_fast;
	double rope_beta_slow;
	double rope_mscale;
	double rope_mscale_all_dim;
	/* RoPE pairing of the rope dims. true (default, config key
	 * "rope_interleave"): rotate pairs (x[2i], x[2i+1]) as DeepSeek's
	 * reference code and vLLM/SGLang do; false: NeoX split halves
	 * (x[i], x[i+d/2]). transformers' glm_moe_dsa port always uses split
	 * halves although GLM-5's config says rope_interleave: true; we follow
	 * the config (see colitop-model(5)). */
	bool rope_interleave;
	int num_nextn_predict_layers; /* MTP layers stored after the main layers */
	bool tie_word_embeddings;
	int bos_token_id;            /* -1 when absent */
	int eos_token_ids[8];        /* eos_token_id may be an int or a list */
	int n_eos_token_ids;
	/* DSA lightning indexer (glm_moe_dsa, deepseek_v32); index_topk 0 when
	 * the model has none. Each query attends to the index_topk earlier
	 * keys the indexer scores highest; below index_topk tokens of context
	 * that is every key, so attention equals dense MLA. */
	int index_topk;
	int index_head_dim;
	int index_n_heads;
	/* rope pairing of the index heads' rope part: interleaved pairs
	 * (GLM-5 ships true) or NeoX halves (false, the default) */
	bool indexer_rope_interleave;
	int index_topk_freq;         /* inputs of the derived schedule (1, 2) */
	int index_skip_topk_offset;
	/* per main layer: 'F' runs its own indexer, 'S' reuses the selection
	 * of the nearest earlier 'F' layer; "" without an indexer. MTP layers
	 * always run their own (colitop-model(5)). */
	char index_types[COLI_MAX_LAYERS + 1];
} coli_config;

/* Derived sizes. */
static inline int coli_config_qk_head_dim(const coli_config *c)
{
	return c->qk_nope_head_dim + c->qk_rope_head_dim;
}
static inline bool coli_config_has_indexer(const coli_config *c)
{
	return c->index_topk > 0;
}
/* Whether layer l (main or MTP) runs its own indexer. */
static inline bool coli_config_layer_index_full(const coli_config *c, int layer)
{
	return c->index_topk > 0 && (layer >= c->num_hidden_layers || c->index_types[layer] == 'F');
}
/* Numbers of a cached row attention reads: normalized latent | roped key. */
static inline int coli_config_attn_width(const coli_config *c)
{
	return c->kv_lora_rank + c->qk_rope_head_dim;
}
/* Numbers per token per layer in the compressed KV cache: the attention
 * part (normalized latent | roped key). The DSA index keys are kept apart,
 * for the layers that run their own indexer only (a shared layer reuses an
 * earlier selection and needs none): coli_config_index_layers. */
static inline int coli_config_kv_width(const coli_config *c)
{
	return coli_config_attn_width(c);
}
/* Main layers that keep a DSA index key per token (index_head_dim numbers
 * each): those that run their own indexer. 0 without an indexer. */
static inline int coli_config_index_layers(const coli_config *c)
{
	int n = 0;
	for (int l = 0; c->index_topk > 0 && l < c->num_hidden_layers; l++)
		n += c->index_types[l] == 'F';
	return n;
}
/* Numbers per token of the main layers' KV state: every layer's attention
 * row plus the index keys of the full indexer layers (GLM-5.2: 78 x 576 +
 * 21 x 128). */
static inline int64_t coli_config_kv_token_numbers(const coli_config *c)
{
	return (int64_t)c->num_hidden_layers * coli_config_kv_width(c) +
	       (int64_t)coli_config_index_layers(c) * (c->index_topk > 0 ? c->index_head_dim : 0);
}
static inline bool coli_config_layer_is_moe(const coli_config *c, int layer)
{
	return c->n_routed_experts > 0 && layer >= c->first_k_dense_replace &&
	       (c->moe_layer_freq <= 1 || layer % c->moe_layer_freq == 0);
}

#endif
