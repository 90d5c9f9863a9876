/* cmd_pull.c - `coli pull REPO[@REVISION] OUT_DIR [options]`. */
#include "config.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "cli_convert_flags.h"
#include "coli_log.h"
#include "pull.h"
#include "pull_hub.h"
#include "util_args.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: coli pull REPO[@REVISION] OUT_DIR [--dry-run] [--connections N] [--quiet]\n"
		"                 [--quant int4-g64|int8|f32] [--mtp-quant TYPE]\n"
		"                 [--embed-quant TYPE] [--indexer-quant TYPE] [--threads N] [--force]\n"
		"Download a Hugging Face Hub checkpoint shard by shard and convert it into a\n"
		"colitop model container; each shard is verified, converted and freed before\n"
		"the next. Run the same command again to resume. HF_TOKEN and HF_ENDPOINT\n"
		"are read from the environment. See coli-pull(1).\n");
}

/* pull's own getopt codes (cli_convert_own_fn). */
static int pull_flag(void *ctx, int c, const char *arg)
{
	pull_opts *o = ctx;
	coli_err err = { 0, "" };
	long n;
	switch (c) {
	case 'c':
		if (util_parse_int(arg, "--connections", 1, 64, &n, &err)) {
			cli_errorf("pull", "%s", err.msg);
			return -1;
		}
		o->connections = (int)n;
		return 1;
	case 'n':
		o->dry_run = 1;
		return 1;
	case 'Q':
		o->quiet = 1;
		return 1;
	default:
		return 0;
	}
}

int cmd_pull(int argc, char **argv)
{
	static const struct option longopts[] = {
		CLI_CONVERT_LONGOPTS,
		{ "connections", required_argument, NULL, 'c' },
		{ "dry-run", no_argument, NULL, 'n' },
		{ "quiet", no_argument, NULL, 'Q' },
		{ NULL, 0, NULL, 0 },
	};
	pull_opts o;
	pull_summary s;
	coli_err err = { 0, "" };
	char target[512];
	int code;
	pull_opts_default(&o);
	if (cli_convert_args("pull", argc, argv, "fhn", longopts, &o.conv, pull_flag, &o, usage,
			     "REPO[@REVISION] and OUT_DIR", &code))
		return code;
	if (strlen(argv[optind]) >= sizeof target) {
		cli_errorf("pull", "%s: too long for a repository name", argv[optind]);
		return COLI_EXIT_USAGE;
	}
	snprintf(target, sizeof target, "%s", argv[optind]);
	char *at = strchr(target, '@');
	if (at) {
		*at = '\0';
		if (!at[1]) {
			cli_errorf("pull", "%s: empty revision after '@'", argv[optind]);
			return COLI_EXIT_USAGE;
		}
		o.revision = at + 1;
	}
	o.repo = target;
	/* a bad name is a usage error, before anything is created or asked */
	if (hub_check_repo(o.repo, &err) < 0 || hub_check_revision(o.revision, &err) < 0) {
		cli_errorf("pull", "%s", err.msg);
		return COLI_EXIT_USAGE;
	}
	o.conv.out_dir = argv[optind + 1];
	o.progress_tty = isatty(STDERR_FILENO);
	/* Per-shard and per-file lines are this command's output unless
	 * --quiet or the user chose a level. */
	if (!getenv("COLI_LOG_LEVEL"))
		coli_log_set_level(o.quiet ? COLI_LOG_WARN : COLI_LOG_INFO);
	if (pull_run(&o, &s, &err) < 0) {
		cli_errorf("pull", "%s", err.msg);
		return COLI_EXIT_FAIL;
	}
	if (s.up_to_date) {
		if (!o.quiet)
			printf("%s@%s (commit %s) is already in %s: up to date\n", o.repo, o.revision,
			       s.commit, o.conv.out_dir);
		return COLI_EXIT_OK;
	}
	if (o.dry_run || o.quiet)
		return COLI_EXIT_OK;
	printf("pulled %s@%s (commit %s) -> %s\n", o.repo, o.revision, s.commit, o.conv.out_dir);
	printf("  shards      %d (%d downloaded by this run, %.2f GiB)\n", s.n_shards,
	       s.shards_fetched, (double)s.bytes_downloaded / (1u << 30));
	printf("  container   %llu bytes (%.2f GiB), %d files (%d kept from an earlier run)\n",
	       (unsigned long long)s.conv.bytes_total, (double)s.conv.bytes_total / (1u << 30),
	       s.conv.files_total, s.conv.files_skipped);
	printf("  peak disk   %llu bytes measured, %llu planned (container + largest shard "
	       "%llu + held across shards %llu)\n", (unsigned long long)s.peak_measured,
	       (unsigned long long)s.peak_need, (unsigned long long)s.largest_shard,
	       (unsigned long long)s.largest_held);
	printf("  elapsed     %.2f s\n", s.conv.elapsed_s);
	return COLI_EXIT_OK;
}
