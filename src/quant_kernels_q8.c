/* quant_kernels_q8.c - int8-activation matmul: the scratch, the quantizer, the
 * portable row kernels and the dispatch over the pool (quant_kernels_q8.h).
 *
 * The portable kernels below are the definition of the arithmetic: the
 * AMX, AVX-512 VNNI and AVX2 files compute the same exact integer block sums
 * and do the same float operations in the same order (one fma chain per
 * output, a vector lane per row), so every path gives the same bits.
 * fmaf() is a library
 * call when the compiler may not assume an FMA unit; that makes this path
 * slow but exact, and it is only the fallback.
 *
 * The work split is quant_kernels_group.c's (contiguous row chunks of all the
 * products of a group, in multiples of 16 rows): a row's result never
 * depends on it. */
#include "config.h"

#include "quant_kernels_q8.h"

#include <errno.h>
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "coli_log.h"

int coli_q8act_init(coli_q8act *a, int n_max, int cols_max, coli_err *err)
{
	memset(a, 0, sizeof *a);
	if (n_max < 1 || cols_max < 1 || cols_max > (1 << 28) / COLI_QK * COLI_QK)
		return coli_err_set(err, -EINVAL, "q8 activations: bad scratch size %d x %d", n_max,
				    cols_max);
	int cols = (cols_max + COLI_QK - 1) / COLI_QK * COLI_QK;
	size_t nb = (size_t)n_max * (size_t)(cols / COLI_QK);
	size_t qbytes = (size_t)n_max * (size_t)cols; /* a multiple of 64 */
	a->q = aligned_alloc(64, qbytes);
	a->d = malloc(nb * sizeof *a->d);
	a->sx = malloc(nb * sizeof *a->sx);
	a->qs = malloc(nb * sizeof *a->qs);
	if (!a->q || !a->d || !a->sx || !a->qs) {
		coli_q8act_free(a);
		return coli_err_set(err, -ENOMEM, "q8 activations: out of memory for %d x %d", n_max,
				    cols);
	}
	a->n_max = n_max;
	a->cols_max = cols;
	return 0;
}

size_t coli_q8act_bytes(const coli_q8act *a)
{
	size_t nb = (size_t)a->n_max * (size_t)(a->cols_max / COLI_QK);
	return (size_t)a->n_max * (size_t)a->cols_max + nb * (sizeof *a->d + sizeof *a->sx + sizeof *a->qs);
}

void coli_q8act_free(coli_q8act *a)
{
	if (!a)
		return;
	free(a->q);
	free(a->d);
	free(a->sx);
	free(a->qs);
	memset(a, 0, sizeof *a);
}

/* One block of 64: see quant_kernels_q8.h for the rule. */
static void quantize_block(const float *x, int8_t *q, float *d, float *sx, int32_t *qs)
{
	float amax = 0.0f;
	for (int j = 0; j < COLI_QK; j++) {
		float v = fabsf(x[j]);
		amax = v > amax ? v : amax;
	}
	/* NaN compares false above; catch it (and inf) here */
	int finite = 1;
	for (int j = 0; j < COLI_QK; j++)
		finite &= isfinite(x[j]) != 0;
	/* below 2^-100 the block counts as zero: 127 / amax could overflow */
	if (!finite || amax < 0x1p-100f) {
		memset(q, 0, COLI_QK);
		*d = finite ? 0.0f : NAN;
		*sx = *d;
		*qs = 0;
		return;
	}
	float id = 127.0f / amax;
	int sum = 0;
	for (int j = 0; j < COLI_QK; j++) {
		float v = nearbyintf(x[j] * id);
		v = v > 127.0f ? 127.0f : v < -127.0f ? -127.0f : v;
		q[j] = (int8_t)v;
		sum += q[j];
	}
	*d = amax / 127.0f;
	*sx = *d * (float)sum;
	*qs = sum;
}

static void quant_generic(const float *x, int nb, int8_t *q, float *d, float *sx, int32_t *qs)
{
	for (int b = 0; b < nb; b++)
		quantize_block(x + (size_t)b * COLI_QK, q + (size_t)b * COLI_QK, d + b, sx + b, qs + b);
}

