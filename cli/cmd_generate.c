/* cmd_generate.c - `coli generate [DIR] -p TEXT | --tokens IDS ...`:
 * stream a continuation to stdout through the engine thread. */
#include "config.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cli_args.h"
#include "cli_json.h"
#include "util_args.h"
#include "coli_log.h"
#include "engine.h"
#include "engine_flags.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: coli generate [DIR] (-p TEXT | --tokens IDS) [options] [engine options]\n"
		"  -p, --prompt TEXT   prompt text (raw, no chat template)\n"
		"  --tokens IDS        prompt as token ids (comma or space separated)\n"
		"  -n, --max-tokens N  tokens to generate (default 128)\n"
		"  --temp T            temperature (default 0 = greedy)\n"
		"  --top-p P           nucleus sampling (default 1 = off)\n"
		"  --seed S            sampling seed (default 0)\n"
		"  --stop TEXT         stop sequence (repeatable, up to 8)\n"
		"  --no-bos            do not prepend the BOS token to -p text\n"
		"  --ignore-eos        keep generating past end-of-sequence\n"
		"  --ids               print only the generated token ids, space separated\n"
		"  --stats             print timing and drafting figures on stderr at the end\n"
		"  -v, --verbose       log engine decisions (drafting on/off and why) on stderr\n"
		"  --session NAME      continue the persisted KV session NAME\n%s%s",
		cli_json_flags_help, coli_engine_flags_help);
}

/* The signal that asked to stop (SIGINT, SIGTERM or SIGHUP), 0 none. The
 * handler only records it; the loop cancels the request on its next
 * event, the engine ends it at its next token and saves the turn. */
static volatile sig_atomic_t interrupted;

static void on_stop_signal(int sig)
{
	interrupted = sig;
}

static const int stop_signals[3] = { SIGINT, SIGTERM, SIGHUP };

/* Write all of it (a slow reader makes this wait, never drop); errno on
 * failure. */
static int out_write(const char *p, size_t n)
{
	if (n && fwrite(p, 1, n, stdout) != n)
		return errno ? errno : EIO;
	return fflush(stdout) ? (errno ? errno : EIO) : 0;
}

struct gen_args {
	coli_gen_params *gp;
	cli_json_flags *jf;
	const char *prompt, *tokens_arg, *stops[9];
	int n_stops, ids_only, no_bos, stats, verbose;
};

/* generate's own flags and the JSON-output ones (coli_cmd_flag_fn). */
static int generate_flag(void *ctx, int argc, char **argv, int *i, coli_err *err)
{
	struct gen_args *g = ctx;
	const char *a = argv[*i];
	int has = *i + 1 < argc;
	int rr = cli_json_flags_parse(g->jf, g->gp, argc, argv, i, err);
	if (rr)
		return rr;
	if ((!strcmp(a, "-p") || !strcmp(a, "--prompt")) && has) {
		g->prompt = argv[++*i];
	} else if (!strcmp(a, "--tokens") && has) {
		g->tokens_arg = argv[++*i];
	} else if (!strcmp(a, "--stop") && has) {
		if (g->n_stops == 8)
			return coli_err_set(err, -EINVAL, "--stop: at most 8 stop sequences");
		g->stops[g->n_stops++] = argv[++*i];
	} else if (!strcmp(a, "--session") && has) {
		g->gp->session = argv[++*i];
	} else if (!strcmp(a, "--ids")) {
		g->ids_only = 1;
	} else if (!strcmp(a, "--no-bos")) {
		g->no_bos = 1;
	} else if (!strcmp(a, "--ignore-eos")) {
		g->gp->ignore_eos = 1;
	} else if (!strcmp(a, "--stats")) {
		g->stats = 1;
	} else if (!strcmp(a, "-v") || !strcmp(a, "--verbose")) {
		g->verbose = 1;
		coli_log_set_level(COLI_LOG_INFO);
	} else {
		return 0;
	}
	return 1;
}

