/* MTP speculative decoding through the engine (engine_draft.c).
 *
 *   core_draft_test MODEL_DIR greedy NTOK
 *     Three prompts decoded greedily without drafts (one request at a
 *     time), then with drafts N = 1, 2, 3 and auto, all three requests
 *     submitted at once (concurrent slots verified in one step): every
 *     output byte and the token counts must be identical. Engine flags come from the environment
 *     (COLI_THREADS, COLI_EXPERT_CACHE, COLI_PARALLEL ...).
 *
 *   core_draft_test MODEL_DIR sample RUNS NTOK N TEMP
 *     RUNS requests sampled at temperature TEMP (seeds 1..RUNS) without drafts
 *     and RUNS with N drafts; prints {"off": [[ids]...], "draft": [...],
 *     "drafted": D, "accepted": A} for a distribution test. Also checks
 *     that the same seed gives the same tokens twice with drafts. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"
#include "engine_flags.h"

#define NPROMPT 3
static const int prompts[NPROMPT][6] = { { 0, 72, 101, 300, 17, 259 }, { 0, 5 }, { 0, 44, 9, 120 } };
static const int plen[NPROMPT] = { 6, 2, 4 };

/* The output of one request: its text bytes (byte-identical is the
 * claim; a consumer that falls behind gets several tokens merged into one
 * event, so ids alone could be lost, text never) and its token count. */
#define OUT_CAP 65536
typedef struct out_buf {
	char text[OUT_CAP];
	size_t len;
	int tokens;
	int ids[64];            /* the first ids (for the sampling test) */
	int n_ids;
} out_buf;

static int collect(coli_request **r, int n, out_buf *out, coli_err *err)
{
	int done[16] = { 0 }, left = n, rc = 0;
	for (int i = 0; i < n; i++)
		out[i].len = out[i].n_ids = out[i].tokens = 0;
	while (left) {
		for (int i = 0; i < n; i++) {
			coli_event ev;
			while (!done[i] && coli_request_next(r[i], &ev, left > 1 ? 2 : 100)) {
				if (ev.kind == COLI_EV_TEXT) {
					if (out[i].len + ev.text_len < OUT_CAP) {
						memcpy(out[i].text + out[i].len, ev.text, ev.text_len);
						out[i].len += ev.text_len;
					}
					if (ev.token >= 0 && out[i].n_ids < 64)
						out[i].ids[out[i].n_ids++] = ev.token;
					continue;
				}
				done[i] = 1;
				left--;
				out[i].tokens = ev.completion_tokens;
				if (ev.kind == COLI_EV_ERROR && !rc)
					rc = coli_err_set(err, ev.error_code, "%s", ev.message);
			}
		}
	}
	return rc;
}

static int run(coli_engine *e, int prompt, int draft, int ntok, float temp, uint64_t seed, out_buf *out,
	       coli_err *err)
{
	coli_gen_params p;
	coli_gen_params_default(&p);
	p.max_tokens = ntok;
	p.ignore_eos = 1;
	p.temperature = temp;
	p.seed = seed;
	p.draft = draft;
	coli_request *r = NULL;
	int rc = coli_engine_submit(e, prompts[prompt], plen[prompt], &p, &r, err);
	if (!rc)
		rc = collect(&r, 1, out, err);
	coli_request_free(r);
	return rc;
}