enum { P_GENERIC, P_AVX2, P_AVXVNNI, P_AVX512VNNI, P_AMX, P_COUNT };
static int path_current(void);

static coli_q8_quant_fn quant_fn(void)
{
	coli_q8_quant_fn f = NULL;
	switch (path_current()) {
	case P_AMX: /* fall through: the same AVX-512 quantizer */
	case P_AVX512VNNI: f = coli_kernels_q8_avx512_quant(); break;
	case P_AVXVNNI: /* fall through: the same 256-bit quantizer */
	case P_AVX2: f = coli_kernels_q8_avx2_quant(); break;
	default: break;
	}
	return f ? f : quant_generic;
}

int coli_q8act_quantize(coli_q8act *a, const float *x, int n, int cols)
{
	if (n < 1 || n > a->n_max || cols < COLI_QK || cols % COLI_QK || cols > a->cols_max)
		return -EINVAL;
	int nb = cols / COLI_QK;
	coli_q8_quant_fn f = quant_fn();
	for (int k = 0; k < n; k++) {
		size_t i = (size_t)k * (size_t)nb;
		f(x + (size_t)k * (size_t)cols, nb, a->q + i * COLI_QK, a->d + i, a->sx + i,
		  a->qs + i);
	}
	a->n = n;
	a->cols = cols;
	return 0;
}

/* ---- portable kernels (the definition of the arithmetic) ---- */

/* Output (row, input k) for int4 weights. */
static float q4_pair(const coli_block_q4 *row, int nb, const coli_q8act *a, int k)
{
	const size_t kb = (size_t)k * (size_t)nb;
	float acc = 0.0f, accm = 0.0f;
	for (int b = 0; b < nb; b++) {
		const int8_t *qx = a->q + (kb + (size_t)b) * COLI_QK;
		const uint8_t *q = row[b].q;
		int32_t sum = 0;
		for (int e = 0; e < COLI_QK / 2; e++)
			sum += (q[e] & 0x0f) * qx[e] + (q[e] >> 4) * qx[e + COLI_QK / 2];
		float s = coli_half_to_float(row[b].d) * a->d[kb + (size_t)b];
		acc = fmaf((float)sum, s, acc);
		accm = fmaf(coli_half_to_float(row[b].m), a->sx[kb + (size_t)b], accm);
	}
	return acc + accm;
}

/* Output (row, input k) for int8 weights. */
static float q8_pair(const coli_block_q8 *row, int nb, const coli_q8act *a, int k)
{
	const size_t kb = (size_t)k * (size_t)nb;
	float acc = 0.0f;
	for (int b = 0; b < nb; b++) {
		const int8_t *qx = a->q + (kb + (size_t)b) * COLI_QK;
		const int8_t *q = row[b].q;
		int32_t sum = 0;
		for (int e = 0; e < COLI_QK; e++)
			sum += q[e] * qx[e];
		acc = fmaf((float)sum, row[b].d * a->d[kb + (size_t)b], acc);
	}
	return acc;
}

/* Every (row, input) pair on its own, rows outer; INT4 a constant. */
static inline __attribute__((always_inline)) void rows_pairs(const coli_qmat *w, const coli_q8act *a,
							     int n, int r0, int r1, float *y,
							     const int INT4)
{
	const int nb = w->cols / COLI_QK;
	const size_t rows = (size_t)w->rows;
	for (int r = r0; r < r1; r++)
		for (int k = 0; k < n; k++)
			y[(size_t)k * rows + (size_t)r] =
				INT4 ? q4_pair((const coli_block_q4 *)w->data + (size_t)r * (size_t)nb, nb, a, k)
				     : q8_pair((const coli_block_q8 *)w->data + (size_t)r * (size_t)nb, nb, a, k);
}

static void rows_q4_generic(const coli_qmat *w, const coli_q8act *a, int n, int r0, int r1,
			    float *y)
{
	rows_pairs(w, a, n, r0, r1, y, 1);
}

static void rows_q8_generic(const coli_qmat *w, const coli_q8act *a, int n, int r0, int r1,
			    float *y)
{
	rows_pairs(w, a, n, r0, r1, y, 0);
}

