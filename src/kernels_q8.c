/* kernels_q8.c - int8-activation matmul: the scratch, the quantizer, the
 * portable row kernels and the dispatch over the pool (kernels_q8.h).
 *
 * The portable kernels below are the definition of the arithmetic: the
 * AVX-512 VNNI and AVX2 files compute the same integer lane sums and do
 * the same float operations in the same order (fma per lane, the same
 * reduction tree), so every path gives the same bits. fmaf() is a library
 * call when the compiler may not assume an FMA unit; that makes this path
 * slow but exact, and it is only the fallback.
 *
 * The work split is kernels.c's (contiguous row chunks, about 4 per
 * thread, multiples of 8 rows): a row's result never depends on it. */
#include "config.h"

#include "kernels_q8.h"

#include <errno.h>
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "coli_log.h"

/* Below this many weight bytes a call stays on the calling thread (as in
 * kernels.c: the pool's wakeup would cost more than the work). */
#define POOL_MIN_BYTES (64 * 1024)

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
	if (!a->q || !a->d || !a->sx) {
		coli_q8act_free(a);
		return coli_err_set(err, -ENOMEM, "q8 activations: out of memory for %d x %d", n_max,
				    cols);
	}
	a->n_max = n_max;
	a->cols_max = cols;
	return 0;
}

void coli_q8act_free(coli_q8act *a)
{
	if (!a)
		return;
	free(a->q);
	free(a->d);
	free(a->sx);
	memset(a, 0, sizeof *a);
}

/* One block of 64: see kernels_q8.h for the rule. */
static void quantize_block(const float *x, int8_t *q, float *d, float *sx)
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
}

static void quant_generic(const float *x, int nb, int8_t *q, float *d, float *sx)
{
	for (int b = 0; b < nb; b++)
		quantize_block(x + (size_t)b * COLI_QK, q + (size_t)b * COLI_QK, d + b, sx + b);
}

enum { P_GENERIC, P_AVX2, P_AVXVNNI, P_AVX512VNNI, P_COUNT };
static int path_current(void);

static coli_q8_quant_fn quant_fn(void)
{
	coli_q8_quant_fn f = NULL;
	switch (path_current()) {
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
		f(x + (size_t)k * (size_t)cols, nb, a->q + i * COLI_QK, a->d + i, a->sx + i);
	}
	a->n = n;
	a->cols = cols;
	return 0;
}

/* ---- portable kernels (the definition of the arithmetic) ---- */

/* kernels_avx512.c's hsum16 tree: halves, quarters, pairs, last pair. */
static float hsum16_c(const float v[16])
{
	float h[8], s[4];
	for (int i = 0; i < 8; i++)
		h[i] = v[i] + v[i + 8];
	for (int i = 0; i < 4; i++)
		s[i] = h[i] + h[i + 4];
	return (s[0] + s[2]) + (s[1] + s[3]);
}

static void rows_q4_generic(const coli_qmat *w, const coli_q8act *a, int n, int r0, int r1,
			    float *y)
{
	int nb = w->cols / COLI_QK;
	for (int r = r0; r < r1; r++) {
		const coli_block_q4 *row = (const coli_block_q4 *)w->data + (size_t)r * (size_t)nb;
		for (int k = 0; k < n; k++) {
			size_t kb = (size_t)k * (size_t)nb;
			float acc[16] = { 0 }, accm[16] = { 0 };
			for (int b = 0; b < nb; b++) {
				const int8_t *qx = a->q + (kb + (size_t)b) * COLI_QK;
				const uint8_t *q = row[b].q;
				float s = coli_half_to_float(row[b].d) * a->d[kb + (size_t)b];
				for (int l = 0; l < 16; l++) {
					int32_t sum = 0;
					for (int e = 4 * l; e < 4 * l + 4; e++) {
						/* high nibbles enter as 16 * nibble (see kernels_q8.h) */
						int nib = e < 32 ? (q[e] & 0x0f) : (q[e - 32] & 0xf0);
						sum += nib * qx[e];
					}
					acc[l] = fmaf((float)sum, s, acc[l]);
				}
				accm[b % 16] = fmaf(coli_half_to_float(row[b].m), a->sx[kb + (size_t)b],
						    accm[b % 16]);
			}
			for (int l = 8; l < 16; l++)
				acc[l] *= 0.0625f;
			y[(size_t)k * (size_t)w->rows + (size_t)r] = hsum16_c(acc) + hsum16_c(accm);
		}
	}
}

