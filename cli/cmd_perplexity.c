/* cmd_perplexity.c - `coli perplexity [DIR] FILE [--window N] [--routing]
 * [--json]`: the model's next-token loss on a text file.
 *
 * The file is tokenized as a whole (special tokens written as text are
 * recognised, no BOS is added: a chat-rendered file carries its own), then
 * cut into consecutive windows of N tokens. Each window is run from an
 * empty KV cache with all logits, and every token after a window's first
 * is scored: loss = mean of -log softmax(logits[t-1])[token t] in nats,
 * perplexity = exp(loss). The windows do not overlap, so the figure is the
 * same whatever the batch size and is easy to reproduce elsewhere (the
 * training tools compute exactly this in PyTorch).
 *
 * --routing feeds one token at a time instead (same logits, one forward
 * call per position) so the routing of every token can be read from
 * coli_state_routing, and reports how often each expert was chosen in each
 * MoE layer: the engine's view of expert specialisation.
 *
 * --mtp also runs the MTP module at every position and reports its draft
 * acceptance: how often its greedy draft for token t+2 (from the hidden
 * state at t and token t+1) equals the main model's greedy prediction at
 * t+1 - the rate a greedy self-speculative decoder would accept. */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "cli_args.h"
#include "util_args.h"
#include "engine_flags.h"
#include "model.h"
#include "model_dir.h"
#include "sampler.h"
#include "tokenizer.h"
#include "util_buf.h"
#include "util_time.h"

#define PPL_DEFAULT_WINDOW 256

static void usage(FILE *f)
{
	fprintf(f, "usage: coli perplexity [DIR] FILE [--window N] [--routing] [--mtp] [--json] [engine options]\n"
		   "Next-token loss and perplexity of the model on a text file.\n"
		   "  --window N   tokens per window, each run from an empty cache (default %d,\n"
		   "               at most max_position_embeddings)\n"
		   "  --routing    one token per forward call; report expert choices per MoE layer\n"
		   "  --mtp        also report the MTP module's greedy draft acceptance\n"
		   "  --json       one JSON object instead of text\n%s",
		PPL_DEFAULT_WINDOW, coli_engine_flags_help);
}

static int read_file(const char *path, char **out, size_t *len, coli_err *err)
{
	int rc = util_buf_read_path(path, 0, out, len);
	if (rc == -EIO)
		return coli_err_set(err, rc, "%s: read error", path);
	if (rc == -ENOMEM)
		return coli_err_set(err, rc, "%s: out of memory", path);
	if (rc)
		return coli_err_set(err, rc, "%s: %s", path, strerror(-rc));
	return 0;
}

/* -log softmax(row)[tok], in double so long vocabularies lose nothing. */
static double token_nll(const float *row, int V, int tok)
{
	double mx = row[0], s = 0;
	for (int v = 1; v < V; v++)
		if (row[v] > mx)
			mx = row[v];
	for (int v = 0; v < V; v++)
		s += exp((double)row[v] - mx);
	return log(s) + mx - (double)row[tok];
}

struct ppl_run {
	double nll;          /* summed over scored tokens */
	long scored, windows;
	long *counts;        /* (moe layers, experts) with --routing */
	int n_moe, n_exp;
	int mtp;             /* --mtp */
	float *draft;        /* (V) MTP logits */
	long drafts, accepted;
};

