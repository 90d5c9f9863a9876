/* ingest_config.c - config.json parsing of the three public configs (as
 * published, trimmed to the keys that matter), the exact round trip through
 * hf_config_to_json, and refusals naming the key at fault. */
#include "config.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "coli_log.h"
#include "model_hf_config.h"
#include "ingest_util.h"
#include "test_util.h"

static const char *DSV3 =
	"{\"architectures\":[\"DeepseekV3ForCausalLM\"],\"attention_bias\":false,\"attention_dropout\":0.0,"
	"\"bos_token_id\":0,\"eos_token_id\":1,\"ep_size\":1,\"first_k_dense_replace\":3,\"hidden_act\":\"silu\","
	"\"hidden_size\":7168,\"initializer_range\":0.02,\"intermediate_size\":18432,\"kv_lora_rank\":512,"
	"\"max_position_embeddings\":163840,\"model_type\":\"deepseek_v3\",\"moe_intermediate_size\":2048,"
	"\"moe_layer_freq\":1,\"n_group\":8,\"n_routed_experts\":256,\"n_shared_experts\":1,\"norm_topk_prob\":true,"
	"\"num_attention_heads\":128,\"num_experts_per_tok\":8,\"num_hidden_layers\":61,\"num_key_value_heads\":128,"
	"\"num_nextn_predict_layers\":1,\"q_lora_rank\":1536,\"qk_nope_head_dim\":128,\"qk_rope_head_dim\":64,"
	"\"quantization_config\":{\"activation_scheme\":\"dynamic\",\"fmt\":\"e4m3\",\"quant_method\":\"fp8\","
	"\"weight_block_size\":[128,128]},\"rms_norm_eps\":1e-06,\"rope_scaling\":{\"beta_fast\":32,\"beta_slow\":1,"
	"\"factor\":40,\"mscale\":1.0,\"mscale_all_dim\":1.0,\"original_max_position_embeddings\":4096,\"type\":\"yarn\"},"
	"\"rope_theta\":10000,\"routed_scaling_factor\":2.5,\"scoring_func\":\"sigmoid\",\"tie_word_embeddings\":false,"
	"\"topk_group\":4,\"topk_method\":\"noaux_tc\",\"torch_dtype\":\"bfloat16\",\"transformers_version\":\"4.33.1\","
	"\"use_cache\":true,\"v_head_dim\":128,\"vocab_size\":129280}";

static const char *KIMI =
	"{\"model_type\":\"kimi_k2\",\"bos_token_id\":163584,\"eos_token_id\":163585,\"first_k_dense_replace\":1,"
	"\"hidden_size\":7168,\"intermediate_size\":18432,\"kv_lora_rank\":512,\"max_position_embeddings\":131072,"
	"\"moe_intermediate_size\":2048,\"moe_layer_freq\":1,\"n_group\":1,\"n_routed_experts\":384,"
	"\"n_shared_experts\":1,\"norm_topk_prob\":true,\"num_attention_heads\":64,\"num_experts_per_tok\":8,"
	"\"num_hidden_layers\":61,\"num_key_value_heads\":64,\"num_nextn_predict_layers\":0,\"q_lora_rank\":1536,"
	"\"qk_nope_head_dim\":128,\"qk_rope_head_dim\":64,\"rms_norm_eps\":1e-06,\"rope_scaling\":{\"beta_fast\":1.0,"
	"\"beta_slow\":1.0,\"factor\":32.0,\"mscale\":1.0,\"mscale_all_dim\":1.0,"
	"\"original_max_position_embeddings\":4096,\"type\":\"yarn\"},\"rope_theta\":50000.0,"
	"\"routed_scaling_factor\":2.827,\"scoring_func\":\"sigmoid\",\"tie_word_embeddings\":false,\"topk_group\":1,"
	"\"topk_method\":\"noaux_tc\",\"v_head_dim\":128,\"vocab_size\":163840}";

