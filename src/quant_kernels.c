/* quant_kernels.c - matvec / matmul dispatch and the portable C kernels.
 *
 * Work split: rows are cut into contiguous chunks handed out by the pool;
 * each output element is computed by one thread with one fixed summation
 * order, so the thread count never changes a bit of the result. coli_matvec
 * is coli_matmul with n = 1 through the same row function, which is what
 * makes matmul row k bit-identical to matvec of input k.
 *
 * Activations stay f32 for every weight type (no int8 activation
 * quantization): with f32 activations the int4 kernels cost ~13 vector uops
 * per 64-weight block on AVX-512 (quant_kernels_avx512.c), so two cores already
 * outrun the memory bus; quantizing x would only add error.
 *
 * The code path (AVX-512, AVX2, portable) is chosen once per process, on
 * first use: the best the CPU has, or $COLI_KERNELS_ISA. Tests and benches
 * may force another with coli_kernels_force_isa().
 *
 * INT4 uses w = d*q + m, so a block contributes d * sum(q*x) + m * sum(x);
 * sum(x) per block is computed once per call (here, by the caller) instead
 * of once per row. */
#include "config.h"

#include "quant_kernels.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "coli_log.h"

/* Block sums of x kept on the caller's stack; matmul inputs are processed
 * in as many passes as needed to fit (32 KiB). */
#define XSUM_MAX 8192

/* Code paths, best last. The process's path is decided once (first use)
 * and only tests/benchmarks override it, through the forced setting. */
enum { ISA_GENERIC, ISA_AVX2, ISA_AVX512, ISA_COUNT };
static const char *const isa_names[ISA_COUNT] = { "generic", "avx2", "avx512" };

static pthread_once_t isa_once = PTHREAD_ONCE_INIT;
static int isa_chosen; /* written once under isa_once */
static _Atomic int isa_forced = -1; /* -1: none */

static int isa_parse(const char *name)
{
	for (int i = 0; i < ISA_COUNT; i++)
		if (!strcmp(name, isa_names[i]))
			return i;
	return -1;
}

static int isa_available(int isa)
{
	switch (isa) {
	case ISA_GENERIC: return 1;
	case ISA_AVX2: return coli_kernels_avx2_rows(COLI_Q_INT4) != NULL;
	case ISA_AVX512: return coli_kernels_avx512_rows(COLI_Q_INT4) != NULL;
	default: return 0;
	}
}

static void isa_decide(void)
{
	int best = ISA_GENERIC;
	for (int i = ISA_COUNT - 1; i > ISA_GENERIC; i--)
		if (isa_available(i)) {
			best = i;
			break;
		}
	const char *env = getenv("COLI_KERNELS_ISA");
	if (env && *env && strcmp(env, "auto")) {
		int want = isa_parse(env);
		if (want >= 0 && isa_available(want))
			best = want;
		else
			coli_warn("COLI_KERNELS_ISA=%s: %s; using %s", env,
				  want < 0 ? "unknown code path" : "not supported by this CPU or build",
				  isa_names[best]);
	}
	isa_chosen = best;
}

static int isa_current(void)
{
	int f = atomic_load_explicit(&isa_forced, memory_order_relaxed);
	if (f >= 0)
		return f;
	pthread_once(&isa_once, isa_decide);
	return isa_chosen;
}

int coli_kernels_force_generic(int on)
{
	int prev = atomic_exchange(&isa_forced, on ? ISA_GENERIC : -1);
	return prev == ISA_GENERIC;
}

int coli_kernels_force_isa(const char *name)
{
	if (!name || !strcmp(name, "auto")) {
		atomic_store(&isa_forced, -1);
		return 0;
	}
	int want = isa_parse(name);
	if (want < 0)
		return -EINVAL;
	if (!isa_available(want))
		return -ENOTSUP;
	atomic_store(&isa_forced, want);
	return 0;
}

/* ---- portable kernels ----
 *
 * Eight independent partial sums ("lanes") per dot product, reduced in a
 * fixed order: the compiler may not reassociate a single float sum, so
 * one accumulator would serialize every addition (and could not be
 * vectorized); eight let it use SIMD registers without changing a bit. */

#define LANES 8

static float lanes_sum(const float s[LANES])
{
	return ((s[0] + s[4]) + (s[2] + s[6])) + ((s[1] + s[5]) + (s[3] + s[7]));
}

static float f32_dot(const float *a, const float *x, int cols)
{
	float s[LANES] = { 0 };
	int j = 0;
	for (; j + LANES <= cols; j += LANES)
		for (int l = 0; l < LANES; l++)
			s[l] += a[j + l] * x[j + l];
	float r = lanes_sum(s);
	for (; j < cols; j++)
		r += a[j] * x[j];
	return r;
}