/* Score ids[0..n) window by window; logits has room for (window, V). */
static int ppl_score(coli_model *m, coli_state *s, const int *ids, long n, int window, int routing,
		     float *logits, struct ppl_run *r, coli_err *err)
{
	const int V = m->cfg.vocab_size, k = m->cfg.num_experts_per_tok;
	for (long w0 = 0; w0 < n; w0 += window) {
		int len = (int)(n - w0 < window ? n - w0 : window);
		coli_state_rewind(s, 0);
		if (!routing && !r->mtp) {
			if (coli_forward(m, s, ids + w0, len, logits, 1, err))
				return err->code ? err->code : -EIO;
		} else {
			int draft_tok = -1;
			for (int t = 0; t < len; t++) {
				float *row = logits + (size_t)t * V;
				if (coli_forward(m, s, ids + w0 + t, 1, row, 0, err))
					return err->code ? err->code : -EIO;
				if (r->mtp) {
					/* the draft made at t-1 predicted what the main model
					 * now predicts at t */
					if (draft_tok >= 0) {
						r->drafts++;
						r->accepted += draft_tok == coli_argmax(row, V);
					}
					draft_tok = -1;
					if (t + 1 < len) {
						if (coli_forward_mtp(m, s, coli_state_seq(s), coli_state_hidden(s, 0),
								     ids + w0 + t + 1, 1, r->draft, err))
							return err->code ? err->code : -EIO;
						draft_tok = coli_argmax(r->draft, V);
					}
				}
				if (!routing)
					continue;
				const coli_routing *rt = coli_state_routing(s);
				/* rows are indexed by layer; dense layers have none */
				for (int l = 0, mi = 0; l < m->cfg.num_hidden_layers; l++) {
					if (!m->layers[l].is_moe)
						continue;
					for (int j = 0; j < k; j++) {
						int e = rt->experts[l * k + j];
						if (e >= 0 && e < r->n_exp)
							r->counts[(size_t)mi * r->n_exp + e]++;
					}
					mi++;
				}
			}
		}
		for (int t = 1; t < len; t++)
			r->nll += token_nll(logits + (size_t)(t - 1) * V, V, ids[w0 + t]);
		r->scored += len - 1;
		r->windows++;
	}
	return 0;
}

static void print_result(const struct ppl_run *r, const char *dir, const char *file, long n_tok,
			 size_t bytes, int window, double secs, int json)
{
	double loss = r->scored ? r->nll / (double)r->scored : NAN;
	if (!json) {
		printf("%s: %ld tokens (%zu bytes), %ld windows of <= %d, %ld scored\n", file, n_tok, bytes,
		       r->windows, window, r->scored);
		printf("loss %.6f nats/token, perplexity %.4f, %.4f bits/byte, %.1f tokens/s\n", loss, exp(loss),
		       bytes ? r->nll / log(2.0) / (double)bytes : 0.0, secs > 0 ? (double)n_tok / secs : 0.0);
		if (r->mtp)
			printf("MTP draft acceptance %.4f (%ld of %ld)\n",
			       r->drafts ? (double)r->accepted / (double)r->drafts : 0.0, r->accepted, r->drafts);
		return;
	}
	printf("{\"model\":\"%s\",\"tokens\":%ld,\"bytes\":%zu,\"window\":%d,\"windows\":%ld,"
	       "\"scored\":%ld,\"loss\":%.9g,\"perplexity\":%.9g,\"bits_per_byte\":%.9g,"
	       "\"seconds\":%.3f,\"tokens_per_s\":%.1f",
	       dir, n_tok, bytes, window, r->windows, r->scored, loss, exp(loss),
	       bytes ? r->nll / log(2.0) / (double)bytes : 0.0, secs, secs > 0 ? (double)n_tok / secs : 0.0);
	if (r->mtp)
		printf(",\"mtp_drafts\":%ld,\"mtp_accepted\":%ld,\"mtp_acceptance\":%.6f", r->drafts, r->accepted,
		       r->drafts ? (double)r->accepted / (double)r->drafts : 0.0);
	if (r->counts) {
		fputs(",\"routing\":[", stdout);
		for (int l = 0; l < r->n_moe; l++) {
			fputs(l ? ",[" : "[", stdout);
			for (int e = 0; e < r->n_exp; e++)
				printf(e ? ",%ld" : "%ld", r->counts[(size_t)l * r->n_exp + e]);
			fputc(']', stdout);
		}
		fputc(']', stdout);
	}
	fputs("}\n", stdout);
}

struct ppl_args {
	const char *pos[2];   /* [DIR] FILE, "-" allowed */
	int npos, json, routing, mtp;
	long window;
};

/* perplexity's own flags and its up to two positional words. */
static int ppl_flag(void *ctx, int argc, char **argv, int *i, coli_err *err)
{
	struct ppl_args *a = ctx;
	const char *s = argv[*i];
	if (!strcmp(s, "--json"))
		a->json = 1;
	else if (!strcmp(s, "--routing"))
		a->routing = 1;
	else if (!strcmp(s, "--mtp"))
		a->mtp = 1;
	else if (!strcmp(s, "--window") && *i + 1 < argc) {
		int rc = util_parse_int(argv[++*i], "--window", 2, 1 << 20, &a->window, err);
		return rc < 0 ? rc : 1;
	}
	else if ((s[0] != '-' || !s[1]) && a->npos < 2)
		a->pos[a->npos++] = s;
	else
		return 0;
	return 1;
}