static int greedy(coli_engine *e, int ntok)
{
	coli_err err = { 0 };
	out_buf *ref = calloc(NPROMPT, sizeof *ref), *got = calloc(NPROMPT, sizeof *got);
	int bad = !ref || !got;
	for (int i = 0; i < NPROMPT && !bad; i++)
		bad = run(e, i, COLI_DRAFT_OFF, ntok, 0.0f, 0, ref + i, &err) != 0;
	const int modes[] = { 1, 2, 3, COLI_DRAFT_AUTO };
	for (int m = 0; m < 4 && !bad; m++) {
		coli_request *r[NPROMPT] = { 0 };
		for (int i = 0; i < NPROMPT && !bad; i++) {
			coli_gen_params p;
			coli_gen_params_default(&p);
			p.max_tokens = ntok;
			p.ignore_eos = 1;
			p.draft = modes[m];
			bad = coli_engine_submit(e, prompts[i], plen[i], &p, &r[i], &err) != 0;
		}
		if (!bad)
			bad = collect(r, NPROMPT, got, &err) != 0;
		for (int i = 0; i < NPROMPT; i++)
			coli_request_free(r[i]);
		for (int i = 0; i < NPROMPT && !bad; i++) {
			char name[16];
			coli_draft_name(modes[m], name, sizeof name);
			if (got[i].tokens != ntok || ref[i].tokens != ntok) {
				printf("FAIL: draft %s: prompt %d: %d tokens, without drafts %d (wanted %d)\n", name, i,
				       got[i].tokens, ref[i].tokens, ntok);
				bad = 1;
			} else if (got[i].len != ref[i].len || memcmp(got[i].text, ref[i].text, ref[i].len)) {
				size_t k = 0;
				while (k < got[i].len && k < ref[i].len && got[i].text[k] == ref[i].text[k])
					k++;
				printf("FAIL: draft %s: prompt %d: output differs from byte %zu on (%zu vs %zu bytes)\n",
				       name, i, k, got[i].len, ref[i].len);
				bad = 1;
			}
		}
	}
	if (err.msg[0])
		printf("FAIL: %s\n", err.msg);
	coli_draft_stats ds;
	coli_engine_draft_stats(e, &ds);
	printf("{\"bytes\":[%zu,%zu,%zu],\"drafted\":%llu,\"accepted\":%llu,\"tokens_per_forward\":%.3f}\n",
	       ref[0].len, ref[1].len, ref[2].len, ds.drafted, ds.accepted, ds.tokens_per_forward);
	if (!bad && ds.available && ds.drafted == 0) {
		printf("FAIL: nothing was drafted\n");
		bad = 1;
	}
	free(ref);
	free(got);
	return bad;
}

static int sample(coli_engine *e, int runs, int ntok, int n, float temp)
{
	coli_err err = { 0 };
	out_buf *a = calloc(1, sizeof *a), *b = calloc(1, sizeof *b);
	int bad = !a || !b || ntok > 64;
	for (int pass = 0; pass < 2 && !bad; pass++) {
		printf(pass ? "],\"draft\":[" : "{\"off\":[");
		for (int s = 1; s <= runs && !bad; s++) {
			bad = run(e, 0, pass ? n : COLI_DRAFT_OFF, ntok, temp, (uint64_t)s, a, &err) != 0;
			printf(s > 1 ? ",[" : "[");
			for (int k = 0; k < a->n_ids; k++)
				printf(k ? ",%d" : "%d", a->ids[k]);
			printf("]");
		}
	}
	coli_draft_stats ds;
	coli_engine_draft_stats(e, &ds);
	printf("],\"drafted\":%llu,\"accepted\":%llu}\n", ds.drafted, ds.accepted);
	/* reproducible: the same seed, the same tokens */
	if (!bad)
		bad = run(e, 0, n, ntok, temp, 7, a, &err) || run(e, 0, n, ntok, temp, 7, b, &err);
	if (!bad && (a->n_ids != b->n_ids || memcmp(a->ids, b->ids, sizeof(int) * (size_t)a->n_ids))) {
		fprintf(stderr, "FAIL: seed 7 with drafts gave two different outputs\n");
		bad = 1;
	}
	if (err.msg[0])
		fprintf(stderr, "FAIL: %s\n", err.msg);
	free(a);
	free(b);
	return bad;
}

int main(int argc, char **argv)
{
	if (argc < 4) {
		fprintf(stderr, "usage: %s MODEL_DIR greedy NTOK | sample RUNS NTOK N TEMP\n", argv[0]);
		return 2;
	}
	coli_err err = { 0 };
	coli_engine_flags fl;
	coli_engine *e = NULL;
	if (coli_engine_flags_init(&fl, &err)) {
		fprintf(stderr, "FAIL: %s\n", err.msg);
		return 1;
	}
	fl.opts.model_dir = argv[1];
	if (!fl.opts.parallel)
		fl.opts.parallel = NPROMPT;
	if (coli_engine_new(&fl.opts, &e, &err)) {
		fprintf(stderr, "FAIL: %s\n", err.msg);
		return 1;
	}
	int bad;
	if (!strcmp(argv[2], "greedy"))
		bad = greedy(e, atoi(argv[3]));
	else
		bad = argc < 7 || sample(e, atoi(argv[3]), atoi(argv[4]), atoi(argv[5]), (float)atof(argv[6]));
	coli_engine_free(e);
	return bad;
}