/* ---- path choice: follows quant_kernels.c's unless a test forces one ---- */

static const char *const path_names[P_COUNT] = { "generic", "avx2", "avxvnni", "avx512vnni",
						   "amx" };
static _Atomic int path_forced = -1; /* -1: follow coli_kernels_isa() */

static coli_q8_rows_fn path_rows(int path, int qtype)
{
	switch (path) {
	case P_AMX: return coli_kernels_q8_amx_rows(qtype);
	case P_AVX512VNNI: return coli_kernels_q8_avx512_rows(qtype);
	case P_AVXVNNI: return coli_kernels_q8_avxvnni_rows(qtype);
	case P_AVX2: return coli_kernels_q8_avx2_rows(qtype);
	default:
		return coli_q8_rows_pick(1, qtype, rows_q8_generic, rows_q4_generic);
	}
}

/* The best path at or below what coli_kernels_isa() allows. */
static int path_current(void)
{
	int f = atomic_load_explicit(&path_forced, memory_order_relaxed);
	if (f >= 0)
		return f;
	const char *isa = coli_kernels_isa();
	int top = !strcmp(isa, "avx512") ? P_AMX : !strcmp(isa, "avx2") ? P_AVXVNNI : P_GENERIC;
	for (int p = top; p > P_GENERIC; p--)
		if (path_rows(p, COLI_Q_INT4))
			return p;
	return P_GENERIC;
}

int coli_kernels_q8_force_path(const char *name)
{
	if (!name || !strcmp(name, "auto")) {
		atomic_store(&path_forced, -1);
		return 0;
	}
	for (int p = 0; p < P_COUNT; p++)
		if (!strcmp(name, path_names[p])) {
			if (!path_rows(p, COLI_Q_INT4))
				return -ENOTSUP;
			atomic_store(&path_forced, p);
			return 0;
		}
	return -EINVAL;
}

const char *coli_kernels_q8_isa(void)
{
	return path_names[path_current()];
}

/* ---- products over the pool (quant_kernels_group.c) ---- */

/* A product (or a pass over some of its inputs) waiting in a batch; its
 * quantized inputs are a view into the caller's scratch. */
struct q8seg {
	coli_q8_rows_fn fn;
	const coli_qmat *w;
	const float *x;
	float *y;
	int n;
	coli_q8act a;
};

struct q8batch {
	int nseg;
	size_t used;        /* bytes of the scratch's q taken by the views */
	coli_q8act *arena;
	struct q8seg seg[COLI_GROUP_SEGS];
	const coli_qmat *w[COLI_GROUP_SEGS];
	int n[COLI_GROUP_SEGS];
};

static void q8seg_run(void *ctx, int s, int r0, int r1)
{
	const struct q8seg *g = &((const struct q8batch *)ctx)->seg[s];
	g->fn(g->w, &g->a, g->n, r0, r1, g->y);
}

static void q8batch_flush(coli_pool *p, struct q8batch *b)
{
	coli_rows_dispatch(p, b->nseg, b->w, b->n, q8seg_run, b);
	b->nseg = 0;
	b->used = 0;
}

/* The quantized copy of n inputs of cols: shared with an earlier segment
 * with the same input, else quantized (in this thread) into free scratch
 * space; 0 on success, -1 when it does not fit beside the others. The rows
 * of a view are packed with stride cols, as the row kernels read them. */
static int q8batch_input(struct q8batch *b, const float *x, int n, int cols, coli_q8act *view)
{
	for (int s = 0; s < b->nseg; s++) {
		const struct q8seg *g = &b->seg[s];
		if (g->x == x && g->n == n && g->w->cols == cols) {
			*view = g->a;
			return 0;
		}
	}
	const size_t need = (size_t)n * (size_t)cols;
	const size_t cap = (size_t)b->arena->n_max * (size_t)b->arena->cols_max;
	if (need > cap - b->used)
		return -1;
	const size_t blk = b->used / COLI_QK;
	*view = (coli_q8act){ .n_max = n, .cols_max = cols, .q = b->arena->q + b->used,
			      .d = b->arena->d + blk, .sx = b->arena->sx + blk,
			      .qs = b->arena->qs + blk };
	coli_q8act_quantize(view, x, n, cols);
	b->used += need;
	return 0;
}

