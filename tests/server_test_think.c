/* The reasoning splitter (server_think.c) on hand-written streams: the
 * result must not depend on how the text is cut into pieces (markers split
 * across pieces, a marker as one special token's text), a block opened by
 * the prompt or by the model, newlines after the markers dropped. */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "server_internal.h"
#include "test_util.h"

static void run(const char *text, int open, size_t piece, const char *want_r, const char *want_a, int want_seen)
{
	srv_think t;
	util_buf r = { 0 }, a = { 0 };
	srv_think_init(&t, open);
	size_t n = strlen(text);
	for (size_t i = 0; i < n; i += piece)
		srv_think_push(&t, text + i, i + piece <= n ? piece : n - i, &r, &a);
	srv_think_flush(&t, &r, &a);
	const char *gr = r.p ? r.p : "", *ga = a.p ? a.p : "";
	CHECK(!strcmp(gr, want_r) && !strcmp(ga, want_a) && t.seen == want_seen,
		"%s (open %d, pieces of %zu): reasoning \"%s\" answer \"%s\" seen %d", text,
			open, piece, gr, ga, t.seen);
	srv_think_free(&t);
	util_buf_free(&r);
	util_buf_free(&a);
}

static void all_pieces(const char *text, int open, const char *want_r, const char *want_a, int want_seen)
{
	for (size_t p = 1; p <= strlen(text) + 1; p++)
		run(text, open, p, want_r, want_a, want_seen);
}

int main(void)
{
	/* GLM-5: the prompt ends with <think> */
	all_pieces("\nLet me see.\n</think>\n\nThe answer.", 1, "Let me see.\n", "The answer.", 1);
	all_pieces("no end of thinking", 1, "no end of thinking", "", 1);
	all_pieces("</think>{\"a\":1}", 1, "", "{\"a\":1}", 1);
	/* a lookalike is reasoning text, not the end */
	all_pieces("a </thin b </think>c", 1, "a </thin b ", "c", 1);
	/* DeepSeek-R1: the model opens the block */
	all_pieces("<think>\nhmm</think>\n\nok", 0, "hmm", "ok", 1);
	all_pieces("  <think>x</think>y", 0, "x", "y", 1);
	/* no thinking at all: everything is the answer, even a later marker */
	all_pieces("plain answer", 0, "", "plain answer", 0);
	all_pieces("<thi is not it", 0, "", "<thi is not it", 0);
	all_pieces("answer then <think>x</think>", 0, "", "answer then <think>x</think>", 0);
	/* a second </think> after the block belongs to the answer */
	all_pieces("r</think>a</think>b", 1, "r", "a</think>b", 1);
	/* UTF-8 around the markers */
	all_pieces("思考</think>答え", 1, "思考", "答え", 1);
	return test_summary(__FILE__);
}
