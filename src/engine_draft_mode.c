/* engine_draft_mode.c - the --draft value (auto, off or N) as text and
 * back. Pure functions, kept apart from engine_draft.c so the request
 * parser (and its fuzzer) can use them without the engine. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"

int coli_draft_parse(const char *s, const char *what, int *out, coli_err *err)
{
	if (!strcmp(s, "auto")) {
		*out = COLI_DRAFT_AUTO;
		return 0;
	}
	if (!strcmp(s, "off") || !strcmp(s, "0")) {
		*out = COLI_DRAFT_OFF;
		return 0;
	}
	char *end;
	long v = strtol(s, &end, 10);
	if (end == s || *end || v < 1 || v > COLI_DRAFT_MAX)
		return coli_err_set(err, -EINVAL, "%s: expected auto, off or 1..%d, got '%s'", what, COLI_DRAFT_MAX, s);
	*out = (int)v;
	return 0;
}

const char *coli_draft_name(int draft, char *buf, size_t size)
{
	if (draft == COLI_DRAFT_OFF)
		snprintf(buf, size, "off");
	else if (draft > 0)
		snprintf(buf, size, "%d", draft);
	else
		snprintf(buf, size, "auto");
	return buf;
}
