/* cmd_logits.c - `coli logits DIR --tokens 1,2,3 [--incremental]`: the
 * logits of every position as JSON, for checking against the reference. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cli_args.h"
#include "util_args.h"
#include "engine_flags.h"
#include "model.h"
#include "model_dir.h"

static void usage(FILE *f)
{
	fprintf(f, "usage: coli logits [DIR] --tokens IDS [--incremental | --mtp] [engine options]\n"
		   "Print {\"logits\": [[...] one row per position]} as JSON.\n"
		   "  --tokens IDS     comma- or space-separated token ids\n"
		   "  --incremental    feed one token at a time through the KV cache\n"
		   "  --mtp            the MTP module's draft logits instead: row i predicts\n"
		   "                   token i+2 (one row fewer than tokens)\n%s",
		coli_engine_flags_help);
}

struct logits_args {
	const char *tokens_arg;
	int incremental, mtp;
};

/* logits' own flags (coli_cmd_flag_fn). */
static int logits_flag(void *ctx, int argc, char **argv, int *i, coli_err *err)
{
	struct logits_args *la = ctx;
	(void)err;
	if (!strcmp(argv[*i], "--tokens") && *i + 1 < argc)
		la->tokens_arg = argv[++*i];
	else if (!strcmp(argv[*i], "--incremental"))
		la->incremental = 1;
	else if (!strcmp(argv[*i], "--mtp"))
		la->mtp = 1;
	else
		return 0;
	return 1;
}

int cmd_logits(int argc, char **argv)
{
	coli_err err = { 0 };
	coli_engine_flags fl;
	const char *dir_arg = NULL;
	struct logits_args la = { 0 };
	int status = COLI_EXIT_FAIL, *ids = NULL, n = 0;
	coli_model *m = NULL;
	coli_state *s = NULL;
	float *logits = NULL;
	char dir[4096];
	if (cli_engine_args("logits", &fl, NULL, argc, argv, logits_flag, &la, &dir_arg, usage, &status))
		goto out;
	if (!la.tokens_arg) {
		cli_errorf("logits", "--tokens is required");
		status = COLI_EXIT_USAGE;
		goto out;
	}
	if (util_parse_ids(la.tokens_arg, &ids, &n, &err)) {
		cli_errorf("logits", "--tokens: %s", err.msg);
		status = COLI_EXIT_USAGE;
		goto out;
	}
	if (coli_model_dir_resolve(dir_arg, dir, sizeof dir, &err))
		goto fail;
	coli_model_opts mo;
	coli_engine_flags_model_opts(&fl, &mo);
	mo.mtp = la.mtp;
	if (la.mtp && n < 2) {
		cli_errorf("logits", "--mtp needs at least 2 tokens");
		status = COLI_EXIT_USAGE;
		goto out;
	}
	if (coli_model_open(dir, &mo, &m, &err))
		goto fail;
	if (la.mtp && !m->n_mtp) {
		coli_err_set(&err, -ENOTSUP, "%s has no MTP module", dir);
		goto fail;
	}
	const int V = m->cfg.vocab_size;
	if (coli_state_new(m, n, la.incremental ? 1 : (n < 64 ? n : 64), &s, &err))
		goto fail;
	logits = malloc(sizeof(float) * (size_t)V * (size_t)n);
	if (!logits) {
		cli_errorf("logits", "out of memory");
		goto out;
	}
	if (la.mtp) {
		/* main model one position at a time; its normed hidden state and
		 * the next token feed the MTP module at the same position */
		coli_seq *q = coli_state_seq(s);
		for (int t = 0; t + 1 < n; t++)
			if (coli_forward(m, s, ids + t, 1, logits + (size_t)t * V, 1, &err) ||
			    coli_forward_mtp(m, s, q, coli_state_hidden(s, 0), ids + t + 1, 1,
					     logits + (size_t)t * V, &err))
				goto fail;
		n--;
	} else if (la.incremental) {
		for (int t = 0; t < n; t++)
			if (coli_forward(m, s, ids + t, 1, logits + (size_t)t * V, 0, &err))
				goto fail;
	} else if (coli_forward(m, s, ids, n, logits, 1, &err)) {
		goto fail;
	}
	fputs("{\"logits\":[", stdout);
	for (int t = 0; t < n; t++) {
		fputs(t ? ",[" : "[", stdout);
		for (int v = 0; v < V; v++)
			printf(v ? ",%.9g" : "%.9g", logits[(size_t)t * V + v]);
		fputc(']', stdout);
	}
	fputs("]}\n", stdout);
	status = fflush(stdout) ? COLI_EXIT_FAIL : COLI_EXIT_OK;
	goto out;
fail:
	cli_errorf("logits", "%s", err.msg);
out:
	free(logits);
	coli_state_free(s);
	coli_model_free(m);
	free(ids);
	coli_engine_flags_free(&fl);
	return status;
}
