/* cmd_synth.c - `coli synth OUT_HF_DIR --preset P [...]`. */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "cli_print.h"
#include "ingest_safetensors.h"
#include "synth.h"

static void synth_usage(FILE *f)
{
	fprintf(f,
		"usage: coli synth OUT_HF_DIR [--preset tiny|glm5-tiny|glm5-slice|dsv3-slice] [--seed S]\n"
		"         [--layers N] [--dense-layers N] [--experts N] [--topk K]\n"
		"         [--groups G --topk-groups T] [--q-lora N|0] [--yarn|--no-yarn]\n"
		"         [--no-rope-interleave]\n"
		"         [--no-norm-topk] [--scaling F] [--dtype f32|bf16|f16|fp8]\n"
		"         [--shards N] [--vocab N] [--mtp N] [--dry-run]\n"
		"         [--index-topk K] [--indexer-rope interleave|neox] [--indexer-types FS..]\n"
		"         [--index-pattern FS..] [--index-freq N] [--index-offset N] [--shared-indexer-weights]\n"
		"Write a random model of the real architecture in Hugging Face layout\n"
		"(config.json, safetensors, tokenizer.json, tokenizer_config.json). See coli-synth(1).\n");
}

static int synth_parse_int(const char *flag, const char *s, long lo, long hi, int *out)
{
	char *end;
	errno = 0;
	long v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < lo || v > hi) {
		cli_errorf("synth", "%s: '%s' is not an integer in %ld..%ld", flag, s, lo, hi);
		return -1;
	}
	*out = (int)v;
	return 0;
}

enum {
	OPT_PRESET = 256, OPT_SEED, OPT_LAYERS, OPT_DENSE, OPT_EXPERTS, OPT_TOPK, OPT_GROUPS,
	OPT_TOPK_GROUPS, OPT_QLORA, OPT_YARN, OPT_NO_YARN, OPT_NO_NORM_TOPK, OPT_SCALING, OPT_DTYPE,
	OPT_SHARDS, OPT_VOCAB, OPT_MTP, OPT_DRY_RUN, OPT_HELP, OPT_NO_ROPE_INTERLEAVE,
	OPT_INDEX_TOPK, OPT_INDEXER_ROPE, OPT_INDEXER_TYPES, OPT_INDEX_PATTERN, OPT_INDEX_FREQ, OPT_INDEX_OFFSET,
	OPT_SHARED_INDEXER,
};

static const struct option synth_options[] = {
	{ "preset", required_argument, NULL, OPT_PRESET },
	{ "seed", required_argument, NULL, OPT_SEED },
	{ "layers", required_argument, NULL, OPT_LAYERS },
	{ "dense-layers", required_argument, NULL, OPT_DENSE },
	{ "experts", required_argument, NULL, OPT_EXPERTS },
	{ "topk", required_argument, NULL, OPT_TOPK },
	{ "groups", required_argument, NULL, OPT_GROUPS },
	{ "topk-groups", required_argument, NULL, OPT_TOPK_GROUPS },
	{ "q-lora", required_argument, NULL, OPT_QLORA },
	{ "yarn", no_argument, NULL, OPT_YARN },
	{ "no-yarn", no_argument, NULL, OPT_NO_YARN },
	{ "no-norm-topk", no_argument, NULL, OPT_NO_NORM_TOPK },
	{ "no-rope-interleave", no_argument, NULL, OPT_NO_ROPE_INTERLEAVE },
	{ "scaling", required_argument, NULL, OPT_SCALING },
	{ "dtype", required_argument, NULL, OPT_DTYPE },
	{ "shards", required_argument, NULL, OPT_SHARDS },
	{ "vocab", required_argument, NULL, OPT_VOCAB },
	{ "mtp", required_argument, NULL, OPT_MTP },
	{ "dry-run", no_argument, NULL, OPT_DRY_RUN },
	{ "index-topk", required_argument, NULL, OPT_INDEX_TOPK },
	{ "indexer-rope", required_argument, NULL, OPT_INDEXER_ROPE },
	{ "indexer-types", required_argument, NULL, OPT_INDEXER_TYPES },
	{ "index-pattern", required_argument, NULL, OPT_INDEX_PATTERN },
	{ "index-freq", required_argument, NULL, OPT_INDEX_FREQ },
	{ "index-offset", required_argument, NULL, OPT_INDEX_OFFSET },
	{ "shared-indexer-weights", no_argument, NULL, OPT_SHARED_INDEXER },
	{ "help", no_argument, NULL, OPT_HELP },
	{ NULL, 0, NULL, 0 },
};

/* The preset is applied first, whatever its position, so the other flags
 * always override it. */
