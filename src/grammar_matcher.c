/* grammar_matcher.c - the matcher's lifecycle (see grammar.h): its frame
 * arenas, the trial scratch released LIFO, and committing a state by
 * compacting its stacks out of the scratch arena. */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "grammar_impl.h"

#define COMMITTED_FRAMES (GRAMMAR_MAX_STACKS * (GRAMMAR_MAX_DEPTH + 2))

size_t grammar_scratch_mark(const grammar_matcher *m)
{
	return m->n_scratch;
}

void grammar_scratch_release(grammar_matcher *m, size_t mark)
{
	m->n_scratch = mark;
}

/* Move the stacks of `s` into the committed region, so the scratch arena
 * can be emptied. Shared ancestors are copied per stack (bounded: depth
 * times stacks). */
static void compact(grammar_matcher *m, const grammar_state *s)
{
	const grammar_frame *chain[GRAMMAR_MAX_DEPTH + 2];
	size_t w = 0;
	grammar_state next = { .n = s->n };
	for (int i = 0; i < s->n; i++) {
		int d = 0;
		for (const grammar_frame *f = s->top[i]; f && d < GRAMMAR_MAX_DEPTH + 2; f = f->up)
			chain[d++] = f;
		for (int j = d - 1; j >= 0; j--, w++) {
			m->tmp[w] = *chain[j];
			m->tmp[w].up = j == d - 1 ? NULL : &m->committed[w - 1];
		}
		next.top[i] = &m->committed[w - 1];
	}
	memcpy(m->committed, m->tmp, sizeof *m->tmp * w);
	m->cur = next;
	m->n_scratch = 0;
}

int grammar_matcher_new(const coli_grammar *g, grammar_matcher **out, coli_err *err)
{
	grammar_matcher *m = calloc(1, sizeof *m);
	if (m) {
		m->g = g;
		m->committed = calloc(COMMITTED_FRAMES, sizeof *m->committed);
		m->tmp = calloc(COMMITTED_FRAMES, sizeof *m->tmp);
		m->scratch = calloc(SCRATCH_FRAMES, sizeof *m->scratch);
	}
	if (!m || !m->committed || !m->tmp || !m->scratch) {
		grammar_matcher_free(m);
		return coli_err_set(err, -ENOMEM, "out of memory (grammar matcher)");
	}
	grammar_matcher_reset(m);
	*out = m;
	return 0;
}

void grammar_matcher_free(grammar_matcher *m)
{
	if (!m)
		return;
	free(m->committed);
	free(m->tmp);
	free(m->scratch);
	free(m);
}

void grammar_matcher_bind(grammar_matcher *m, const coli_grammar *g)
{
	m->g = g;
	grammar_matcher_reset(m);
}

void grammar_matcher_reset(grammar_matcher *m)
{
	memset(&m->committed[0], 0, sizeof m->committed[0]);
	m->committed[0].kind = GF_DOC;
	m->cur.n = 1;
	m->cur.top[0] = &m->committed[0];
	m->n_scratch = 0;
}

const grammar_state *grammar_matcher_state(const grammar_matcher *m)
{
	return &m->cur;
}

int grammar_matcher_feed(grammar_matcher *m, const uint8_t *bytes, size_t n)
{
	grammar_state a = m->cur, b;
	for (size_t i = 0; i < n; i++) {
		if (!grammar_advance(m, &a, bytes[i], &b)) {
			m->n_scratch = 0;
			return -EINVAL;
		}
		a = b;
		/* long inputs: keep the scratch arena from filling up */
		if (m->n_scratch > SCRATCH_FRAMES / 2) {
			compact(m, &a);
			a = m->cur;
		}
	}
	compact(m, &a);
	return 0;
}

int grammar_matcher_accepts(grammar_matcher *m)
{
	grammar_state out;
	size_t mark = m->n_scratch;
	int ok = grammar_advance(m, &m->cur, GRAMMAR_SYM_END, &out) > 0;
	m->n_scratch = mark;
	return ok;
}

int grammar_matcher_can_continue(grammar_matcher *m)
{
	grammar_state out;
	size_t mark = m->n_scratch;
	int ok = 0;
	for (int c = 0; c < 256 && !ok; c++) {
		ok = grammar_advance(m, &m->cur, c, &out) > 0;
		m->n_scratch = mark;
	}
	return ok;
}
