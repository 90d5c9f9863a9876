/* grammar.c - the byte-level matcher (see grammar.h).
 *
 * Each frame kind is a small state machine; `step` maps a stack top and a
 * symbol to its successor tops. Frames never change once linked: a
 * successor copies the top frame (scratch arena) and shares the rest, and
 * a container's frame is already in its "after the value" stage when a
 * child value is pushed, so finishing a value is just returning the parent.
 * Numbers and enum literals have no closing byte: they end when a byte
 * cannot continue them, and that byte is fed to the parent. */
#include "config.h"

#include <string.h>

#include "grammar_impl.h"
#include "util_unicode.h"

enum { O_OPEN, O_KEY, O_COLON, O_VALUE, O_AFTER, O_NEXT };
enum { A_OPEN, A_AFTER, A_NEXT };
#define KEY_ADDITIONAL 64

grammar_frame *grammar_frame_dup(grammar_matcher *m, const grammar_frame *f)
{
	if (m->n_scratch >= SCRATCH_FRAMES)
		return NULL; /* treated as a dead end: never unsound */
	grammar_frame *n = &m->scratch[m->n_scratch++];
	*n = *f;
	return n;
}

grammar_frame *grammar_frame_new(grammar_matcher *m, int kind, int node, const grammar_frame *up)
{
	if (m->n_scratch >= SCRATCH_FRAMES || (up && up->depth >= GRAMMAR_MAX_DEPTH))
		return NULL;
	grammar_frame *n = &m->scratch[m->n_scratch++];
	memset(n, 0, sizeof *n);
	n->kind = (uint8_t)kind;
	n->node = (uint16_t)node;
	n->up = up;
	n->depth = up ? (uint8_t)(up->depth + 1) : 0;
	return n;
}

static int frame_same(const grammar_frame *a, const grammar_frame *b)
{
	for (; a && b; a = a->up, b = b->up) {
		if (a == b)
			return 1;
		if (memcmp(&a->bits, &b->bits, sizeof a->bits) || a->count != b->count || a->node != b->node ||
		    a->pos != b->pos || a->kind != b->kind || a->stage != b->stage || a->ws != b->ws ||
		    a->esc != b->esc || a->u8need != b->u8need || a->u8lo != b->u8lo || a->u8hi != b->u8hi)
			return 0;
	}
	return a == b;
}

void grammar_emit(grammar_state *out, const grammar_frame *top)
{
	if (!top)
		return;
	for (int i = 0; i < out->n; i++)
		if (frame_same(out->top[i], top))
			return;
	if (out->n < GRAMMAR_MAX_STACKS)
		out->top[out->n++] = top;
}

static int is_ws(int c)
{
	return c == ' ' || c == '\n' || c == '\t' || c == '\r';
}

/* Whitespace in a gap: bounded per gap. */
static void step_ws(grammar_matcher *m, const grammar_frame *f, grammar_state *out)
{
	if (f->ws >= GRAMMAR_MAX_WS)
		return;
	grammar_frame *n = grammar_frame_dup(m, f);
	if (n)
		n->ws++;
	grammar_emit(out, n);
}

/* UTF-8 lead byte (not ASCII: the caller handles it): continuation count
 * and the range of the next byte (util_unicode.h's table). */
static int utf8_lead(int c, grammar_frame *n)
{
	uint8_t lo, hi;
	const int len = unicode_utf8_lead((uint8_t)c, &lo, &hi);
	if (len < 2)
		return 0;
	n->u8need = (uint8_t)(len - 1);
	n->u8lo = lo;
	n->u8hi = hi;
	return 1;
}

static int utf8_cont(int c, grammar_frame *n)
{
	if (c < n->u8lo || c > n->u8hi)
		return 0;
	n->u8need--;
	n->u8lo = 0x80;
	n->u8hi = 0xBF;
	return 1;
}