static const char *synth_find_preset(int argc, char **argv)
{
	const char *p = "tiny";
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--"))
			break;
		if (!strcmp(argv[i], "--preset") && i + 1 < argc)
			p = argv[++i];
		else if (!strncmp(argv[i], "--preset=", 9))
			p = argv[i] + 9;
	}
	return p;
}

/* Progress on stderr: a line rewritten in place at a terminal, a line
 * per tenth otherwise (logs, CI). */
typedef struct synth_progress {
	uint64_t bytes;
	int tty, last_tenth;
} synth_progress;

static void on_progress(void *opaque, int done, int total)
{
	synth_progress *p = opaque;
	int tenth = (int)((int64_t)done * 10 / (total > 0 ? total : 1));
	double gb = (double)p->bytes * done / (total > 0 ? total : 1) / 1e9;
	if (p->tty) {
		fprintf(stderr, "\rcoli synth: %d/%d tensors, ~%.2f of %.2f GB", done, total, gb, (double)p->bytes / 1e9);
		if (done == total)
			fputc('\n', stderr);
	} else if (tenth != p->last_tenth || done == total) {
		fprintf(stderr, "coli synth: %d/%d tensors, ~%.2f of %.2f GB\n", done, total, gb, (double)p->bytes / 1e9);
	}
	p->last_tenth = tenth;
}

/* Before writing: the size, and how to make it smaller when it is large
 * (the GLM-5 slice at full width is about 40 GB). A size beyond the free
 * disk space is refused by synth_write itself. */
static void say_size(const synth_opts *o, const char *out, int n_tensors, uint64_t bytes)
{
	const coli_config *c = &o->cfg;
	fprintf(stderr, "coli synth: %s: %d tensors, %.2f GB (%d layers, %d experts, vocab %d)\n", out, n_tensors,
		(double)bytes / 1e9, c->num_hidden_layers, c->n_routed_experts, c->vocab_size);
	if (bytes > (uint64_t)4e9)
		fprintf(stderr, "coli synth: that is large; --layers N, --experts N or --dtype fp8 shrink it "
				"(--dry-run writes only config.json and the tokenizer)\n");
}

