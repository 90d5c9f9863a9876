/* Stop sequences over streamed text: released text never contains a stop
 * sequence, nothing before it is lost, and the split of the input into
 * pieces does not matter. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine_stop_match.h"
#include "test_util.h"

/* Feed `text` in pieces of `step` bytes; return released text and hit. */
static void run(const char *const *stops, const char *text, size_t step, char *got, int *hit)
{
	stop_match m;
	stop_match_init(&m, stops);
	size_t n = strlen(text), out = 0;
	char buf[4096];
	*hit = 0;
	for (size_t at = 0; at < n && !*hit; at += step) {
		size_t k = n - at < step ? n - at : step;
		size_t r = stop_match_push(&m, text + at, k, buf, sizeof buf, hit);
		memcpy(got + out, buf, r);
		out += r;
	}
	if (!*hit)
		out += stop_match_flush(&m, got + out, 4096);
	got[out] = '\0';
}

int main(void)
{
	const char *stops[] = { "</s>", "\n\nUser:", "ab", NULL };
	const struct { const char *in, *want; int hit; } cases[] = {
		{ "hello world", "hello world", 0 },
		{ "hello</s>rest", "hello", 1 },
		{ "line\n\nUser: x", "line", 1 },
		{ "a<b</", "a<b</", 0 },
		{ "xxab", "xx", 1 },
		{ "aab", "a", 1 },
		{ "\n\nUse", "\n\nUse", 0 },
		{ "", "", 0 },
		{ "日本語</s>", "日本語", 1 },
	};
	for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++)
		for (size_t step = 1; step <= 8; step++) {
			char got[4096];
			int hit;
			run(stops, cases[c].in, step, got, &hit);
			CHECK(!strcmp(got, cases[c].want), "case %zu step %zu: got '%s' want '%s'", c, step, got,
			      cases[c].want);
			CHECK(hit == cases[c].hit, "case %zu step %zu: hit %d want %d", c, step, hit, cases[c].hit);
		}
	/* no stop sequences: everything passes through at once */
	{
		char got[4096];
		int hit;
		const char *none[] = { NULL };
		run(none, "abc</s>", 3, got, &hit);
		CHECK(!strcmp(got, "abc</s>") && !hit, "no stops");
	}
	return test_summary(__FILE__);
}