/* A value of `node` beginning with byte c, pushed on `up`. */
static void start(grammar_matcher *m, int node, int c, const grammar_frame *up, grammar_state *out)
{
	const gnode *n = &m->g->nodes[node];
	grammar_frame *f;
	if (!up || c == GRAMMAR_SYM_END)
		return;
	switch (n->kind) {
	case GN_ANYOF:
		for (int i = 0; i < n->n_alts; i++)
			start(m, n->alts[i], c, up, out);
		return;
	case GN_OBJECT:
		if (c == '{' && (f = grammar_frame_new(m, GF_OBJ, node, up)))
			grammar_emit(out, f);
		return;
	case GN_ARRAY:
		if (c == '[' && (f = grammar_frame_new(m, GF_ARR, node, up)))
			grammar_emit(out, f);
		return;
	case GN_STRING:
		if (c == '"' && (f = grammar_frame_new(m, GF_STR, node, up))) {
			if (n->re >= 0)
				f->bits = m->g->res[n->re].start;
			grammar_emit(out, f);
		}
		return;
	case GN_NUMBER:
	case GN_INTEGER:
		grammar_start_num(m, node, c, up, out);
		return;
	case GN_LITS: {
		gbits cand;
		memset(&cand, 0, sizeof cand);
		int any = 0;
		for (int i = 0; i < n->n_lits; i++)
			if ((unsigned char)n->lits[i][0] == c) {
				gbits_set(&cand, i);
				any = 1;
			}
		if (any && (f = grammar_frame_new(m, GF_LIT, node, up))) {
			f->bits = cand;
			f->pos = 1;
			grammar_emit(out, f);
		}
		return;
	}
	default:
		return;
	}
}

static uint64_t props_all(const gnode *n)
{
	return n->n_props >= 64 ? ~0ULL : (1ULL << n->n_props) - 1;
}

static void key_start(grammar_matcher *m, const grammar_frame *f, const gnode *n, grammar_state *out)
{
	uint64_t cand = props_all(n);
	if (n->additional < 0)
		cand &= ~(f->bits.w[1] | n->dead);
	if (n->additional < 0 && !cand)
		return;
	grammar_frame *k = grammar_frame_dup(m, f);
	if (!k)
		return;
	k->stage = O_KEY;
	k->ws = 0;
	k->pos = 0;
	k->bits.w[0] = cand;
	grammar_emit(out, k);
}

static void step_key(grammar_matcher *m, const grammar_frame *f, const gnode *n, int c, grammar_state *out)
{
	uint64_t cand = f->bits.w[0], seen = f->bits.w[1];
	grammar_frame *k;
	if (c == '"') {
		if (f->u8need)
			return;
		uint64_t hit = 0;
		for (uint64_t b = cand; b; b &= b - 1) {
			int i = __builtin_ctzll(b);
			if (n->name_len[i] == f->pos)
				hit |= 1ULL << i;
		}
		int which;
		if (hit)
			which = ((seen | n->dead) & hit) ? -1 : __builtin_ctzll(hit);
		else
			which = n->additional >= 0 ? KEY_ADDITIONAL : -1;
		if (which < 0 || !(k = grammar_frame_dup(m, f)))
			return;
		k->stage = O_COLON;
		k->count = (uint32_t)which;
		grammar_emit(out, k);
		return;
	}
	if (c == '\\' || c < 0x20 || c == GRAMMAR_SYM_END)
		return;
	uint64_t next = 0;
	for (uint64_t b = cand; b; b &= b - 1) {
		int i = __builtin_ctzll(b);
		if (n->name_len[i] > f->pos && (unsigned char)n->names[i][f->pos] == c)
			next |= 1ULL << i;
	}
	if (!next && n->additional < 0)
		return;
	if (!(k = grammar_frame_dup(m, f)))
		return;
	if (k->u8need ? !utf8_cont(c, k) : c >= 0x80 && !utf8_lead(c, k))
		return;
	k->bits.w[0] = next;
	if (k->pos < UINT16_MAX)
		k->pos++;
	grammar_emit(out, k);
}