int cmd_synth(int argc, char **argv)
{
	synth_opts o;
	coli_err err = { 0 };
	coli_config *c = &o.cfg;
	for (int i = 1; i < argc; i++)
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			synth_usage(stdout);
			return COLI_EXIT_OK;
		}
	if (synth_preset(synth_find_preset(argc, argv), &o, &err)) {
		cli_errorf("synth", "%s", err.msg);
		return COLI_EXIT_USAGE;
	}
	int yarn = -1, opt;
	optind = 1;
	opterr = 0;
	while ((opt = getopt_long(argc, argv, "h", synth_options, NULL)) != -1) {
		const char *a = optarg;
		int bad = 0;
		switch (opt) {
		case OPT_PRESET: break;
		case OPT_SEED: {
			char *end;
			errno = 0;
			unsigned long long s = strtoull(a, &end, 0);
			if (errno || end == a || *end || a[0] == '-') {
				cli_errorf("synth", "--seed: '%s' is not an unsigned integer", a);
				return COLI_EXIT_USAGE;
			}
			o.seed = s;
			break;
		}
		case OPT_LAYERS: bad = synth_parse_int("--layers", a, 1, 1000, &c->num_hidden_layers); break;
		case OPT_DENSE: bad = synth_parse_int("--dense-layers", a, 0, 1000, &c->first_k_dense_replace); break;
		case OPT_EXPERTS: bad = synth_parse_int("--experts", a, 1, 4096, &c->n_routed_experts); break;
		case OPT_TOPK: bad = synth_parse_int("--topk", a, 1, 4096, &c->num_experts_per_tok); break;
		case OPT_GROUPS: bad = synth_parse_int("--groups", a, 1, 4096, &c->n_group); break;
		case OPT_TOPK_GROUPS: bad = synth_parse_int("--topk-groups", a, 1, 4096, &c->topk_group); break;
		case OPT_QLORA: bad = synth_parse_int("--q-lora", a, 0, 1 << 16, &c->q_lora_rank); break;
		case OPT_YARN: yarn = 1; break;
		case OPT_NO_YARN: yarn = 0; break;
		case OPT_NO_NORM_TOPK: c->norm_topk_prob = false; break;
		case OPT_NO_ROPE_INTERLEAVE: c->rope_interleave = false; break;
		case OPT_SCALING: {
			char *end;
			double f = strtod(a, &end);
			if (end == a || *end || !(f > 0.0 && f < 1000.0)) {
				cli_errorf("synth", "--scaling: '%s' is not a number in (0, 1000)", a);
				return COLI_EXIT_USAGE;
			}
			c->routed_scaling_factor = (float)f;
			break;
		}
		case OPT_DTYPE:
			if (!strcmp(a, "f32"))
				o.dtype = ST_F32;
			else if (!strcmp(a, "bf16"))
				o.dtype = ST_BF16;
			else if (!strcmp(a, "f16"))
				o.dtype = ST_F16;
			else if (!strcmp(a, "fp8"))
				o.dtype = ST_F8_E4M3;
			else {
				cli_errorf("synth", "--dtype: '%s' is not one of f32, bf16, f16, fp8", a);
				return COLI_EXIT_USAGE;
			}
			break;
		case OPT_SHARDS: bad = synth_parse_int("--shards", a, 1, 999, &o.n_shards); break;
		case OPT_VOCAB: bad = synth_parse_int("--vocab", a, 1, 1 << 20, &c->vocab_size); break;
		case OPT_MTP: bad = synth_parse_int("--mtp", a, 0, 4, &c->num_nextn_predict_layers); break;
		case OPT_DRY_RUN: o.dry_run = true; break;
		case OPT_INDEX_TOPK: {
			int k = 0;
			if (!(bad = synth_parse_int("--index-topk", a, 0, 1 << 20, &k)))
				synth_set_index_topk(&o, k);
			break;
		}
		case OPT_INDEXER_ROPE:
			if (strcmp(a, "interleave") && strcmp(a, "neox")) {
				cli_errorf("synth", "--indexer-rope: '%s' is not interleave or neox", a);
				return COLI_EXIT_USAGE;
			}
			c->indexer_rope_interleave = !strcmp(a, "interleave");
			break;
		case OPT_INDEXER_TYPES:
		case OPT_INDEX_PATTERN:
			if (strlen(a) > COLI_MAX_LAYERS || strspn(a, "FS") != strlen(a)) {
				cli_errorf("synth", "%s: '%.40s' is not a string of F and S (one per layer)",
					   opt == OPT_INDEXER_TYPES ? "--indexer-types" : "--index-pattern", a);
				return COLI_EXIT_USAGE;
			}
			strcpy(c->index_types, a);
			o.index_schedule = opt == OPT_INDEXER_TYPES ? SYNTH_INDEX_TYPES : SYNTH_INDEX_PATTERN;
			break;
		case OPT_INDEX_FREQ: bad = synth_parse_int("--index-freq", a, 1, 1000, &c->index_topk_freq); break;
		case OPT_INDEX_OFFSET: bad = synth_parse_int("--index-offset", a, 0, 1000, &c->index_skip_topk_offset); break;
		case OPT_SHARED_INDEXER: o.shared_indexer_weights = true; break;
		case '?':
		default:
			if (optopt)
				cli_errorf("synth", "option '%s' needs a value or is unknown (see --help)", argv[optind - 1]);
			else
				cli_errorf("synth", "unknown option '%s' (see --help)", argv[optind - 1]);
			return COLI_EXIT_USAGE;
		}
		if (bad)
			return COLI_EXIT_USAGE;
	}
	if (optind != argc - 1) {
		cli_errorf("synth", optind >= argc ? "missing OUT_HF_DIR" : "expected one OUT_HF_DIR, got extra arguments");
		return COLI_EXIT_USAGE;
	}
	const char *out = argv[optind];
	if (yarn >= 0)
		synth_set_yarn(&o, yarn);
	/* A layer count below the preset's dense prefix means "all dense". */
	if (c->first_k_dense_replace > c->num_hidden_layers) {
		int explicit_dense = 0;
		for (int i = 1; i < argc; i++)
			if (!strncmp(argv[i], "--dense-layers", 14))
				explicit_dense = 1;
		if (!explicit_dense)
			c->first_k_dense_replace = c->num_hidden_layers;
	}
	synth_resolve_index(&o);
	if (synth_check(&o, &err)) {
		cli_errorf("synth", "%s", err.msg);
		return COLI_EXIT_USAGE;
	}
	int n_tensors = 0;
	uint64_t bytes = 0;
	if (synth_plan(&o, &n_tensors, &bytes, &err)) {
		cli_errorf("synth", "%s", err.msg);
		return COLI_EXIT_FAIL;
	}
	synth_progress pr = { .bytes = bytes, .tty = isatty(STDERR_FILENO), .last_tenth = 0 };
	if (!o.dry_run) {
		say_size(&o, out, n_tensors, bytes);
		o.progress = on_progress;
		o.progress_opaque = &pr;
	}
	if (synth_write(out, &o, &err)) {
		if (pr.tty)
			fputc('\n', stderr);
		cli_errorf("synth", "%s", err.msg);
		return COLI_EXIT_FAIL;
	}
	json_t *sum = json_pack("{s:s,s:s,s:I,s:i,s:I,s:b}", "dir", out, "preset", o.preset, "seed",
				(json_int_t)o.seed, "tensors", n_tensors, "bytes", (json_int_t)bytes, "written",
				!o.dry_run);
	cli_print_json(sum, JSON_COMPACT);
	return COLI_EXIT_OK;
}