static void rows_q8_generic(const coli_qmat *w, const coli_q8act *a, int n, int r0, int r1,
			    float *y)
{
	int nb = w->cols / COLI_QK;
	for (int r = r0; r < r1; r++) {
		const coli_block_q8 *row = (const coli_block_q8 *)w->data + (size_t)r * (size_t)nb;
		for (int k = 0; k < n; k++) {
			size_t kb = (size_t)k * (size_t)nb;
			float acc[16] = { 0 };
			for (int b = 0; b < nb; b++) {
				const int8_t *qx = a->q + (kb + (size_t)b) * COLI_QK;
				const int8_t *q = row[b].q;
				float s = row[b].d * a->d[kb + (size_t)b];
				for (int l = 0; l < 16; l++) {
					int32_t sum = 0;
					for (int e = 4 * l; e < 4 * l + 4; e++)
						sum += q[e] * qx[e];
					acc[l] = fmaf((float)sum, s, acc[l]);
				}
			}
			y[(size_t)k * (size_t)w->rows + (size_t)r] = hsum16_c(acc);
		}
	}
}

/* ---- path choice: follows kernels.c's unless a test forces one ---- */

static const char *const path_names[P_COUNT] = { "generic", "avx2", "avxvnni", "avx512vnni" };
static _Atomic int path_forced = -1; /* -1: follow coli_kernels_isa() */

static coli_q8_rows_fn path_rows(int path, int qtype)
{
	switch (path) {
	case P_AVX512VNNI: return coli_kernels_q8_avx512_rows(qtype);
	case P_AVXVNNI: return coli_kernels_q8_avxvnni_rows(qtype);
	case P_AVX2: return coli_kernels_q8_avx2_rows(qtype);
	default:
		return qtype == COLI_Q_INT8 ? rows_q8_generic
		       : qtype == COLI_Q_INT4 ? rows_q4_generic
					      : NULL;
	}
}

/* The best path at or below what coli_kernels_isa() allows. */
static int path_current(void)
{
	int f = atomic_load_explicit(&path_forced, memory_order_relaxed);
	if (f >= 0)
		return f;
	const char *isa = coli_kernels_isa();
	int top = !strcmp(isa, "avx512") ? P_AVX512VNNI : !strcmp(isa, "avx2") ? P_AVXVNNI : P_GENERIC;
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

/* ---- dispatch over the pool ---- */

struct q8_job {
	coli_q8_rows_fn fn;
	const coli_qmat *w;
	const coli_q8act *a;
	float *y;
	int n;
	int chunk;
};

static void q8_task(void *arg, int i)
{
	const struct q8_job *j = arg;
	int r0 = i * j->chunk;
	int r1 = r0 + j->chunk;
	if (r1 > j->w->rows)
		r1 = j->w->rows;
	j->fn(j->w, j->a, j->n, r0, r1, j->y);
}

static void fill_nan(float *y, size_t count)
{
	for (size_t i = 0; i < count; i++)
		y[i] = NAN;
}

void coli_matmul_q8(coli_pool *p, const coli_qmat *w, const float *x, int n, float *y,
		    coli_q8act *scratch)
{
	if (n <= 0 || w->rows <= 0)
		return;
	if (w->qtype == COLI_Q_F32) {
		coli_matmul(p, w, x, n, y);
		return;
	}
	coli_q8_rows_fn fn = path_rows(path_current(), w->qtype);
	if (!fn || !scratch || w->cols < COLI_QK || w->cols % COLI_QK ||
	    w->cols > scratch->cols_max || scratch->n_max < 1) {
		coli_error("matmul q8: unsupported call (type %d, %d x %d, scratch %d x %d)",
			   w->qtype, w->rows, w->cols, scratch ? scratch->n_max : 0,
			   scratch ? scratch->cols_max : 0);
		fill_nan(y, (size_t)n * (size_t)w->rows);
		return;
	}
	int threads = coli_pool_size(p);
	size_t bytes = coli_qtype_bytes(w->qtype, w->rows, w->cols);
	for (int k0 = 0; k0 < n; k0 += scratch->n_max) {
		int kn = n - k0 < scratch->n_max ? n - k0 : scratch->n_max;
		float *yk = y + (size_t)k0 * (size_t)w->rows;
		coli_q8act_quantize(scratch, x + (size_t)k0 * (size_t)w->cols, kn, w->cols);
		struct q8_job job = { fn, w, scratch, yk, kn, w->rows };
		if (threads <= 1 || bytes * (size_t)kn < POOL_MIN_BYTES || w->rows < 16) {
			fn(w, scratch, kn, 0, w->rows, yk);
			continue;
		}
		/* about 4 tasks per thread, multiples of 8 rows (kernels.c) */
		int c = (w->rows + threads * 4 - 1) / (threads * 4);
		job.chunk = ((c + 7) & ~7) > 0 ? (c + 7) & ~7 : 8;
		coli_pool_run(p, (w->rows + job.chunk - 1) / job.chunk, q8_task, &job);
	}
}