static const char *GLM5 =
	"{\"architectures\":[\"GlmMoeDsaForCausalLM\"],\"model_type\":\"glm_moe_dsa\",\"attention_bias\":false,"
	"\"bos_token_id\":0,\"eos_token_id\":[154820,154827,154829],\"first_k_dense_replace\":3,"
	"\"hidden_act\":\"silu\",\"hidden_size\":6144,\"index_head_dim\":128,\"index_n_heads\":32,"
	"\"index_topk\":2048,\"intermediate_size\":12288,\"kv_lora_rank\":512,\"max_position_embeddings\":202752,"
	"\"moe_intermediate_size\":2048,\"moe_layer_freq\":1,\"n_group\":1,\"n_routed_experts\":256,"
	"\"n_shared_experts\":1,\"norm_topk_prob\":true,\"num_attention_heads\":64,\"num_experts_per_tok\":8,"
	"\"num_hidden_layers\":78,\"num_key_value_heads\":64,\"num_nextn_predict_layers\":1,\"q_lora_rank\":2048,"
	"\"qk_head_dim\":256,\"qk_nope_head_dim\":192,\"qk_rope_head_dim\":64,\"rms_norm_eps\":1e-05,"
	"\"rope_interleave\":true,\"rope_parameters\":{\"rope_theta\":1000000,\"rope_type\":\"default\"},"
	"\"routed_scaling_factor\":2.5,\"scoring_func\":\"sigmoid\",\"tie_word_embeddings\":false,\"topk_group\":1,"
	"\"topk_method\":\"noaux_tc\",\"v_head_dim\":256,\"vocab_size\":154880}";

static int warnings;
static char last_warning[512];
static void sink(void *opaque, int level, const char *line)
{
	(void)opaque;
	if (level == COLI_LOG_WARN) {
		warnings++;
		snprintf(last_warning, sizeof last_warning, "%s", line);
	}
}

static int parse(const char *text, coli_config *c, coli_err *err)
{
	json_error_t je;
	json_t *j = json_loads(text, 0, &je);
	if (!j) {
		fprintf(stderr, "test JSON broken: %s\n", je.text);
		return -999;
	}
	int rc = hf_config_from_json(j, c, err);
	json_decref(j);
	return rc;
}

/* parse -> to_json -> text -> parse: identical struct and identical JSON;
 * every emitted key equals the input's value numerically. */
static void roundtrip(const char *name, const char *text)
{
	coli_config a, b;
	coli_err err = { 0 };
	if (parse(text, &a, &err)) {
		FAIL("%s: %s", name, err.msg);
		return;
	}
	json_t *ja = hf_config_to_json(&a);
	char *dumped = json_dumps(ja, JSON_SORT_KEYS);
	CHECK(parse(dumped, &b, &err) == 0);
	CHECK(memcmp(&a, &b, sizeof a) == 0);
	json_t *jb = hf_config_to_json(&b);
	CHECK(json_equal(ja, jb));
	json_t *orig = json_loads(text, 0, NULL);
	const char *key;
	json_t *v;
	json_object_foreach(ja, key, v) {
		json_t *o = json_object_get(orig, key);
		if (!o || json_is_null(o) || json_is_object(v))
			continue;
		int eq = json_equal(o, v) ||
			 (json_is_number(o) && json_is_number(v) && json_number_value(o) == json_number_value(v));
		CHECK(eq,
			"%s: key %s differs after round trip", name, key);
	}
	json_decref(orig);
	json_decref(ja);
	json_decref(jb);
	free(dumped);
}

