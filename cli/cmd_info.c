/* cmd_info.c - `coli info [DIR] [--json]`: what a model container holds.
 * Validates the manifest like a load would (sizes, offsets, layout) but
 * reads no tensor data, so it answers at once even for a 400 GB model. */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cli_print.h"
#include "model_container.h"
#include "model_manifest.h"
#include "model_dir.h"

static void usage(FILE *f)
{
	fprintf(f, "usage: coli info [DIR] [--json]\n"
		   "Summarize a colitop model container (default: $COLI_MODEL, then the\n"
		   "embedded default model). See coli-info(1).\n");
}

static json_t *info_json(const coli_container *c, const json_t *m)
{
	const coli_config *g = &c->config;
	int n_moe = 0;
	for (int l = 0; l < g->num_hidden_layers; l++)
		n_moe += coli_config_layer_is_moe(g, l);
	uint64_t expert_bytes = 0, file_bytes = 0;
	for (int l = 0; l < g->num_hidden_layers; l++)
		expert_bytes += c->expert_shard_sizes[l];
	json_t *files = json_object_get(m, "files"), *v;
	size_t i;
	json_array_foreach(files, i, v)
		file_bytes += (uint64_t)json_integer_value(json_object_get(v, "size"));
	uint64_t mtp_bytes = 0;
	int mtp_tensors = 0;
	json_array_foreach(json_object_get(m, "tensors"), i, v) {
		const char *f = json_string_value(json_object_get(v, "file"));
		if (f && !strncmp(f, "mtp/", 4)) {
			mtp_bytes += (uint64_t)json_integer_value(json_object_get(v, "nbytes"));
			mtp_tensors++;
		}
	}
	json_t *q = json_deep_copy(json_object_get(m, "quant"));
	json_object_del(q, "f32_fallback");
	json_t *j = json_pack(
		"{s:s,s:s,s:i,s:s,"
		"s:{s:s,s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:i},"
		"s:o,s:I,s:i,s:I,s:i,"
		"s:{s:I,s:I,s:I,s:i},"
		"s:O,s:O,s:I,s:I,s:O}",
		"dir", c->dir, "format", MANIFEST_FORMAT, "version", c->version, "fingerprint",
		c->fingerprint,
		"architecture", "model_type", g->model_type, "layers", g->num_hidden_layers,
		"dense_layers", g->num_hidden_layers - n_moe, "moe_layers", n_moe, "mtp_layers",
		g->num_nextn_predict_layers, "hidden_size", g->hidden_size, "vocab_size",
		g->vocab_size, "intermediate_size", g->intermediate_size, "moe_intermediate_size",
		g->moe_intermediate_size, "attention_heads", g->num_attention_heads, "q_lora_rank",
		g->q_lora_rank, "kv_lora_rank", g->kv_lora_rank, "qk_nope_head_dim",
		g->qk_nope_head_dim, "qk_rope_head_dim", g->qk_rope_head_dim, "v_head_dim",
		g->v_head_dim, "routed_experts", g->n_routed_experts, "shared_experts",
		g->n_shared_experts, "experts_per_token", g->num_experts_per_tok,
		"max_position_embeddings", g->max_position_embeddings,
		"quant", q ? q : json_object(), "dense_bytes",
		(json_int_t)(c->dense_bytes - mtp_bytes), "dense_tensors", c->n_tensors - mtp_tensors,
		"mtp_bytes", (json_int_t)mtp_bytes, "mtp_tensors", mtp_tensors,
		"experts", "record_size", (json_int_t)c->expert_record_size, "count",
		(json_int_t)g->n_routed_experts * n_moe, "bytes", (json_int_t)expert_bytes, "shards",
		n_moe,
		"quant_error", json_object_get(m, "quant_error"), "files", files, "files_bytes",
		(json_int_t)file_bytes, "files_count", (json_int_t)json_array_size(files), "converter",
		json_object_get(m, "converter"));
	/* "crc32c" (format 2) or "none" (format 1: damage that passes the
	 * scale checks is not detected when read) */
	if (j)
		json_object_set_new(j, "checksums", json_string(coli_container_has_checksums(c) ? "crc32c" : "none"));
	return j;
}