static float q8_dot(const coli_block_q8 *row, int nb, const float *xk)
{
	float acc = 0.0f;
	for (int b = 0; b < nb; b++) {
		const float *xb = xk + b * COLI_QK;
		const int8_t *q = row[b].q;
		float s[LANES] = { 0 };
		for (int j = 0; j < COLI_QK; j += LANES)
			for (int l = 0; l < LANES; l++)
				s[l] += (float)q[j + l] * xb[j + l];
		acc += row[b].d * lanes_sum(s);
	}
	return acc;
}

static float q4_dot(const coli_block_q4 *row, int nb, const float *xk, const float *xs)
{
	float acc = 0.0f, accm = 0.0f;
	for (int b = 0; b < nb; b++) {
		const float *xb = xk + b * COLI_QK;
		const uint8_t *q = row[b].q;
		float s[LANES] = { 0 };
		for (int j = 0; j < COLI_QK / 2; j += LANES)
			for (int l = 0; l < LANES; l++)
				s[l] += (float)(q[j + l] & 0x0f) * xb[j + l];
		for (int j = 0; j < COLI_QK / 2; j += LANES)
			for (int l = 0; l < LANES; l++)
				s[l] += (float)(q[j + l] >> 4) * xb[32 + j + l];
		acc += coli_half_to_float(row[b].d) * lanes_sum(s);
		accm += coli_half_to_float(row[b].m) * xs[b];
	}
	return acc + accm;
}

/* The drivers (quant_kernels_rows.h): no tiles, every (row, input) pair on
 * its own; a row meets all of a pass's inputs while it is in cache. */
#define RT 1
#define PORTABLE_INLINE static inline __attribute__((always_inline))

PORTABLE_INLINE float block_dot(const char *row, int nb, const float *x, const float *xs, const int INT4)
{
	if (INT4)
		return q4_dot((const coli_block_q4 *)row, nb, x, xs);
	return q8_dot((const coli_block_q8 *)row, nb, x);
}

PORTABLE_INLINE int vec_rows(const char *row0, int nb, int left, const float *x, const float *xs, size_t pf,
			     float *y, const int INT4)
{
	(void)left;
	(void)pf;
	*y = block_dot(row0, nb, x, xs, INT4);
	return 1;
}

PORTABLE_INLINE int mm_tile(const char *row0, int nb, int left, const float *xk, size_t cols,
			    const float *xsk, int kn, float *y, size_t ystride, const int INT4)
{
	(void)left;
	for (int k = 0; k < kn; k++)
		y[(size_t)k * ystride] = block_dot(row0, nb, xk + (size_t)k * cols,
						   INT4 ? xsk + (size_t)k * (size_t)nb : NULL, INT4);
	return 1;
}

static inline int input_group(int left)
{
	return left;
}

#define ROWS_ATTR
#define ROWS_SFX generic
#include "quant_kernels_rows.h"

static coli_rows_fn rows_fn(int qtype)
{
	coli_rows_fn f = NULL;
	switch (isa_current()) {
	case ISA_AVX512: f = coli_kernels_avx512_rows(qtype); break;
	case ISA_AVX2: f = coli_kernels_avx2_rows(qtype); break;
	default: break;
	}
	return f ? f : rows_for_generic(qtype);
}

const char *coli_kernels_isa(void)
{
	return isa_names[isa_current()];
}

/* ---- products over the pool (quant_kernels_group.c) ---- */

static void fill_nan(float *y, size_t count)
{
	for (size_t i = 0; i < count; i++)
		y[i] = NAN;
}

static void block_sums(const float *x, int nb, float *xs)
{
	for (int b = 0; b < nb; b++) {
		float s = 0.0f;
		for (int j = 0; j < COLI_QK; j++)
			s += x[b * COLI_QK + j];
		xs[b] = s;
	}
}

/* The row function for w, or NULL (logged) when w is not a matrix the
 * kernels take: an unknown type, columns not in whole blocks, or INT4 rows
 * of more than max_blocks blocks. */
static coli_rows_fn product_fn(const coli_qmat *w, int max_blocks)
{
	coli_rows_fn fn = rows_fn(w->qtype);
	if (fn && w->cols >= 0 && (w->qtype == COLI_Q_F32 || w->cols % COLI_QK == 0) &&
	    (w->qtype != COLI_Q_INT4 || w->cols / COLI_QK <= max_blocks))
		return fn;
	coli_error("matmul: unsupported matrix (type %d, %d x %d)", w->qtype, w->rows, w->cols);
	return NULL;
}

/* A product (or a pass over some of its inputs) waiting in a batch. */
struct seg {
	coli_rows_fn fn;
	const coli_qmat *w;
	const float *x;
	const float *xsum; /* INT4: block sums of x; else NULL */
	float *y;
	int n;
};

/* Segments dispatched together, and their block sums (on the caller's
 * stack: 32 KiB of sums, so inputs are split into passes that fit). */