static void step_obj(grammar_matcher *m, const grammar_frame *f, int c, grammar_state *out)
{
	const gnode *n = &m->g->nodes[f->node];
	if (f->stage == O_KEY) {
		step_key(m, f, n, c, out);
		return;
	}
	if (is_ws(c)) {
		step_ws(m, f, out);
		return;
	}
	uint64_t seen = f->bits.w[1];
	grammar_frame *k;
	switch (f->stage) {
	case O_OPEN:
	case O_AFTER:
		if (c == '}' && !(n->required & ~seen) && __builtin_popcountll(seen) >= n->min_props)
			grammar_emit(out, f->up);
		else if (c == '"' && f->stage == O_OPEN && n->max_props != 0)
			key_start(m, f, n, out);
		else if (c == ',' && f->stage == O_AFTER && (n->additional >= 0 || (props_all(n) & ~(seen | n->dead))) &&
			 (n->max_props < 0 || __builtin_popcountll(seen) < n->max_props) &&
			 (k = grammar_frame_dup(m, f))) {
			k->stage = O_NEXT;
			k->ws = 0;
			grammar_emit(out, k);
		}
		return;
	case O_NEXT:
		if (c == '"')
			key_start(m, f, n, out);
		return;
	case O_COLON:
		if (c == ':' && (k = grammar_frame_dup(m, f))) {
			k->stage = O_VALUE;
			k->ws = 0;
			grammar_emit(out, k);
		}
		return;
	case O_VALUE:
		if (c != GRAMMAR_SYM_END && (k = grammar_frame_dup(m, f))) {
			int which = (int)f->count;
			k->stage = O_AFTER;
			k->ws = 0;
			if (which < KEY_ADDITIONAL)
				k->bits.w[1] |= 1ULL << which;
			start(m, which < KEY_ADDITIONAL ? n->prop[which] : n->additional, c, k, out);
		}
		return;
	default:
		return;
	}
}

static int item_node(const gnode *n, uint32_t i)
{
	return i < (uint32_t)n->n_prefix ? n->prefix[i] : n->items;
}

static void step_arr(grammar_matcher *m, const grammar_frame *f, int c, grammar_state *out)
{
	const gnode *n = &m->g->nodes[f->node];
	if (is_ws(c)) {
		step_ws(m, f, out);
		return;
	}
	grammar_frame *k;
	int room = n->max_items < 0 || f->count < (uint32_t)n->max_items;
	if (f->stage != A_NEXT && c == ']') {
		if (f->count >= (uint32_t)n->min_items)
			grammar_emit(out, f->up);
		return;
	}
	if (f->stage == A_AFTER) {
		if (c == ',' && room && item_node(n, f->count) >= 0 && (k = grammar_frame_dup(m, f))) {
			k->stage = A_NEXT;
			k->ws = 0;
			grammar_emit(out, k);
		}
		return;
	}
	/* A_OPEN or A_NEXT: a value starts */
	int it = item_node(n, f->count);
	if (!room || it < 0 || c == GRAMMAR_SYM_END || !(k = grammar_frame_dup(m, f)))
		return;
	k->stage = A_AFTER;
	k->ws = 0;
	k->count++;
	start(m, it, c, k, out);
}

