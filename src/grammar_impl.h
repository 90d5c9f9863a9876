/* grammar_impl.h - the compiled grammar and the matcher's frames (private to
 * grammar_json_schema.c, grammar.c, grammar_number.c, grammar_matcher.c,
 * grammar_regex.c and grammar_mask.c). */
#ifndef COLI_GRAMMAR_IMPL_H
#define COLI_GRAMMAR_IMPL_H

#include <stdatomic.h>
#include <stdint.h>

#include "grammar.h"

/* A decimal of at most 15 integer and 15 fraction digits, in units of
 * 1e-15 (|value| < 1e30 units). */
__extension__ typedef __int128 gnum;
#define GNUM_SCALE 1000000000000000LL   /* units per 1 */
#define GNUM_DIGITS 15                   /* digits of a bounded number */

/* A set of NFA states (or enum candidates). */
typedef struct gbits {
	uint64_t w[GRAMMAR_RE_STATES / 64];
} gbits;

static inline void gbits_set(gbits *b, int i) { b->w[i >> 6] |= 1ULL << (i & 63); }
static inline int gbits_has(const gbits *b, int i) { return (int)(b->w[i >> 6] >> (i & 63)) & 1; }
static inline int gbits_empty(const gbits *b)
{
	for (int i = 0; i < GRAMMAR_RE_STATES / 64; i++)
		if (b->w[i])
			return 0;
	return 1;
}

/* A pattern as a Thompson NFA over ASCII bytes plus one symbol standing for
 * every non-ASCII code point (GRE_NONASCII). Sets are kept closed under
 * epsilon moves. */
#define GRE_NONASCII 128
typedef struct gre_state {
	uint64_t cls[2];   /* ASCII bytes this state consumes */
	uint8_t nonascii;  /* consumes any non-ASCII code point */
	uint8_t consumes;  /* 0: an epsilon state */
	int16_t next;      /* after consuming */
	int16_t eps[2];    /* epsilon successors (-1 none) */
} gre_state;

typedef struct gregex {
	int n;
	int final;
	gre_state *st;     /* (n) */
	gbits *closure;    /* (n) epsilon closure of each state */
	gbits start;       /* closure of the start state */
} gregex;

/* Compile the documented pattern subset (grammar_regex.c). Unanchored ends
 * match anything, as JSON Schema's `pattern` searches. */
int gregex_compile(const char *pattern, gregex *re, const char *what, coli_err *err);
void gregex_free(gregex *re);
/* out = the closed successor set of `in` on sym (0..127 or GRE_NONASCII);
 * returns non-zero when out is not empty. */
int gregex_step(const gregex *re, const gbits *in, int sym, gbits *out);

/* Refuse a grammar whose root no finite document satisfies, and cut the
 * paths of any other that lead nowhere (grammar_productive.c). */
int grammar_check_productive(coli_grammar *g, const char *what, coli_err *err);

enum gnode_kind { GN_OBJECT = 1, GN_ARRAY, GN_STRING, GN_NUMBER, GN_INTEGER, GN_LITS, GN_ANYOF };

typedef struct gnode {
	int kind;
	/* GN_OBJECT: declared properties, the schema of other keys (-1: none) */
	int n_props;
	char **names;
	uint32_t *name_len;
	int *prop;
	uint64_t required;
	uint64_t dead;                /* properties whose schema no value satisfies:
	                               * refused as keys (grammar_productive.c) */
	int additional;
	int min_props, max_props;     /* minProperties/maxProperties (max -1:
	                               * unbounded); only with additional -1,
	                               * where the properties seen are counted */
	/* GN_ARRAY: prefixItems, then `items` (-1: no more items) */
	int n_prefix;
	int *prefix;
	int items;
	int min_items, max_items;     /* max -1: unbounded */
	/* GN_STRING: lengths in code points (max -1: unbounded), pattern */
	int min_len, max_len;
	int re;                       /* index in res, -1 none */
	/* GN_INTEGER: inclusive bounds (minimum/maximum, exclusive ones moved
	 * to the next integer); INT64_MIN/INT64_MAX when absent */
	int64_t min_int, max_int;
	/* GN_NUMBER with minimum/maximum/exclusive*: inclusive bounds in units
	 * of 1e-15 (exclusive ones moved one unit in); a bounded number is
	 * plain decimal (no exponent) of at most 15 digits in all, so the
	 * values it can take convert to distinct doubles in the same order
	 * and a decimal comparison is the comparison a validator makes */
	int num_bounded;
	gnum num_lo, num_hi;
	/* GN_LITS: compact JSON texts of the allowed values */
	int n_lits, cap_lits;         /* cap_lits: of both arrays */
	char **lits;
	uint32_t *lit_len;
	/* GN_ANYOF */
	int n_alts, cap_alts;
	int *alts;
} gnode;

