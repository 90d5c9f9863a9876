/* cli_convert_flags.h - the conversion flags `coli convert` and `coli pull`
 * share: --quant, --mtp-quant, --embed-quant, --threads, --force. */
#ifndef COLI_CLI_CONVERT_FLAGS_H
#define COLI_CLI_CONVERT_FLAGS_H

#include <getopt.h>

#include "convert.h"

/* Their getopt_long entries, to put in a command's option table. */
#define CLI_CONVERT_LONGOPTS \
	{ "quant", required_argument, NULL, 'q' }, \
	{ "mtp-quant", required_argument, NULL, 'm' }, \
	{ "embed-quant", required_argument, NULL, 'e' }, \
	{ "threads", required_argument, NULL, 't' }, \
	{ "force", no_argument, NULL, 'f' }

/* Apply getopt code c (its value arg) to o: 1 when c is one of these flags,
 * 0 when it is not, -1 on a bad value (printed as "coli CMD: ..."). */
int cli_convert_flag(const char *cmd, int c, const char *arg, convert_opts *o);

#endif
