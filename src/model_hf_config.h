/* model_hf_config.h - Hugging Face config.json <-> coli_config.
 *
 * Accepts model_type "deepseek_v3", "kimi_k2" and "glm_moe_dsa" (GLM-5).
 * Missing or mistyped required keys, unknown model types and unsupported
 * features (scoring_func other than sigmoid, unsupported rope_scaling type,
 * ...) are refused with one line naming the key. Features implemented only
 * in part are warned about by name (e.g. the GLM-5 DSA indexer: dense MLA is
 * exact up to index_topk tokens; contexts beyond it are capped). */
#ifndef COLI_HF_CONFIG_H
#define COLI_HF_CONFIG_H

#include <jansson.h>

#include "coli_err.h"
#include "model_config.h"

int hf_config_from_json(const json_t *root, coli_config *cfg, coli_err *err);
int hf_config_load(const char *path, coli_config *cfg, coli_err *err);
/* A JSON object with the same HF keys (as stored in the manifest). */
json_t *hf_config_to_json(const coli_config *cfg);
/* Sanity checks shared by both paths (dimensions positive, divisibility,
 * top-k <= experts, group constraints ...). */
int hf_config_validate(const coli_config *cfg, coli_err *err);

#endif