static int is_hex(int c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

static void step_str(grammar_matcher *m, const grammar_frame *f, int c, grammar_state *out)
{
	const gnode *n = &m->g->nodes[f->node];
	const gregex *re = n->re >= 0 ? &m->g->res[n->re] : NULL;
	int room = n->max_len < 0 || f->count < (uint32_t)n->max_len;
	grammar_frame *k;
	if (c == GRAMMAR_SYM_END)
		return;
	if (f->esc == 1) {
		if (!strchr("\"\\/bfnrtu", c) || !c || !(k = grammar_frame_dup(m, f)))
			return;
		k->esc = c == 'u' ? 2 : 0;
		k->count += c != 'u';
		grammar_emit(out, k);
		return;
	}
	if (f->esc >= 2) {
		/* \uXXXX, never a surrogate: each escape is one code point */
		if (!is_hex(c) || (f->esc == 3 && f->u8hi && c > '7') || !(k = grammar_frame_dup(m, f)))
			return;
		if (f->esc == 2)
			k->u8hi = c == 'd' || c == 'D';
		k->esc = f->esc == 5 ? 0 : f->esc + 1;
		if (!k->esc) {
			k->count++;
			k->u8hi = 0;
		}
		grammar_emit(out, k);
		return;
	}
	if (f->u8need) {
		if ((k = grammar_frame_dup(m, f)) && utf8_cont(c, k))
			grammar_emit(out, k);
		return;
	}
	if (c == '"') {
		if (f->count >= (uint32_t)n->min_len && (!re || gbits_has(&f->bits, re->final)))
			grammar_emit(out, f->up);
		return;
	}
	if (c < 0x20 || !room)
		return;
	if (c == '\\') {
		/* escapes only where no pattern reads the text */
		if (!re && (k = grammar_frame_dup(m, f))) {
			k->esc = 1;
			grammar_emit(out, k);
		}
		return;
	}
	gbits next;
	if (re && !gregex_step(re, &f->bits, c < 0x80 ? c : GRE_NONASCII, &next))
		return;
	if (!(k = grammar_frame_dup(m, f)))
		return;
	if (c >= 0x80 && !utf8_lead(c, k))
		return;
	if (re)
		k->bits = next;
	k->count++;
	grammar_emit(out, k);
}

static void step_lit(grammar_matcher *m, const grammar_frame *f, int c, grammar_state *out)
{
	const gnode *n = &m->g->nodes[f->node];
	gbits next;
	memset(&next, 0, sizeof next);
	int any = 0, complete = 0;
	for (int i = 0; i < n->n_lits; i++) {
		if (!gbits_has(&f->bits, i))
			continue;
		if (n->lit_len[i] == f->pos)
			complete = 1;
		else if (c < 256 && (unsigned char)n->lits[i][f->pos] == c) {
			gbits_set(&next, i);
			any = 1;
		}
	}
	grammar_frame *k;
	if (any && (k = grammar_frame_dup(m, f))) {
		k->bits = next;
		k->pos++;
		grammar_emit(out, k);
	}
	if (complete)
		grammar_step(m, f->up, c, out);
}

void grammar_step(grammar_matcher *m, const grammar_frame *f, int c, grammar_state *out)
{
	switch (f->kind) {
	case GF_DOC:
		if (f->stage == 0) {
			grammar_frame *k = grammar_frame_dup(m, f);
			if (k) {
				k->stage = 1;
				start(m, m->g->root, c, k, out);
			}
		} else if (c == GRAMMAR_SYM_END) {
			grammar_emit(out, f);
		}
		return;
	case GF_OBJ: step_obj(m, f, c, out); return;
	case GF_ARR: step_arr(m, f, c, out); return;
	case GF_STR: step_str(m, f, c, out); return;
	case GF_NUM: grammar_step_num(m, f, c, out); return;
	case GF_LIT: step_lit(m, f, c, out); return;
	default: return;
	}
}

int grammar_advance(grammar_matcher *m, const grammar_state *in, int c, grammar_state *out)
{
	out->n = 0;
	for (int i = 0; i < in->n; i++)
		grammar_step(m, in->top[i], c, out);
	return out->n;
}

int grammar_matcher_plain_text(const grammar_matcher *m)
{
	if (m->cur.n != 1)
		return 0;
	const grammar_frame *f = m->cur.top[0];
	const gnode *n = &m->g->nodes[f->node];
	if (f->u8need || f->esc)
		return 0;
	if (f->kind == GF_STR)
		return n->re < 0 && n->max_len < 0;
	return f->kind == GF_OBJ && f->stage == O_KEY && n->additional >= 0;
}

