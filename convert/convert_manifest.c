/* convert_manifest.c - manifest.json from a finished conversion plan.
 * The key order is fixed (insertion order is kept when saving) and nothing
 * depends on time or on OUT's path, so two conversions of the same
 * checkpoint with the same arguments give the same bytes. */
#include "config.h"

#define COLI_CONVERT_INTERNAL 1
#include "convert.h"

#include <stdlib.h>
#include <string.h>

#include "model_hf_config.h"
#include "model_manifest.h"
#include "quant.h"

static int class_qtype(const convert_opts *o, const convert_plan *p, int cls)
{
	switch (cls) {
	case CONVERT_CLS_EXPERTS: return p->expert_qtype;
	case CONVERT_CLS_EMBED: return p->embed_qtype;
	case CONVERT_CLS_LM_HEAD: return p->lm_head_qtype;
	case CONVERT_CLS_MTP: return o->mtp_quant;
	case CONVERT_CLS_INDEXER: return p->indexer_qtype;
	case CONVERT_CLS_ROUTERS:
	case CONVERT_CLS_NORMS:
	case CONVERT_CLS_OTHER: return COLI_Q_F32;
	default: return o->quant;
	}
}

static json_t *quant_error(const convert_opts *o, const convert_plan *p)
{
	convert_err_acc tot[CONVERT_CLS_COUNT];
	memset(tot, 0, sizeof tot);
	for (int i = 0; i < p->n_files; i++)
		for (int c = 0; c < CONVERT_CLS_COUNT; c++) {
			const convert_err_acc *b = &p->files[i].err[c];
			tot[c].sse += b->sse;
			tot[c].ssv += b->ssv;
			tot[c].sse_alt += b->sse_alt;
			tot[c].ssv_alt += b->ssv_alt;
			tot[c].n += b->n;
		}
	json_t *qe = json_object();
	/* norms and unknown tensors are f32: nothing to publish. */
	for (int c = 0; c < CONVERT_CLS_COUNT; c++) {
		if (!tot[c].n || c == CONVERT_CLS_NORMS || c == CONVERT_CLS_OTHER)
			continue;
		int q = class_qtype(o, p, c);
		json_t *e = json_pack("{s:s,s:f,s:I}", "qtype", coli_qtype_name(q), "rel_rms",
				      convert_rel_rms(tot[c].sse, tot[c].ssv), "elements",
				      (json_int_t)tot[c].n);
		const char *alt = convert_alt_name(c, q);
		if (alt && tot[c].ssv_alt > 0)
			json_object_set_new(e, alt,
					    json_real(convert_rel_rms(tot[c].sse_alt, tot[c].ssv_alt)));
		json_object_set_new(qe, convert_class_name(c), e);
	}
	return qe;
}

json_t *convert_manifest_build(const convert_opts *o, const convert_plan *p,
			       const char *src_label)
{
	json_t *m = json_object();
	json_t *fallback = json_array();
	json_t *tensors = json_array();
	json_t *shards = json_array();
	json_t *files = json_array();
	json_t *parts = json_array();
	static const char *const part_names[3] = { "gate", "up", "down" };
	int ok = 1;
	for (int i = 0; i < p->n_files; i++) {
		const convert_file *f = &p->files[i];
		json_array_append_new(files, json_pack("{s:s,s:I,s:s}", "path", f->path, "size",
						       (json_int_t)f->size, "sha256", f->sha256));
		if (f->kind == CONVERT_FILE_EXPERTS) {
			/* one CRC-32C per record, 8 hex digits each, record 0 first */
			const int E = p->cfg.n_routed_experts;
			char *crcs = malloc((size_t)E * 8 + 9);
			for (int e = 0; crcs && e < E; e++)
				manifest_crc_hex(f->rec_crc ? f->rec_crc[e] : 0, crcs + 8 * (size_t)e);
			if (crcs)
				crcs[(size_t)E * 8] = '\0';
			json_array_append_new(shards, crcs ? json_pack("{s:i,s:s,s:i,s:I,s:s,s:s}", "layer",
								f->layer, "file", f->path, "count", E, "size",
								(json_int_t)f->size, "sha256", f->sha256,
								"record_crc32c", crcs) : NULL);
			free(crcs);
			if (!f->rec_crc || json_array_size(shards) == 0)
				ok = 0;
		}
		for (int k = 0; k < f->n_t; k++) {
			const convert_tensor *t = &f->t[k];
			char crc[9];
			manifest_crc_hex(t->crc32c, crc);
			json_array_append_new(tensors,
					      json_pack("{s:s,s:s,s:I,s:I,s:s,s:[i,i],s:s}", "name",
							t->src->name, "file", f->path, "offset",
							(json_int_t)t->offset, "nbytes",
							(json_int_t)t->nbytes, "qtype",
							coli_qtype_name(t->qtype), "shape", t->rows,
							t->cols, "crc32c", crc));
			if (t->fallback)
				json_array_append_new(fallback, json_string(t->src->name));
		}
	}
	for (int k = 0; k < 3; k++)
		json_array_append_new(parts, json_pack("{s:s,s:I,s:i,s:i}", "name", part_names[k],
						       "offset", (json_int_t)p->part_off[k], "rows",
						       p->part_rows[k], "cols", p->part_cols[k]));
	json_object_set_new(m, "format", json_string(MANIFEST_FORMAT));
	json_object_set_new(m, "version", json_integer(MANIFEST_VERSION));
	json_object_set_new(m, "config", hf_config_to_json(&p->cfg));
	json_t *q = json_pack("{s:s,s:s,s:s,s:s,s:s,s:s,s:s,s:i,s:o}", "dense",
			      coli_qtype_name(o->quant), "experts", coli_qtype_name(p->expert_qtype),
			      "embed", coli_qtype_name(p->embed_qtype), "lm_head",
			      coli_qtype_name(p->lm_head_qtype), "mtp", coli_qtype_name(o->mtp_quant),
			      "norms", "f32", "routers", "f32", "group_size", COLI_QK,
			      "f32_fallback", fallback);
	/* only DSA models have the key, so other manifests keep their bytes */
	if (q && p->cfg.index_topk > 0)
		json_object_set_new(q, "indexer", json_string(coli_qtype_name(p->indexer_qtype)));
	json_object_set_new(m, "quant", q);
	json_object_set_new(m, "quant_error", quant_error(o, p));
	json_object_set_new(m, "tensors", tensors);
	json_object_set_new(m, "experts",
			    json_pack("{s:s,s:I,s:i,s:o,s:o}", "qtype",
				      coli_qtype_name(p->expert_qtype), "record_size",
				      (json_int_t)p->record_size, "alignment", 4096, "parts", parts,
				      "shards", shards));
	json_object_set_new(m, "files", files);
	json_object_set_new(m, "source",
			    json_pack("{s:s,s:s,s:i,s:i}", "name", src_label, "config_sha256",
				      p->config_sha256, "tensors", p->ck->n_tensors, "files",
				      p->ck->n_files));
	json_object_set_new(m, "converter", json_string("coli " PACKAGE_VERSION));
	/* json_pack returns NULL on allocation failure; set_new then drops it. */
	if (!ok || !json_object_get(m, "config") || !json_object_get(m, "experts") ||
	    !json_object_get(m, "source") || !json_object_get(m, "quant")) {
		json_decref(m);
		return NULL;
	}
	return m;
}