struct batch {
	int nseg;
	int xs_used;
	struct seg seg[COLI_GROUP_SEGS];
	const coli_qmat *w[COLI_GROUP_SEGS];
	int n[COLI_GROUP_SEGS];
	float xs[XSUM_MAX];
};

static void seg_run(void *ctx, int s, int r0, int r1)
{
	const struct seg *g = &((const struct batch *)ctx)->seg[s];
	g->fn(g->w, g->x, g->n, g->xsum, r0, r1, g->y);
}

static void batch_flush(coli_pool *p, struct batch *b)
{
	coli_rows_dispatch(p, b->nseg, b->w, b->n, seg_run, b);
	b->nseg = 0;
	b->xs_used = 0;
}

/* The block sums of n inputs of w: shared with an earlier segment of the
 * batch that has the same input, else computed; NULL when they do not fit
 * beside the batch's others. */
static const float *batch_xsum(struct batch *b, const coli_qmat *w, const float *x, int n)
{
	for (int s = 0; s < b->nseg; s++) {
		const struct seg *g = &b->seg[s];
		if (g->xsum && g->x == x && g->n == n && g->w->cols == w->cols)
			return g->xsum;
	}
	const size_t len = coli_matmul_xsum_len(w, n);
	if (len > (size_t)(XSUM_MAX - b->xs_used))
		return NULL;
	float *xs = b->xs + b->xs_used;
	coli_matmul_xsum(w, x, n, xs);
	b->xs_used += (int)len;
	return xs;
}

/* n * (cols / 64) <= XSUM_MAX (the caller's passes). */
static void batch_add(coli_pool *p, struct batch *b, coli_rows_fn fn, const coli_qmat *w,
		      const float *x, int n, float *y)
{
	if (b->nseg == COLI_GROUP_SEGS)
		batch_flush(p, b);
	const float *xs = NULL;
	if (w->qtype == COLI_Q_INT4 && !(xs = batch_xsum(b, w, x, n))) {
		batch_flush(p, b);
		xs = batch_xsum(b, w, x, n);
	}
	b->seg[b->nseg] = (struct seg){ fn, w, x, xs, y, n };
	b->w[b->nseg] = w;
	b->n[b->nseg] = n;
	b->nseg++;
}

void coli_matmul_group(coli_pool *p, const coli_mm *g, int count)
{
	struct batch b;
	b.nseg = 0;
	b.xs_used = 0;
	for (int i = 0; i < count; i++) {
		const coli_qmat *w = g[i].w;
		const int n = g[i].n;
		if (n <= 0 || w->rows <= 0)
			continue;
		/* the block sums of one input must fit the batch's */
		coli_rows_fn fn = product_fn(w, XSUM_MAX);
		if (!fn) {
			fill_nan(g[i].y, (size_t)n * (size_t)w->rows);
			continue;
		}
		const int nb = w->cols / COLI_QK;
		const int per_pass = w->qtype == COLI_Q_INT4 && nb > 0 ? XSUM_MAX / nb : n;
		/* rows of Y are strided by w->rows: a pass over inputs k0..
		 * offsets both sides */
		for (int k0 = 0; k0 < n; k0 += per_pass) {
			const int kn = n - k0 < per_pass ? n - k0 : per_pass;
			batch_add(p, &b, fn, w, g[i].x + (size_t)k0 * (size_t)w->cols, kn,
				  g[i].y + (size_t)k0 * (size_t)w->rows);
		}
	}
	batch_flush(p, &b);
}

size_t coli_matmul_xsum_len(const coli_qmat *w, int n)
{
	return w->qtype == COLI_Q_INT4 ? (size_t)n * (size_t)(w->cols / COLI_QK) : 0;
}

void coli_matmul_xsum(const coli_qmat *w, const float *x, int n, float *xsum)
{
	if (w->qtype != COLI_Q_INT4)
		return;
	const int nb = w->cols / COLI_QK;
	for (int k = 0; k < n; k++)
		block_sums(x + (size_t)k * (size_t)w->cols, nb, xsum + (size_t)k * (size_t)nb);
}

void coli_matmul_rows(const coli_qmat *w, const float *x, int n, const float *xsum, int r0, int r1,
		      float *y)
{
	coli_rows_fn fn = product_fn(w, INT_MAX);
	if (!fn) {
		for (int k = 0; k < n; k++)
			fill_nan(y + (size_t)k * (size_t)w->rows + r0, (size_t)(r1 - r0));
		return;
	}
	if (n > 0 && r1 > r0)
		fn(w, x, n, w->qtype == COLI_Q_INT4 ? xsum : NULL, r0, r1, y);
}

void coli_matmul(coli_pool *p, const coli_qmat *w, const float *x, int n, float *y)
{
	const coli_mm g = { w, x, y, n };
	coli_matmul_group(p, &g, 1);
}

void coli_matvec(coli_pool *p, const coli_qmat *w, const float *x, float *y)
{
	coli_matmul(p, w, x, 1, y);
}