static void test_public(void)
{
	coli_config c;
	coli_err err = { 0 };
	CHECK(parse(DSV3, &c, &err) == 0);
	CHECK(!strcmp(c.model_type, "deepseek_v3") && c.hidden_size == 7168 && c.vocab_size == 129280);
	CHECK(c.num_hidden_layers == 61 && c.first_k_dense_replace == 3 && c.num_nextn_predict_layers == 1);
	CHECK(c.q_lora_rank == 1536 && c.kv_lora_rank == 512 && c.qk_nope_head_dim == 128 && c.v_head_dim == 128);
	CHECK(c.n_group == 8 && c.topk_group == 4 && c.n_routed_experts == 256 && c.num_experts_per_tok == 8);
	CHECK(c.routed_scaling_factor == 2.5f && c.norm_topk_prob && !c.tie_word_embeddings);
	CHECK(c.rope_kind == COLI_ROPE_YARN && c.rope_factor == 40 && c.rope_original_max_pos == 4096);
	CHECK(c.rope_beta_fast == 32 && c.rope_beta_slow == 1 && c.rope_mscale == 1 && c.rope_mscale_all_dim == 1);
	CHECK(c.rms_norm_eps == 1e-6f && c.attn_norm_eps == c.rms_norm_eps && c.rope_theta == 10000);
	CHECK(c.bos_token_id == 0 && c.n_eos_token_ids == 1 && c.eos_token_ids[0] == 1 && c.index_topk == 0);
	CHECK(!strcmp(c.scoring_func, "sigmoid") && !strcmp(c.topk_method, "noaux_tc"));

	CHECK(parse(KIMI, &c, &err) == 0);
	CHECK(!strcmp(c.model_type, "kimi_k2") && c.n_routed_experts == 384 && c.routed_scaling_factor == 2.827f);
	CHECK(c.rope_factor == 32 && c.rope_beta_fast == 1 && c.rope_theta == 50000 && c.first_k_dense_replace == 1);

	warnings = 0;
	CHECK(parse(GLM5, &c, &err) == 0);
	CHECK(!strcmp(c.model_type, "glm_moe_dsa") && c.hidden_size == 6144 && c.num_hidden_layers == 78);
	CHECK(c.qk_nope_head_dim == 192 && c.v_head_dim == 256 && c.q_lora_rank == 2048);
	CHECK(c.index_topk == 2048 && c.index_head_dim == 128 && c.index_n_heads == 32);
	CHECK(c.rope_kind == COLI_ROPE_DEFAULT && c.rope_theta == 1e6 && c.rms_norm_eps == 1e-5f);
	CHECK(c.attn_norm_eps == 1e-5f);
	CHECK(c.n_eos_token_ids == 3 && c.eos_token_ids[2] == 154829);
	CHECK(warnings == 0);
	/* no schedule keys: every layer runs its indexer; no
	 * indexer_rope_interleave: NeoX halves */
	CHECK(strlen(c.index_types) == 78 && strspn(c.index_types, "F") == 78 && !c.indexer_rope_interleave);
	/* GLM-5.2's freq 4 / offset 3: layers 0, 1, 2, 6, 10, ..., 74 (21) */
	{
		json_t *j = json_loads(GLM5, 0, NULL);
		json_object_set_new(j, "index_topk_freq", json_integer(4));
		json_object_set_new(j, "index_skip_topk_offset", json_integer(3));
		json_object_set_new(j, "indexer_rope_interleave", json_true());
		CHECK(hf_config_from_json(j, &c, &err) == 0);
		int full = 0;
		for (int i = 0; i < 78; i++)
			full += c.index_types[i] == 'F';
		CHECK(full == 21 && !strncmp(c.index_types, "FFFSSSFSSSF", 11) && c.index_types[74] == 'F' &&
		      c.index_types[77] == 'S' && c.indexer_rope_interleave);
		json_object_set_new(j, "index_topk_pattern", json_string("FS"));
		CHECK(hf_config_from_json(j, &c, &err) == -EINVAL && strstr(err.msg, "index_topk_pattern"));
		json_object_set_new(j, "model_type", json_string("deepseek_v32"));
		json_object_del(j, "index_topk_pattern");
		CHECK(hf_config_from_json(j, &c, &err) == 0 && !strcmp(c.model_type, "deepseek_v32") &&
		      c.index_topk == 2048);
		json_decref(j);
	}

	roundtrip("deepseek_v3", DSV3);
	roundtrip("kimi_k2", KIMI);
	roundtrip("glm_moe_dsa", GLM5);

	/* load from a file; a broken file names the path */
	write_text(tpath("config.json"), DSV3);
	CHECK(hf_config_load(tpath("config.json"), &c, &err) == 0 && c.hidden_size == 7168);
	write_text(tpath("broken.json"), "{\"model_type\": ");
	CHECK(hf_config_load(tpath("broken.json"), &c, &err) < 0 && strstr(err.msg, "broken.json"));
	CHECK(hf_config_load(tpath("absent.json"), &c, &err) < 0 && strstr(err.msg, "absent.json"));
}

/* Replace `"key":<old value>` in DSV3 by `"key":repl` (or drop it if repl
 * is NULL) and expect a refusal mentioning `want`. */
static void expect_bad(const char *base, const char *key, const char *repl, const char *want)
{
	json_t *j = json_loads(base, 0, NULL);
	if (repl)
		json_object_set_new(j, key, json_loads(repl, JSON_DECODE_ANY, NULL));
	else
		json_object_del(j, key);
	coli_config c;
	coli_err err = { 0 };
	int rc = hf_config_from_json(j, &c, &err);
	CHECK(rc < 0 && strstr(err.msg, want),
		"%s=%s: rc=%d msg='%s' (wanted '%s')", key, repl ? repl : "(absent)", rc, err.msg,
			want);
	json_decref(j);
}

