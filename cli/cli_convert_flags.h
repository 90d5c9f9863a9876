/* cli_convert_flags.h - the conversion flags `coli convert` and `coli pull`
 * share: --quant, --mtp-quant, --embed-quant, --indexer-quant, --threads,
 * --force. */
#ifndef COLI_CLI_CONVERT_FLAGS_H
#define COLI_CLI_CONVERT_FLAGS_H

#include <getopt.h>
#include <stdio.h>

#include "convert.h"

/* Their getopt_long entries and --help's (cli_convert_args answers it),
 * to put in a command's option table. */
#define CLI_CONVERT_LONGOPTS \
	{ "quant", required_argument, NULL, 'q' }, \
	{ "mtp-quant", required_argument, NULL, 'm' }, \
	{ "embed-quant", required_argument, NULL, 'e' }, \
	{ "indexer-quant", required_argument, NULL, 'I' }, \
	{ "threads", required_argument, NULL, 't' }, \
	{ "force", no_argument, NULL, 'f' }, \
	{ "help", no_argument, NULL, 'h' }

/* A command's own getopt codes: 1 when c is one of them, 0 when not, -1 on
 * a bad value (already printed). */
typedef int (*cli_convert_own_fn)(void *ctx, int c, const char *arg);

/* The option loop of convert and pull: getopt_long over argv with shortopts
 * and longopts, trying each option as a conversion flag (into o), then as
 * the command's own (own(ctx), may be NULL), then --help/-h; an unknown
 * option or a missing value is a usage error, and so is any number of
 * positional arguments other than two (`positionals` names them in the
 * error, e.g. "SRC_HF_DIR and OUT_DIR"). Returns 0 when the command goes
 * on (the two are argv[optind] and argv[optind + 1]), or 1 when it must exit
 * now with *exit_code (usage printed to stdout for --help, to stderr after
 * an error). */
int cli_convert_args(const char *cmd, int argc, char **argv, const char *shortopts,
		     const struct option *longopts, convert_opts *o, cli_convert_own_fn own, void *ctx,
		     void (*usage)(FILE *), const char *positionals, int *exit_code);

/* Apply getopt code c (its value arg) to o: 1 when c is one of these flags,
 * 0 when it is not, -1 on a bad value (printed as "coli CMD: ..."). */
int cli_convert_flag(const char *cmd, int c, const char *arg, convert_opts *o);

#endif
