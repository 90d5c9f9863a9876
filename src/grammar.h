/* grammar.h - JSON documents under a JSON Schema, recognised byte by byte.
 *
 * A compiled grammar (grammar_compile_schema, grammar_json_schema.c) is a graph of
 * nodes, one per schema construct. A matcher state is a small set of
 * pushdown stacks (anyOf may leave several readings alive); each stack is a
 * chain of immutable frames (object, array, string, number, literal ...)
 * linked towards the document root, so advancing by a byte copies only the
 * top frame and a trial advance is undone by dropping what it allocated.
 * That is what makes the token mask (grammar_mask.c) cheap: it walks the
 * vocabulary in sorted byte order, sharing the advance of a common prefix.
 *
 * Guarantees (checked by tests/grammar_test.c and the fuzzer):
 *  - sound: every byte the matcher accepts keeps the prefix extendable to a
 *    document valid under the schema (within the documented subset);
 *  - whitespace between JSON tokens is limited to GRAMMAR_MAX_WS bytes per
 *    gap, numbers to 15 digits before and after the point, so a model
 *    cannot stall in spaces or digits.
 * Ownership: a grammar is immutable after compile and may be shared by any
 * number of matchers on any thread (it is reference-counted: the engine's
 * requests hold one each, so the caller that compiled it may drop its own
 * at once); a matcher belongs to one thread. */
#ifndef COLI_GRAMMAR_H
#define COLI_GRAMMAR_H

#include <stddef.h>
#include <stdint.h>

#include "coli_err.h"

#define GRAMMAR_MAX_WS 2       /* whitespace bytes per gap */
#define GRAMMAR_MAX_STACKS 16  /* readings kept alive at once */
#define GRAMMAR_MAX_DEPTH 48   /* nesting of a document */
#define GRAMMAR_MAX_PROPS 64   /* declared properties of one object */
#define GRAMMAR_MAX_LITS 256   /* values of one enum */
#define GRAMMAR_RE_STATES 256  /* NFA states of one pattern/format */
#define GRAMMAR_SYM_END 256    /* the end-of-document symbol */

typedef struct coli_grammar coli_grammar;
typedef struct grammar_frame grammar_frame;

/* Compile a schema given as JSON text. `what` names the field in errors
 * (e.g. "response_format.json_schema.schema"); an unsupported keyword is an
 * error naming it, never ignored. */
int grammar_compile_schema(const char *json, size_t len, const char *what, coli_grammar **out,
			   coli_err *err);
/* Any JSON object (OpenAI json_object mode). */
int grammar_compile_any_object(coli_grammar **out, coli_err *err);
/* One more reference to g (returned; NULL stays NULL). */
coli_grammar *grammar_ref(coli_grammar *g);
/* Drop a reference: the last one frees the grammar (from any thread). */
void grammar_free(coli_grammar *g);
/* Grammars compiled by this process so far, on any thread: lets a test
 * show that compiling happens where it should (the submitting thread,
 * never the engine's). */
unsigned long grammar_compile_count(void);

/* A matcher: the committed state plus scratch for trial advances. The
 * scratch is allocated once (grammar_matcher_new), never per byte. */
typedef struct grammar_matcher grammar_matcher;

/* One state: the tops of up to GRAMMAR_MAX_STACKS stacks. */
typedef struct grammar_state {
	int n;
	const grammar_frame *top[GRAMMAR_MAX_STACKS];
} grammar_state;

int grammar_matcher_new(const coli_grammar *g, grammar_matcher **out, coli_err *err);
void grammar_matcher_free(grammar_matcher *m);
/* Reuse a matcher (its scratch) for another grammar, at the start of a
 * document; the grammar must outlive the matcher's use of it. */
void grammar_matcher_bind(grammar_matcher *m, const coli_grammar *g);
/* Back to the start of a document. */
void grammar_matcher_reset(grammar_matcher *m);
const grammar_state *grammar_matcher_state(const grammar_matcher *m);
/* Feed bytes for real. Returns 0, or -EINVAL (state unchanged) when a byte
 * cannot continue the document. */
int grammar_matcher_feed(grammar_matcher *m, const uint8_t *bytes, size_t n);
/* The document may end here (the end-of-sequence token is allowed). */
int grammar_matcher_accepts(grammar_matcher *m);
/* Some byte may still follow (when not, the document is complete). */
int grammar_matcher_can_continue(grammar_matcher *m);

/* Trial advances for the mask: scratch frames are released LIFO. */
size_t grammar_scratch_mark(const grammar_matcher *m);
void grammar_scratch_release(grammar_matcher *m, size_t mark);
/* out = in advanced by symbol c (a byte, or GRAMMAR_SYM_END); returns
 * out->n (0: c cannot follow). */
int grammar_advance(grammar_matcher *m, const grammar_state *in, int c, grammar_state *out);

#endif