struct coli_grammar {
	gnode *nodes;
	int n_nodes, cap;
	gregex *res;
	int n_res, cap_res;
	int root;
	int any;          /* the node for "any JSON value", -1 until needed */
	atomic_int refs;  /* owners (grammar_ref/grammar_free) */
};

/* grammar_ref.c: a new grammar was compiled (grammar_compile_count), and
 * the last reference's destructor (grammar_json_schema.c). */
void grammar_note_compiled(void);
void grammar_destroy(coli_grammar *g);

/* Frames: the matcher's stack entries (immutable once linked). */
enum gframe_kind { GF_DOC = 1, GF_VALUE, GF_OBJ, GF_ARR, GF_STR, GF_NUM, GF_LIT };

struct grammar_frame {
	const grammar_frame *up;
	gbits bits;        /* STR: NFA set; LIT: candidates; OBJ: w[0] key
	                    * candidates, w[1] properties seen */
	uint32_t count;    /* ARR items; STR code points; NUM digits */
	uint16_t node;
	uint16_t pos;      /* LIT byte position; OBJ key bytes / property */
	uint8_t kind, stage, ws, esc;
	uint8_t u8need, u8lo, u8hi, depth;
};

#define SCRATCH_FRAMES (1 << 15)

struct grammar_matcher {
	const coli_grammar *g;
	grammar_frame *committed;  /* (COMMITTED_FRAMES) frames of `cur` */
	grammar_frame *tmp;        /* (COMMITTED_FRAMES) while compacting */
	grammar_frame *scratch;    /* (SCRATCH_FRAMES) trial frames, LIFO */
	size_t n_scratch;
	grammar_state cur;
};

/* The matcher's steps (grammar.c, grammar_number.c, grammar_matcher.c):
 * frames come from the matcher's scratch arena (NULL when it is full or
 * the document too deep: a dead end, never unsound); grammar_emit adds a
 * successor top to `out` unless an equal one is there. */
grammar_frame *grammar_frame_dup(grammar_matcher *m, const grammar_frame *f);
grammar_frame *grammar_frame_new(grammar_matcher *m, int kind, int node, const grammar_frame *up);
void grammar_emit(grammar_state *out, const grammar_frame *top);
/* The successor tops of f on symbol c, added to out. */
void grammar_step(grammar_matcher *m, const grammar_frame *f, int c, grammar_state *out);
/* A number frame: the first byte of a number value, and a step in one. */
void grammar_start_num(grammar_matcher *m, int node, int c, const grammar_frame *up, grammar_state *out);
void grammar_step_num(grammar_matcher *m, const grammar_frame *f, int c, grammar_state *out);

/* The state is one reading inside free text at a character boundary: a
 * string without pattern or maxLength, or the key of an object that takes
 * any key. Any run of ordinary characters (no '"', '\\', control byte)
 * continues it (grammar_mask.c's fast path). */
int grammar_matcher_plain_text(const grammar_matcher *m);

/* Rewrite allOf, anyOf/oneOf beside other keywords, propertyNames and
 * discriminator into the compiled subset (grammar_schema_prep.c); root is
 * the compiler's own copy. 0, or -EINVAL with err naming the place. */
struct json_t;
int grammar_schema_prep(struct json_t *root, const char *what, coli_err *err);
/* grammar_schema_scalar.c: the numeric bounds of schema s on node, and
 * the pattern of a string format (NULL: an annotation, not enforced). */
const char *grammar_format_pattern(const char *format);
/* The path of a sub-schema for messages, printf-style, into sub (its
 * middle elided past 160 bytes so the reason after it stays). */
void grammar_path_sub(char *sub, size_t cap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
int grammar_schema_bounds(coli_grammar *g, struct json_t *s, const char *path, int node, int integer,
			  coli_err *err);

#endif
