/* grammar_number.c - number frames (see grammar.h): the digits, point and
 * exponent of a JSON number, and the bounds of an integer or a bounded
 * number checked digit by digit, so a prefix is kept only while some
 * number within the bounds can still complete it. */
#include "config.h"

#include "grammar_impl.h"

enum { N_SIGN, N_ZERO, N_INT, N_DOT, N_FRAC, N_E, N_ESIGN, N_EXP };

/* Integer bounds, digit by digit: can a number whose text so far is
 * sign + `d` digits of magnitude `mag` (d == 0: a lone '-'; zero: the text
 * is "0" and takes no more digits) still end within [lo, hi]? */
static int int_reachable(int neg, int64_t mag, int d, int zero, int64_t lo, int64_t hi)
{
	int64_t p10 = 1;
	for (int k = 0; d + k <= 15; k++, p10 *= 10) {
		if (k > 0 && zero)
			break;
		int64_t a, b; /* magnitudes with k more digits */
		if (d == 0) {
			if (k == 0)
				continue;
			a = k == 1 ? 0 : p10 / 10;
			b = p10 - 1;
		} else {
			a = mag * p10;
			b = mag * p10 + p10 - 1;
		}
		int64_t vlo = neg ? -b : a, vhi = neg ? -a : b;
		if (vlo <= hi && vhi >= lo)
			return 1;
	}
	return 0;
}

/* Number bounds (gnode.num_lo/num_hi, units of 1e-15). Is there a
 * multiple of `step` within [a, b] (a a multiple of step) and [lo, hi]? */
static int grid_hit(gnum a, gnum b, gnum step, gnum lo, gnum hi)
{
	gnum l = a > lo ? a : lo, h = b < hi ? b : hi;
	if (l > h)
		return 0;
	return a + (l - a + step - 1) / step * step <= h;
}

static gnum pow10_g(int k)
{
	gnum r = 1;
	while (k-- > 0)
		r *= 10;
	return r;
}

/* Can a bounded number whose text so far is at `stage` (sign; an integer
 * part of d digits worth mag, d 0 after a lone '-'; a fraction of f digits
 * worth frac) still end within [lo, hi]? It has at most GNUM_DIGITS
 * digits in all, so with d integer digits the last fraction digit is
 * worth 10^d units. */
static int num_reachable(int neg, int stage, int64_t mag, int d, int64_t frac, int f, gnum lo, gnum hi)
{
	const gnum S = GNUM_SCALE;
	if (neg) {   /* compare the magnitude with the mirrored bounds */
		gnum t = lo;
		lo = -hi;
		hi = -t;
	}
	switch (stage) {
	case N_SIGN:
		/* a first digit to come: magnitudes of k integer digits, k = 1..15
		 * (those below 10^(k-1) are reached on the finer grid of fewer
		 * digits, so the union is exact) */
		for (int k = 1; k <= GNUM_DIGITS; k++)
			if (grid_hit(0, pow10_g(k) * S - pow10_g(k), pow10_g(k), lo, hi))
				return 1;
		return 0;
	case N_ZERO:
	case N_INT:
		for (int k = 0; d + k <= GNUM_DIGITS && (k == 0 || stage == N_INT); k++) {
			gnum step = pow10_g(d + k), a = (gnum)mag * pow10_g(k) * S;
			if (grid_hit(a, a + pow10_g(k) * S - step, step, lo, hi))
				return 1;
		}
		return 0;
	case N_DOT:
	case N_FRAC: {
		if (d + f > GNUM_DIGITS || (stage == N_DOT && d >= GNUM_DIGITS))
			return 0;
		gnum step = pow10_g(d), unit = pow10_g(GNUM_DIGITS - f);
		gnum a = (gnum)mag * S + (gnum)frac * unit;
		return grid_hit(a, a + unit - step, step, lo, hi);
	}
	default:
		return 0;
	}
}

static int num_bounded(const gnode *n)
{
	return n->kind == GN_NUMBER && n->num_bounded;
}

static int int_bounded(const gnode *n)
{
	return n->kind == GN_INTEGER && (n->min_int != INT64_MIN || n->max_int != INT64_MAX);
}