int cmd_generate(int argc, char **argv)
{
	coli_err err = { 0 };
	coli_engine_flags fl;
	coli_gen_params gp;
	coli_gen_params_default(&gp);
	gp.max_tokens = 128;
	const char *dir = NULL;
	int status = COLI_EXIT_FAIL;
	int *ids = NULL, n_ids = 0;
	coli_engine *e = NULL;
	coli_request *r = NULL;
	cli_json_flags jf = { 0 };
	struct gen_args g = { .gp = &gp, .jf = &jf };
	if (cli_engine_args("generate", &fl, &gp, argc, argv, generate_flag, &g, &dir, usage, &status))
		goto out;
	gp.stop = g.n_stops ? g.stops : NULL;
	if (!g.prompt == !g.tokens_arg) {
		coli_err_set(&err, -EINVAL, "give exactly one of -p TEXT or --tokens IDS");
		goto usage_err;
	}
	if (g.tokens_arg && util_parse_ids(g.tokens_arg, &ids, &n_ids, &err))
		goto usage_err;
	fl.opts.model_dir = dir;
	if (coli_engine_new(&fl.opts, &e, &err))
		goto fail;
	if (g.prompt) {
		const coli_tokenizer *tok = coli_engine_tokenizer(e);
		int *enc = NULL;
		size_t n_enc = 0;
		if (coli_tokenizer_encode(tok, g.prompt, strlen(g.prompt), &enc, &n_enc, &err))
			goto fail;
		int bos = g.no_bos ? -1 : coli_tokenizer_bos_id(tok);
		ids = malloc(sizeof(int) * (n_enc + 1));
		if (!ids) {
			free(enc);
			coli_err_set(&err, -ENOMEM, "out of memory");
			goto fail;
		}
		if (bos >= 0)
			ids[n_ids++] = bos;
		if (n_enc)
			memcpy(ids + n_ids, enc, sizeof(int) * n_enc);
		n_ids += (int)n_enc;
		free(enc);
	}
	/* every id its own event: merged events keep only the last id */
	gp.every_token = g.ids_only;
	/* SIGTERM and SIGHUP (a closed terminal) stop like Ctrl-C: the turn
	 * so far is saved; a closed stdout is reported, not a silent kill */
	struct sigaction sa = { 0 }, old[3], old_pipe;
	sa.sa_handler = on_stop_signal;
	sigemptyset(&sa.sa_mask);
	for (int k = 0; k < 3; k++)
		sigaction(stop_signals[k], &sa, &old[k]);
	struct sigaction ign = { 0 };
	ign.sa_handler = SIG_IGN;
	sigaction(SIGPIPE, &ign, &old_pipe);
	if (coli_engine_submit(e, ids, n_ids, &gp, &r, &err))
		goto restore;
	coli_event ev;
	int first = 1, cancelled = 0, werr = 0;
	for (;;) {
		int got = coli_request_next(r, &ev, 100);
		/* checked after every event, not only when none came for 100 ms:
		 * the request stops within a token of the signal */
		if ((interrupted || werr) && !cancelled) {
			coli_request_cancel(r);
			cancelled = 1;
		}
		if (!got)
			continue;
		if (ev.kind != COLI_EV_TEXT)
			break;
		/* what the engine still sends after a cancel is in the saved
		 * turn too: printed, so the session holds what was shown */
		if (werr)
			continue;
		if (g.ids_only) {
			if (ev.token >= 0) {
				char b[16];
				int n = snprintf(b, sizeof b, first ? "%d" : " %d", ev.token);
				werr = out_write(b, (size_t)n);
				first = 0;
			}
		} else {
			werr = out_write(ev.text, ev.text_len);
		}
	}
	if (ev.kind == COLI_EV_ERROR) {
		coli_err_set(&err, ev.error_code, "%s", ev.message);
		goto restore;
	}
	if (!werr)
		werr = out_write("\n", 1);
	if (werr) {
		coli_err_set(&err, -werr, "standard output: %s (generation stopped after %d tokens)",
			     strerror(werr), ev.completion_tokens);
		goto restore;
	}
	if (ev.message[0])
		coli_warn("%s", ev.message);   /* the answer is whole, its session not */
	if (g.stats)
		fprintf(stderr, "prompt %d tokens (%d cached), generated %d, ttft %.1f ms, %.2f tok/s\n",
			ev.prompt_tokens, ev.cached_tokens, ev.completion_tokens, ev.ttft_ms, ev.decode_tps);
	if (g.stats) {
		coli_step_stats st;
		coli_engine_step_stats(e, &st);
		if (st.spill_full_bytes > 0)
			fprintf(stderr, "spilled KV read back: %lld bytes of %lld\n", st.spill_bytes,
				st.spill_full_bytes);
	}
	if (g.stats || g.verbose) {
		coli_draft_stats ds;
		coli_engine_draft_stats(e, &ds);
		char mode[16];
		if (ds.available)
			fprintf(stderr, "draft %s: %llu drafted, %llu accepted (%.1f%%), %.2f tokens per forward; %s\n",
				coli_draft_name(ds.mode, mode, sizeof mode), ds.drafted, ds.accepted,
				100.0 * ds.acceptance, ds.tokens_per_forward, ds.reason);
		else
			fprintf(stderr, "draft %s\n", ds.reason);
	}
	status = interrupted ? 128 + interrupted : COLI_EXIT_OK;
restore:
	for (int k = 0; k < 3; k++)
		sigaction(stop_signals[k], &old[k], NULL);
	sigaction(SIGPIPE, &old_pipe, NULL);
	if (status == COLI_EXIT_FAIL)
		goto fail;
	goto out;
usage_err:
	cli_errorf("generate", "%s", err.msg);
	status = COLI_EXIT_USAGE;
	goto out;
fail:
	cli_errorf("generate", "%s", err.msg);
out:
	coli_request_free(r);
	coli_engine_free(e);
	free(ids);
	cli_json_flags_free(&jf);
	coli_engine_flags_free(&fl);
	return status;
}
