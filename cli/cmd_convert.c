/* cmd_convert.c - `coli convert SRC_HF_DIR OUT_DIR [--quant Q] [--mtp-quant Q] [--force]`. */
#include "config.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cli_convert_flags.h"
#include "coli_log.h"
#include "convert.h"
#include "model_manifest.h"
#include "quant.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: coli convert SRC_HF_DIR OUT_DIR [--quant int4-g64|int8|f32]\n"
		"                    [--mtp-quant int8|int4-g64|f32] [--embed-quant TYPE]\n"
		"                    [--indexer-quant TYPE] [--threads N] [--force]\n"
		"                    [--delete-source]\n"
		"Convert a Hugging Face checkpoint into a colitop model container.\n"
		"Interrupted runs resume when started again with the same arguments.\n"
		"See coli-convert(1).\n");
}

/* Published error per class, read back from the manifest just written. */
static void print_quant_error(const char *out_dir)
{
	char path[4096];
	json_t *m = NULL;
	snprintf(path, sizeof path, "%s/manifest.json", out_dir);
	if (manifest_load(path, &m, NULL) < 0)
		return;
	json_t *qe = json_object_get(m, "quant_error"), *v;
	const char *k;
	printf("  quant error (relative RMS of w - dequant(quant(w))):\n");
	json_object_foreach(qe, k, v) {
		printf("    %-15s %-9s %.5f", k, json_string_value(json_object_get(v, "qtype")),
		       json_real_value(json_object_get(v, "rel_rms")));
		json_t *s = json_object_get(v, "rel_rms_sym_int4");
		json_t *i4 = json_object_get(v, "rel_rms_int4");
		if (s)
			printf("   (symmetric int4 would be %.5f)", json_real_value(s));
		if (i4)
			printf("   (int4-g64 would be %.5f)", json_real_value(i4));
		printf("\n");
	}
	json_decref(m);
}

/* convert's own getopt codes (cli_convert_own_fn). */
static int convert_flag(void *ctx, int c, const char *arg)
{
	convert_opts *o = ctx;
	(void)arg;
	if (c != 'D')
		return 0;
	o->delete_source = 1;
	return 1;
}

int cmd_convert(int argc, char **argv)
{
	static const struct option longopts[] = {
		CLI_CONVERT_LONGOPTS,
		{ "delete-source", no_argument, NULL, 'D' },
		{ NULL, 0, NULL, 0 },
	};
	convert_opts o;
	convert_summary s;
	coli_err err = { 0, "" };
	int code;
	convert_opts_default(&o);
	if (cli_convert_args("convert", argc, argv, "fh", longopts, &o, convert_flag, &o, usage,
			     "SRC_HF_DIR and OUT_DIR", &code))
		return code;
	/* Progress (one line per file) is part of this command's output: show
	 * info-level lines unless the user chose a level. */
	if (!getenv("COLI_LOG_LEVEL"))
		coli_log_set_level(COLI_LOG_INFO);
	if (o.mtp_quant == COLI_Q_INT4)
		coli_warn("--mtp-quant int4-g64: int4 MTP heads are known to collapse draft acceptance "
			  "(0-4%% in public reports); speculative decoding will gain little (coli doctor flags it)");
	o.src_dir = argv[optind];
	o.out_dir = argv[optind + 1];
	if (convert_run(&o, &s, &err) < 0) {
		cli_errorf("convert", "%s", err.msg);
		return COLI_EXIT_FAIL;
	}
	printf("converted %s -> %s\n", o.src_dir, o.out_dir);
	printf("  files       %d (%d written, %d kept from an earlier run)\n", s.files_total,
	       s.files_written, s.files_skipped);
	printf("  tensors     %d resident, %d expert records, %d matrices kept f32 (cols %% 64)\n",
	       s.n_tensors, s.n_expert_records, s.n_f32_fallback);
	printf("  bytes       %llu in the container (%.2f GiB), %llu written by this run\n",
	       (unsigned long long)s.bytes_total, (double)s.bytes_total / (1u << 30),
	       (unsigned long long)s.bytes_written);
	printf("  peak RSS    %.1f MiB\n", (double)s.peak_rss_kb / 1024.0);
	printf("  elapsed     %.2f s\n", s.elapsed_s);
	print_quant_error(o.out_dir);
	return COLI_EXIT_OK;
}
