/* cli_args.h - how the model-running commands (bench, chat, generate,
 * logits, perplexity, serve) start: the engine flags from the environment,
 * then their argument loop, with --help and usage errors answered the same
 * way. */
#ifndef COLI_CLI_ARGS_H
#define COLI_CLI_ARGS_H

#include <stdio.h>

#include "engine_flags.h"

/* coli_engine_flags_init(fl), then coli_engine_flags_parse_args(fl, gp,
 * argc, argv, own, ctx, pos). Returns 0 when the command goes on, or 1
 * when it must exit now with *exit_code: COLI_EXIT_OK after --help (usage
 * printed to stdout), COLI_EXIT_USAGE after a bad environment value or
 * argument (printed as "coli CMD: ..."). fl is to be freed either way. */
int cli_engine_args(const char *cmd, coli_engine_flags *fl, coli_gen_params *gp, int argc, char **argv,
		    coli_cmd_flag_fn own, void *ctx, const char **pos, void (*usage)(FILE *), int *exit_code);

#endif