static void test_bad(void)
{
	expect_bad(DSV3, "hidden_size", NULL, "'hidden_size'");
	expect_bad(DSV3, "hidden_size", "\"7168\"", "'hidden_size' must be an integer");
	expect_bad(DSV3, "hidden_size", "7168.5", "'hidden_size'");
	expect_bad(DSV3, "vocab_size", NULL, "'vocab_size'");
	expect_bad(DSV3, "routed_scaling_factor", NULL, "'routed_scaling_factor'");
	expect_bad(DSV3, "routed_scaling_factor", "\"2.5\"", "'routed_scaling_factor' must be a number");
	expect_bad(DSV3, "model_type", "\"llama\"", "model_type 'llama'");
	expect_bad(DSV3, "model_type", NULL, "'model_type'");
	expect_bad(DSV3, "rope_scaling", "{\"type\":\"linear\",\"factor\":2}", "'linear'");
	expect_bad(DSV3, "rope_scaling", "{\"rope_type\":\"dynamic\",\"factor\":2}", "'dynamic'");
	expect_bad(DSV3, "rope_scaling", "{\"type\":\"yarn\"}", "factor");
	expect_bad(DSV3, "rope_scaling", "[1]", "'rope_scaling'");
	expect_bad(DSV3, "topk_group", "9", "topk_group");
	expect_bad(DSV3, "n_group", "7", "n_group");
	expect_bad(DSV3, "num_experts_per_tok", "300", "num_experts_per_tok");
	expect_bad(DSV3, "first_k_dense_replace", "62", "first_k_dense_replace");
	expect_bad(DSV3, "scoring_func", "\"softmax\"", "scoring_func 'softmax'");
	expect_bad(DSV3, "topk_method", "\"group_limited_greedy\"", "topk_method");
	expect_bad(DSV3, "norm_topk_prob", "1", "'norm_topk_prob'");
	expect_bad(DSV3, "eos_token_id", "\"</s>\"", "'eos_token_id'");
	expect_bad(DSV3, "eos_token_id", "[1,2,3,4,5,6,7,8,9]", "'eos_token_id'");
	expect_bad(DSV3, "eos_token_id", "200000", "eos_token_id");
	expect_bad(DSV3, "qk_rope_head_dim", "63", "qk_rope_head_dim");
	expect_bad(DSV3, "hidden_size", "0", "hidden_size");
	expect_bad(DSV3, "hidden_size", "99999999999", "hidden_size");
	expect_bad(DSV3, "rms_norm_eps", "-1", "rms_norm_eps");
	expect_bad(GLM5, "rope_parameters", "{\"rope_type\":\"linear\",\"rope_theta\":1}", "rope_parameters type 'linear'");
	expect_bad(GLM5, "index_topk", "\"2048\"", "'index_topk'");
	expect_bad(GLM5, "index_topk", "0", "index_topk = 0 must be positive");
	expect_bad(GLM5, "index_topk", NULL, "index_topk = 0 must be positive");
	expect_bad(GLM5, "indexer_types", "[\"full\"]", "indexer_types must list");
	expect_bad(GLM5, "index_head_dim", "16", "index_head_dim = 16");

	/* defaults: q_lora_rank null, n_group/topk_group null, scoring absent */
	json_t *j = json_loads(DSV3, 0, NULL);
	json_object_set_new(j, "q_lora_rank", json_null());
	json_object_set_new(j, "rope_scaling", json_null());
	json_object_del(j, "scoring_func");
	json_object_del(j, "tie_word_embeddings");
	json_object_del(j, "num_nextn_predict_layers");
	json_object_set_new(j, "n_group", json_null());
	json_object_set_new(j, "topk_group", json_null());
	json_object_set_new(j, "eos_token_id", json_pack("[i,i]", 1, 2));
	coli_config c;
	coli_err err = { 0 };
	CHECK(hf_config_from_json(j, &c, &err) == 0);
	CHECK(c.q_lora_rank == 0 && c.rope_kind == COLI_ROPE_DEFAULT && !strcmp(c.scoring_func, "sigmoid"));
	CHECK(!c.tie_word_embeddings && c.num_nextn_predict_layers == 0 && c.n_group == 1 && c.topk_group == 1);
	CHECK(c.n_eos_token_ids == 2 && c.eos_token_ids[1] == 2);
	char *dumped = json_dumps(j, 0);
	roundtrip("defaults", dumped);
	free(dumped);
	/* yarn defaults for the optional beta/mscale keys */
	json_object_set_new(j, "rope_scaling", json_pack("{s:s,s:f,s:i}", "rope_type", "yarn", "factor", 4.0,
							 "original_max_position_embeddings", 2048));
	CHECK(hf_config_from_json(j, &c, &err) == 0);
	CHECK(c.rope_beta_fast == 32 && c.rope_beta_slow == 1 && c.rope_mscale == 1 && c.rope_mscale_all_dim == 0);
	json_decref(j);
	json_t *three = json_integer(3);
	CHECK(hf_config_from_json(three, &c, &err) < 0 && strstr(err.msg, "not a JSON object"));
	json_decref(three);
}

int main(void)
{
	tmp_setup();
	coli_log_set_sink(sink, NULL);
	test_public();
	test_bad();
	return test_summary(__FILE__);
}
