/* convert_fp8.c - which FP8 convention a checkpoint follows, checked before
 * anything is converted.
 *
 * An FP8 weight means nothing without its scales: converted without them it
 * is a garbage model that loads and answers. Two namings exist and both
 * multiply: DeepSeek's "<w>_scale_inv" (quantization_config.quant_method
 * "fp8", weight_block_size [128, 128]) and compressed-tensors'
 * "<w>_scale" (quant_method "compressed-tensors", config_groups.*.weights
 * {type float, num_bits 8, strategy block with block_structure [128, 128],
 * channel or tensor}; also fbgemm_fp8, one scale per channel). What
 * st_read_f32 applies is decided by the scale's shape; this file refuses,
 * with the reason, every checkpoint where that would be a guess: an FP8
 * weight with no scale, a quantization method or strategy other than
 * those, block sizes other than 128 x 128, weights that are not 8-bit
 * floats. Checkpoints without quantization_config and without FP8 tensors
 * pass untouched. */
#include "config.h"

#define COLI_CONVERT_INTERNAL 1
#include "convert.h"

#include <errno.h>
#include <jansson.h>
#include <string.h>

/* A [128, 128] block structure, or absent (the 128 default). */
static int block_128(json_t *b)
{
	return !b || (json_is_array(b) && json_array_size(b) == 2 &&
		      json_integer_value(json_array_get(b, 0)) == 128 &&
		      json_integer_value(json_array_get(b, 1)) == 128);
}

/* compressed-tensors: every group's weights must be 8-bit floats whose
 * scales st_read_f32 knows. */
static int check_compressed(json_t *qc, const char *cfg, coli_err *err)
{
	json_t *groups = json_object_get(qc, "config_groups"), *g;
	const char *name;
	if (!json_is_object(groups) || !json_object_size(groups))
		return coli_err_set(err, -ENOTSUP, "%s: quantization_config (compressed-tensors) has no "
				    "config_groups: the FP8 scales' layout is unknown", cfg);
	json_object_foreach(groups, name, g) {
		json_t *w = json_object_get(g, "weights");
		const char *type = json_string_value(json_object_get(w, "type"));
		const char *strat = json_string_value(json_object_get(w, "strategy"));
		json_int_t bits = json_integer_value(json_object_get(w, "num_bits"));
		if (!w || !type || strcmp(type, "float") || bits != 8)
			return coli_err_set(err, -ENOTSUP, "%s: quantization_config.config_groups.%s: weights "
					    "of type %s with %lld bits are not supported (only 8-bit float: FP8)",
					    cfg, name, type ? type : "(none)", (long long)bits);
		if (!strat || (strcmp(strat, "block") && strcmp(strat, "channel") && strcmp(strat, "tensor")))
			return coli_err_set(err, -ENOTSUP, "%s: quantization_config.config_groups.%s: weight "
					    "strategy %s is not supported (block 128x128, channel or tensor)",
					    cfg, name, strat ? strat : "(none)");
		if (!strcmp(strat, "block") && !block_128(json_object_get(w, "block_structure")))
			return coli_err_set(err, -ENOTSUP, "%s: quantization_config.config_groups.%s: "
					    "block_structure other than [128, 128] is not supported", cfg, name);
	}
	return 0;
}

static int check_config(const char *cfg, coli_err *err)
{
	json_error_t je;
	json_t *root = json_load_file(cfg, 0, &je);
	if (!root)
		return 0;   /* hf_config_load reports an unreadable config.json */
	json_t *qc = json_object_get(root, "quantization_config");
	const char *m = json_string_value(json_object_get(qc, "quant_method"));
	int rc = 0;
	if (!qc)
		rc = 0;
	else if (!m)
		rc = coli_err_set(err, -ENOTSUP, "%s: quantization_config without quant_method", cfg);
	else if (!strcmp(m, "fp8"))
		rc = block_128(json_object_get(qc, "weight_block_size")) ? 0 :
		     coli_err_set(err, -ENOTSUP, "%s: quantization_config.weight_block_size other than "
				  "[128, 128] is not supported", cfg);
	else if (!strcmp(m, "compressed-tensors"))
		rc = check_compressed(qc, cfg, err);
	else if (strcmp(m, "fbgemm_fp8"))
		rc = coli_err_set(err, -ENOTSUP, "%s: quantization_config.quant_method '%s' is not supported "
				  "(FP8 checkpoints only: fp8, compressed-tensors, fbgemm_fp8)", cfg, m);
	json_decref(root);
	return rc;
}

int convert_check_fp8(const char *cfg, const st_checkpoint *ck, coli_err *err)
{
	int rc = check_config(cfg, err);
	if (rc < 0)
		return rc;
	for (int i = 0; i < ck->n_tensors; i++) {
		const st_tensor *t = &ck->tensors[i];
		if (t->dtype == ST_F8_E4M3 && !st_is_fp8_scale(ck, t) && !st_find_fp8_scale(ck, t))
			return coli_err_set(err, -ENOTSUP, "%s: tensor %s: FP8 (F8_E4M3) without a scale "
					    "(neither %s_scale_inv nor %s_scale): converted it would be "
					    "garbage", ck->files[t->file_index], t->name, t->name, t->name);
	}
	return 0;
}