/* A number of `node` beginning with byte c, pushed on `up`. */
void grammar_start_num(grammar_matcher *m, int node, int c, const grammar_frame *up, grammar_state *out)
{
	const gnode *n = &m->g->nodes[node];
	grammar_frame *f;
	if (c != '-' && (c < '0' || c > '9'))
		return;
	if (int_bounded(n) && !int_reachable(c == '-', c == '-' ? 0 : c - '0', c != '-', c == '0', n->min_int,
					     n->max_int))
		return;
	if (num_bounded(n) && !num_reachable(c == '-', c == '-' ? N_SIGN : c == '0' ? N_ZERO : N_INT,
					     c == '-' ? 0 : c - '0', c != '-', 0, 0, n->num_lo, n->num_hi))
		return;
	if ((f = grammar_frame_new(m, GF_NUM, node, up))) {
		f->stage = c == '-' ? N_SIGN : c == '0' ? N_ZERO : N_INT;
		f->count = c >= '1' && c <= '9';
		f->u8lo = c == '-';               /* negative */
		f->bits.w[0] = c >= '1' && c <= '9' ? (uint64_t)(c - '0') : 0; /* magnitude */
		f->bits.w[1] = 0;                 /* bounded number: fraction */
		f->bits.w[2] = c != '-';          /* bounded number: integer digits */
		grammar_emit(out, f);
	}
}

void grammar_step_num(grammar_matcher *m, const grammar_frame *f, int c, grammar_state *out)
{
	const gnode *n = &m->g->nodes[f->node];
	const int isint = n->kind == GN_INTEGER, bounded = int_bounded(n);
	const int digit = c >= '0' && c <= '9';
	int stage = -1, count = 0;
	switch (f->stage) {
	case N_SIGN:
		if (digit)
			stage = c == '0' ? N_ZERO : N_INT, count = c != '0';
		break;
	case N_ZERO:
	case N_INT:
	case N_FRAC:
		if (digit && f->stage != N_ZERO && f->count < 15)
			stage = f->stage, count = (int)f->count + 1;
		else if (c == '.' && !isint && f->stage != N_FRAC)
			stage = N_DOT;
		else if ((c == 'e' || c == 'E') && !isint)
			stage = N_E;
		break;
	case N_DOT:
		if (digit)
			stage = N_FRAC, count = 1;
		break;
	case N_E:
		if (c == '+' || c == '-')
			stage = N_ESIGN;
		else if (digit)
			stage = N_EXP, count = 1;
		break;
	case N_ESIGN:
		if (digit)
			stage = N_EXP, count = 1;
		break;
	case N_EXP:
		if (digit && f->count < 3)
			stage = N_EXP, count = (int)f->count + 1;
		break;
	default:
		break;
	}
	int64_t mag = (int64_t)f->bits.w[0];
	if (stage >= 0 && bounded) {
		/* integers only reach N_ZERO / N_INT */
		mag = stage == N_ZERO ? 0 : mag * 10 + (c - '0');
		if (!int_reachable(f->u8lo, mag, count ? count : 1, stage == N_ZERO, n->min_int, n->max_int))
			return;
	}
	const int nb = num_bounded(n);
	int64_t frac = (int64_t)f->bits.w[1];
	int d = (int)f->bits.w[2];
	if (stage >= 0 && nb) {
		/* plain decimal: no exponent; the value so far must stay able
		 * to end within the bounds */
		if (stage == N_E)
			return;
		if (stage == N_ZERO)
			mag = 0, d = 1;
		else if (stage == N_INT)
			mag = mag * 10 + (c - '0'), d = count;
		else if (stage == N_FRAC)
			frac = frac * 10 + (c - '0');
		if (!num_reachable(f->u8lo, stage, mag, d, frac, stage == N_FRAC ? count : 0, n->num_lo, n->num_hi))
			return;
	}
	if (stage >= 0) {
		grammar_frame *k = grammar_frame_dup(m, f);
		if (k) {
			k->stage = (uint8_t)stage;
			k->count = (uint32_t)count;
			k->bits.w[0] = (uint64_t)mag;
			k->bits.w[1] = (uint64_t)frac;
			k->bits.w[2] = (uint64_t)d;
			grammar_emit(out, k);
		}
		return;
	}
	if (bounded && (f->stage == N_ZERO || f->stage == N_INT)) {
		int64_t v = f->u8lo ? -mag : mag;
		if (v < n->min_int || v > n->max_int)
			return;
	}
	if (nb && (f->stage == N_ZERO || f->stage == N_INT || f->stage == N_FRAC)) {
		int fd = f->stage == N_FRAC ? (int)f->count : 0;
		gnum v = (gnum)mag * GNUM_SCALE + (gnum)frac * pow10_g(GNUM_DIGITS - fd);
		if (f->u8lo)
			v = -v;
		if (v < n->num_lo || v > n->num_hi)
			return;
	}
	/* the number ends here: the byte belongs to the parent */
	if (f->stage == N_ZERO || f->stage == N_INT || f->stage == N_FRAC || f->stage == N_EXP)
		grammar_step(m, f->up, c, out);
}

