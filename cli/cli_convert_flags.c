/* cli_convert_flags.c - see cli_convert_flags.h. */
#include "config.h"

#include "cli.h"
#include "cli_convert_flags.h"
#include "quant.h"
#include "util_args.h"

int cli_convert_flag(const char *cmd, int c, const char *arg, convert_opts *o)
{
	coli_err err = { 0, "" };
	long n;
	int q;
	switch (c) {
	case 'q':
	case 'm':
	case 'e':
	case 'I':
		q = coli_qtype_parse(arg);
		if (q < 0) {
			cli_errorf(cmd, "--%s: unknown type '%s' (int4-g64, int8, f32)",
				   c == 'q' ? "quant" : c == 'm' ? "mtp-quant" : c == 'e' ? "embed-quant" : "indexer-quant", arg);
			return -1;
		}
		if (c == 'q') {
			o->quant = q;
		} else if (c == 'm') {
			o->mtp_quant = q;
		} else if (c == 'e') {
			o->embed_quant = q;
			o->embed_quant_set = 1;
		} else {
			o->indexer_quant = q;
			o->indexer_quant_set = 1;
		}
		return 1;
	case 't':
		if (util_parse_int(arg, "--threads", 0, 1024, &n, &err)) {
			cli_errorf(cmd, "%s", err.msg);
			return -1;
		}
		o->threads = (int)n;
		return 1;
	case 'f':
		o->force = 1;
		return 1;
	default:
		return 0;
	}
}

int cli_convert_args(const char *cmd, int argc, char **argv, const char *shortopts,
		     const struct option *longopts, convert_opts *o, cli_convert_own_fn own, void *ctx,
		     void (*usage)(FILE *), const char *positionals, int *exit_code)
{
	int c;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, shortopts, longopts, NULL)) != -1) {
		int r = cli_convert_flag(cmd, c, optarg, o);
		if (!r && own)
			r = own(ctx, c, optarg);
		if (r < 0) {
			*exit_code = COLI_EXIT_USAGE;
			return 1;
		}
		if (r > 0)
			continue;
		if (c == 'h') {
			usage(stdout);
			*exit_code = COLI_EXIT_OK;
			return 1;
		}
		if (optopt)
			cli_errorf(cmd, "option -%c: unknown or missing its value", optopt);
		else
			cli_errorf(cmd, "unknown option '%s'", argv[optind - 1]);
		usage(stderr);
		*exit_code = COLI_EXIT_USAGE;
		return 1;
	}
	if (argc - optind != 2) {
		cli_errorf(cmd, "expected %s", positionals);
		usage(stderr);
		*exit_code = COLI_EXIT_USAGE;
		return 1;
	}
	return 0;
}