/* n * cols <= the scratch's n_max * cols_max (the caller's passes). */
static void q8batch_add(coli_pool *p, struct q8batch *b, coli_q8_rows_fn fn, const coli_qmat *w,
			const float *x, int n, float *y)
{
	if (b->nseg == COLI_GROUP_SEGS)
		q8batch_flush(p, b);
	struct q8seg *g = &b->seg[b->nseg];
	if (q8batch_input(b, x, n, w->cols, &g->a)) {
		q8batch_flush(p, b);
		g = &b->seg[0];
		q8batch_input(b, x, n, w->cols, &g->a);
	}
	g->fn = fn;
	g->w = w;
	g->x = x;
	g->y = y;
	g->n = n;
	b->w[b->nseg] = w;
	b->n[b->nseg] = n;
	b->nseg++;
}

static void fill_nan(float *y, size_t count)
{
	for (size_t i = 0; i < count; i++)
		y[i] = NAN;
}

void coli_matmul_q8_group(coli_pool *p, const coli_mm *g, int count, coli_q8act *scratch)
{
	struct q8batch b;
	b.nseg = 0;
	b.used = 0;
	b.arena = scratch;
	const int path = path_current();
	for (int i = 0; i < count; i++) {
		const coli_qmat *w = g[i].w;
		const int n = g[i].n;
		if (n <= 0 || w->rows <= 0)
			continue;
		if (w->qtype == COLI_Q_F32) {
			/* exact as it is: the f32 kernels */
			coli_matmul(p, w, g[i].x, n, g[i].y);
			continue;
		}
		coli_q8_rows_fn fn = path_rows(path, w->qtype);
		if (!fn || !scratch || w->cols < COLI_QK || w->cols % COLI_QK ||
		    w->cols > scratch->cols_max || scratch->n_max < 1) {
			coli_error("matmul q8: unsupported call (type %d, %d x %d, scratch %d x %d)",
				   w->qtype, w->rows, w->cols, scratch ? scratch->n_max : 0,
				   scratch ? scratch->cols_max : 0);
			fill_nan(g[i].y, (size_t)n * (size_t)w->rows);
			continue;
		}
		/* inputs per pass: as many rows of this width as the scratch
		 * holds (at least its n_max) */
		const size_t fit = (size_t)scratch->n_max * (size_t)scratch->cols_max / (size_t)w->cols;
		const int per_pass = fit < (size_t)n ? (int)fit : n;
		for (int k0 = 0; k0 < n; k0 += per_pass) {
			const int kn = n - k0 < per_pass ? n - k0 : per_pass;
			q8batch_add(p, &b, fn, w, g[i].x + (size_t)k0 * (size_t)w->cols, kn,
				    g[i].y + (size_t)k0 * (size_t)w->rows);
		}
	}
	q8batch_flush(p, &b);
}

void coli_matmul_q8_rows(const coli_qmat *w, const coli_q8act *a, int r0, int r1, float *y)
{
	coli_q8_rows_fn fn = w->qtype == COLI_Q_F32 ? NULL : path_rows(path_current(), w->qtype);
	if (!fn || !a || a->cols != w->cols || a->n < 1) {
		coli_error("matmul q8: unsupported rows call (type %d, %d x %d, input %d x %d)", w->qtype,
			   w->rows, w->cols, a ? a->n : 0, a ? a->cols : 0);
		for (int k = 0; a && k < a->n; k++)
			fill_nan(y + (size_t)k * (size_t)w->rows + r0, (size_t)(r1 - r0));
		return;
	}
	if (r1 > r0)
		fn(w, a, a->n, r0, r1, y);
}

void coli_matmul_q8(coli_pool *p, const coli_qmat *w, const float *x, int n, float *y,
		    coli_q8act *scratch)
{
	const coli_mm g = { w, x, y, n };
	coli_matmul_q8_group(p, &g, 1, scratch);
}
