/* cmd_iobench.c - `coli iobench PATH`: the drive's random-read baseline. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "store_iobench.h"
#include "util_size_parse.h"

static void usage(FILE *f)
{
	fprintf(f, "usage: coli iobench PATH [--size BYTES] [--seconds S] [--file-size BYTES] [--json]\n"
		   "  PATH         a directory (a temporary test file is made there) or a file to read\n"
		   "  --size       large read size (the expert record size), default 16MiB\n"
		   "  --seconds    duration of each of the four tests, default 3\n"
		   "  --file-size  size of the temporary file, default min(2GiB, free space / 4)\n"
		   "  --json       one JSON object on stdout\n"
		   "See coli-iobench(1).\n");
}

int cmd_iobench(int argc, char **argv)
{
	store_iobench_opts o;
	memset(&o, 0, sizeof o);
	int json = 0;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;
		coli_err err;
		coli_err_clear(&err);
		if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			usage(stdout);
			return COLI_EXIT_OK;
		} else if (!strcmp(a, "--json")) {
			json = 1;
		} else if (!strcmp(a, "--size") || !strcmp(a, "--file-size")) {
			int64_t *dst = !strcmp(a, "--size") ? &o.record : &o.file_bytes;
			if (size_parse_with(v, -1, a, dst, &err) < 0 || *dst <= 0) {
				cli_errorf("iobench", "%s", err.msg[0] ? err.msg : "size must be positive");
				return COLI_EXIT_USAGE;
			}
			i++;
		} else if (!strcmp(a, "--seconds")) {
			char *end;
			o.seconds = v ? strtod(v, &end) : 0;
			if (!v || *end || o.seconds <= 0 || o.seconds > 3600) {
				cli_errorf("iobench", "--seconds: expected a number of seconds in (0, 3600]");
				return COLI_EXIT_USAGE;
			}
			i++;
		} else if (a[0] == '-' && a[1]) {
			cli_errorf("iobench", "unknown option '%s' (see coli iobench --help)", a);
			return COLI_EXIT_USAGE;
		} else if (!o.path) {
			o.path = a;
		} else {
			cli_errorf("iobench", "unexpected argument '%s'", a);
			return COLI_EXIT_USAGE;
		}
	}
	if (!o.path) {
		usage(stderr);
		return COLI_EXIT_USAGE;
	}
	if (o.record % 4096) {
		cli_errorf("iobench", "--size: must be a multiple of 4096");
		return COLI_EXIT_USAGE;
	}
	store_iobench_report r;
	coli_err err;
	coli_err_clear(&err);
	if (store_iobench_run(&o, &r, &err) < 0) {
		cli_errorf("iobench", "%s", err.msg);
		return COLI_EXIT_FAIL;
	}
	if (json)
		store_iobench_print_json(stdout, &r);
	else
		store_iobench_print(stdout, &r);
	return COLI_EXIT_OK;
}
