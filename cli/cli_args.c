/* cli_args.c - see cli_args.h. */
#include "config.h"

#include "cli.h"
#include "cli_args.h"

int cli_engine_args(const char *cmd, coli_engine_flags *fl, coli_gen_params *gp, int argc, char **argv,
		    coli_cmd_flag_fn own, void *ctx, const char **pos, void (*usage)(FILE *), int *exit_code)
{
	coli_err err = { 0 };
	int rr = coli_engine_flags_init(fl, &err) ? -1
		 : coli_engine_flags_parse_args(fl, gp, argc, argv, own, ctx, pos, &err);
	if (!rr)
		return 0;
	if (rr == COLI_ARGS_HELP) {
		usage(stdout);
		*exit_code = COLI_EXIT_OK;
	} else {
		cli_errorf(cmd, "%s", err.msg);
		*exit_code = COLI_EXIT_USAGE;
	}
	return 1;
}
