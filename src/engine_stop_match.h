/* engine_stop_match.h - stop sequences over streamed text.
 *
 * Text is appended as generated; what can be shown is released, except a
 * tail that might still grow into a stop sequence. When a stop sequence
 * appears, the text before it is released and the match reported. Pure and
 * allocation-free after init (the holdback buffer is bounded by the longest
 * stop sequence). */
#ifndef COLI_STOP_MATCH_H
#define COLI_STOP_MATCH_H

#include <stddef.h>

typedef struct stop_match {
	const char *const *stops;  /* NULL-terminated, not owned */
	char held[1024];
	size_t n_held;
	size_t max_stop;
} stop_match;

void stop_match_init(stop_match *m, const char *const *stops);
/* Append text; copies releasable bytes to out (cap >= len + sizeof held)
 * and returns how many. *hit is set to 1 when a stop sequence completed
 * (the stop text and anything after it are dropped). */
size_t stop_match_push(stop_match *m, const char *text, size_t len, char *out, size_t cap, int *hit);
/* End of generation: release whatever is held. */
size_t stop_match_flush(stop_match *m, char *out, size_t cap);

#endif