int cmd_perplexity(int argc, char **argv)
{
	coli_err err = { 0 };
	coli_engine_flags fl;
	int status = COLI_EXIT_FAIL, *ids = NULL;
	size_t n_ids = 0, bytes = 0;
	char *text = NULL, dir[4096];
	coli_model *m = NULL;
	coli_state *s = NULL;
	coli_tokenizer *tok = NULL;
	float *logits = NULL;
	struct ppl_run r = { 0 };
	struct ppl_args pa = { .window = PPL_DEFAULT_WINDOW };
	if (cli_engine_args("perplexity", &fl, NULL, argc, argv, ppl_flag, &pa, NULL, usage, &status))
		goto out;
	const char **pos = pa.pos;
	int npos = pa.npos, json = pa.json, routing = pa.routing;
	long window = pa.window;
	r.mtp = pa.mtp;
	if (npos == 0) {
		coli_err_set(&err, -EINVAL, "FILE is required (see --help)");
		goto usage_err;
	}
	const char *file = pos[npos - 1], *dir_arg = npos == 2 ? pos[0] : NULL;
	if (read_file(file, &text, &bytes, &err) ||
	    coli_model_dir_resolve(dir_arg, dir, sizeof dir, &err) ||
	    coli_tokenizer_load_dir(dir, &tok, &err) ||
	    coli_tokenizer_encode(tok, text, bytes, &ids, &n_ids, &err))
		goto fail;
	if (n_ids < 2) {
		coli_err_set(&err, -EINVAL, "%s: fewer than 2 tokens, nothing to score", file);
		goto fail;
	}
	coli_model_opts mo;
	coli_engine_flags_model_opts(&fl, &mo);
	mo.mtp = r.mtp;
	if (coli_model_open(dir, &mo, &m, &err))
		goto fail;
	if (r.mtp && !m->n_mtp) {
		coli_err_set(&err, -ENOTSUP, "%s has no MTP module", dir);
		goto fail;
	}
	if (m->cfg.max_position_embeddings > 0 && window > m->cfg.max_position_embeddings)
		window = m->cfg.max_position_embeddings;
	if (coli_tokenizer_vocab_size(tok) > m->cfg.vocab_size) {
		coli_err_set(&err, -EINVAL, "%s: tokenizer has %d tokens, model vocabulary %d", dir,
			     coli_tokenizer_vocab_size(tok), m->cfg.vocab_size);
		goto fail;
	}
	if (coli_state_new(m, (int)window, routing || r.mtp ? 1 : (window < 64 ? (int)window : 64), &s, &err))
		goto fail;
	logits = malloc(sizeof(float) * (size_t)m->cfg.vocab_size * (size_t)window);
	if (routing) {
		for (int l = 0; l < m->cfg.num_hidden_layers; l++)
			r.n_moe += m->layers[l].is_moe;
		r.n_exp = m->cfg.n_routed_experts;
		r.counts = calloc((size_t)r.n_moe * (size_t)r.n_exp + 1, sizeof(long));
	}
	if (r.mtp)
		r.draft = malloc(sizeof(float) * (size_t)m->cfg.vocab_size);
	if (!logits || (routing && !r.counts) || (r.mtp && !r.draft)) {
		coli_err_set(&err, -ENOMEM, "out of memory");
		goto fail;
	}
	double t0 = coli_now_s();
	if (ppl_score(m, s, ids, (long)n_ids, (int)window, routing, logits, &r, &err))
		goto fail;
	print_result(&r, dir, file, (long)n_ids, bytes, (int)window, coli_now_s() - t0, json);
	status = fflush(stdout) ? COLI_EXIT_FAIL : COLI_EXIT_OK;
	goto out;
usage_err:
	cli_errorf("perplexity", "%s", err.msg);
	status = COLI_EXIT_USAGE;
	goto out;
fail:
	cli_errorf("perplexity", "%s", err.msg);
out:
	free(r.counts);
	free(r.draft);
	free(logits);
	coli_state_free(s);
	coli_model_free(m);
	coli_tokenizer_free(tok);
	free(ids);
	free(text);
	coli_engine_flags_free(&fl);
	return status;
}