static void print_human(const json_t *j)
{
	const json_t *a = json_object_get(j, "architecture");
	const json_t *q = json_object_get(j, "quant");
	const json_t *e = json_object_get(j, "experts");
#define I(o, k) ((long long)json_integer_value(json_object_get((o), (k))))
#define S(o, k) (json_string_value(json_object_get((o), (k))) ? json_string_value(json_object_get((o), (k))) : "?")
	printf("model         %s\n", S(j, "dir"));
	printf("format        %s v%lld, fingerprint %.16s, by %s\n", S(j, "format"), I(j, "version"),
	       S(j, "fingerprint"), S(j, "converter"));
	if (!strcmp(S(j, "checksums"), "crc32c"))
		printf("checksums     CRC-32C of every expert record and resident tensor, verified when read\n");
	else
		printf("checksums     no checksums (format v%lld, converted before them): damage that passes the "
		       "scale checks is not detected; convert again to add them\n", I(j, "version"));
	printf("architecture  %s: %lld layers (%lld dense, %lld MoE) + %lld MTP\n",
	       S(a, "model_type"), I(a, "layers"), I(a, "dense_layers"), I(a, "moe_layers"),
	       I(a, "mtp_layers"));
	printf("dims          hidden %lld, vocab %lld, FFN %lld, expert FFN %lld, context %lld\n",
	       I(a, "hidden_size"), I(a, "vocab_size"), I(a, "intermediate_size"),
	       I(a, "moe_intermediate_size"), I(a, "max_position_embeddings"));
	printf("attention     MLA, %lld heads, q_lora %lld, kv_lora %lld, qk nope/rope %lld/%lld, v %lld\n",
	       I(a, "attention_heads"), I(a, "q_lora_rank"), I(a, "kv_lora_rank"),
	       I(a, "qk_nope_head_dim"), I(a, "qk_rope_head_dim"), I(a, "v_head_dim"));
	printf("experts       %lld routed + %lld shared, %lld per token\n", I(a, "routed_experts"),
	       I(a, "shared_experts"), I(a, "experts_per_token"));
	printf("quant         dense %s, experts %s, embed %s, lm_head %s, mtp %s, norms %s, routers %s\n",
	       S(q, "dense"), S(q, "experts"), S(q, "embed"), S(q, "lm_head"), S(q, "mtp"),
	       S(q, "norms"), S(q, "routers"));
	printf("resident      %lld tensors, %lld bytes (%.2f GiB)\n", I(j, "dense_tensors"),
	       I(j, "dense_bytes"), (double)I(j, "dense_bytes") / (1u << 30));
	printf("mtp           %lld tensors, %lld bytes (%.2f GiB)\n", I(j, "mtp_tensors"),
	       I(j, "mtp_bytes"), (double)I(j, "mtp_bytes") / (1u << 30));
	printf("expert store  record %lld bytes x %lld experts in %lld shards = %lld bytes (%.2f GiB)\n",
	       I(e, "record_size"), I(e, "count"), I(e, "shards"), I(e, "bytes"),
	       (double)I(e, "bytes") / (1u << 30));
	const json_t *qe = json_object_get(j, "quant_error"), *v;
	const char *k;
	printf("quant error   relative RMS per class:\n");
	json_object_foreach((json_t *)qe, k, v) {
		printf("              %-15s %-9s %.5f", k, S(v, "qtype"),
		       json_real_value(json_object_get(v, "rel_rms")));
		if (json_object_get(v, "rel_rms_sym_int4"))
			printf("  (symmetric int4: %.5f)",
			       json_real_value(json_object_get(v, "rel_rms_sym_int4")));
		if (json_object_get(v, "rel_rms_int4"))
			printf("  (int4-g64: %.5f)", json_real_value(json_object_get(v, "rel_rms_int4")));
		printf("\n");
	}
	printf("files         %lld files, %lld bytes (%.2f GiB)\n", I(j, "files_count"),
	       I(j, "files_bytes"), (double)I(j, "files_bytes") / (1u << 30));
	const json_t *files = json_object_get(j, "files");
	size_t i;
	json_array_foreach((json_t *)files, i, v)
		printf("              %-36s %12lld  %.16s\n", S(v, "path"), I(v, "size"), S(v, "sha256"));
#undef I
#undef S
}

int cmd_info(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int as_json = 0, c, rc = COLI_EXIT_FAIL;
	coli_err err = { 0, "" };
	char dir[4096], mpath[4200];
	coli_container *ct = NULL;
	json_t *m = NULL, *j = NULL;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (c) {
		case 'j':
			as_json = 1;
			break;
		case 'h':
			usage(stdout);
			return COLI_EXIT_OK;
		default:
			cli_errorf("info", "unknown option '%s'", argv[optind - 1]);
			usage(stderr);
			return COLI_EXIT_USAGE;
		}
	}
	if (argc - optind > 1) {
		cli_errorf("info", "expected at most one DIR");
		usage(stderr);
		return COLI_EXIT_USAGE;
	}
	if (coli_model_dir_resolve(optind < argc ? argv[optind] : NULL, dir, sizeof dir, &err) < 0)
		goto out;
	coli_container_opts o = { .load_mtp = 1, .skip_load = 1 };
	if (coli_container_open(dir, &o, &ct, &err) < 0)
		goto out;
	snprintf(mpath, sizeof mpath, "%s/manifest.json", dir);
	if (manifest_load(mpath, &m, &err) < 0)
		goto out;
	if (!(j = info_json(ct, m))) {
		coli_err_set(&err, -ENOMEM, "%s: cannot summarize", mpath);
		goto out;
	}
	if (as_json) {
		cli_print_json(json_incref(j), JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(6));
	} else {
		print_human(j);
	}
	rc = COLI_EXIT_OK;
out:
	if (rc != COLI_EXIT_OK)
		cli_errorf("info", "%s", err.msg);
	json_decref(j);
	json_decref(m);
	coli_container_free(ct);
	return rc;
}
