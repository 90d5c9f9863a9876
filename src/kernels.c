/* kernels.c - matvec / matmul dispatch and the portable C kernels.
 *
 * Work split: rows are cut into contiguous chunks handed out by the pool;
 * each output element is computed by one thread with one fixed summation
 * order, so the thread count never changes a bit of the result. coli_matvec
 * is coli_matmul with n = 1 through the same row function, which is what
 * makes matmul row k bit-identical to matvec of input k.
 *
 * Activations stay f32 for every weight type (no int8 activation
 * quantization): with f32 activations the int4 kernels cost ~13 vector uops
 * per 64-weight block on AVX-512 (kernels_avx512.c), so two cores already
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

#include "kernels.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "coli_log.h"

/* Block sums of x kept on the caller's stack; matmul inputs are processed
 * in as many passes as needed to fit (32 KiB). */
#define XSUM_MAX 8192
/* Below this many weight bytes a call runs on the calling thread only: the
 * pool's wakeup would cost more than the work. */
#define POOL_MIN_BYTES (64 * 1024)

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

static float f32_dot_generic(const float *a, const float *x, int cols)
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

static void rows_f32_generic(const coli_qmat *w, const float *x, int n,
			     const float *xsum, int r0, int r1, float *y)
{
	(void)xsum;
	const float *W = w->data;
	size_t cols = (size_t)w->cols;
	for (int r = r0; r < r1; r++)
		for (int k = 0; k < n; k++)
			y[(size_t)k * (size_t)w->rows + (size_t)r] =
				f32_dot_generic(W + (size_t)r * cols, x + (size_t)k * cols, w->cols);
}

static void rows_q8_generic(const coli_qmat *w, const float *x, int n,
			    const float *xsum, int r0, int r1, float *y)
{
	(void)xsum;
	int nb = w->cols / COLI_QK;
	for (int r = r0; r < r1; r++) {
		const coli_block_q8 *row = (const coli_block_q8 *)w->data + (size_t)r * (size_t)nb;
		for (int k = 0; k < n; k++) {
			const float *xk = x + (size_t)k * (size_t)w->cols;
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
			y[(size_t)k * (size_t)w->rows + (size_t)r] = acc;
		}
	}
}

static void rows_q4_generic(const coli_qmat *w, const float *x, int n,
			    const float *xsum, int r0, int r1, float *y)
{
	int nb = w->cols / COLI_QK;
	for (int r = r0; r < r1; r++) {
		const coli_block_q4 *row = (const coli_block_q4 *)w->data + (size_t)r * (size_t)nb;
		for (int k = 0; k < n; k++) {
			const float *xk = x + (size_t)k * (size_t)w->cols;
			const float *xs = xsum + (size_t)k * (size_t)nb;
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
			y[(size_t)k * (size_t)w->rows + (size_t)r] = acc + accm;
		}
	}
}

static coli_rows_fn rows_fn(int qtype)
{
	coli_rows_fn f = NULL;
	switch (isa_current()) {
	case ISA_AVX512: f = coli_kernels_avx512_rows(qtype); break;
	case ISA_AVX2: f = coli_kernels_avx2_rows(qtype); break;
	default: break;
	}
	if (f)
		return f;
	switch (qtype) {
	case COLI_Q_F32: return rows_f32_generic;
	case COLI_Q_INT8: return rows_q8_generic;
	case COLI_Q_INT4: return rows_q4_generic;
	default: return NULL;
	}
}

const char *coli_kernels_isa(void)
{
	return isa_names[isa_current()];
}

/* ---- dispatch over the pool ---- */

struct mm_job {
	coli_rows_fn fn;
	const coli_qmat *w;
	const float *x;
	const float *xsum;
	float *y;
	int n;
	int chunk;
};

static void mm_task(void *arg, int i)
{
	const struct mm_job *j = arg;
	int r0 = i * j->chunk;
	int r1 = r0 + j->chunk;
	if (r1 > j->w->rows)
		r1 = j->w->rows;
	j->fn(j->w, j->x, j->n, j->xsum, r0, r1, j->y);
}

static void fill_nan(float *y, size_t count)
{
	for (size_t i = 0; i < count; i++)
		y[i] = NAN;
}

/* Rows per task: about 4 tasks per thread so a slow thread (the machine
 * is shared) does not hold everyone up, in multiples of 8 rows. */
static int chunk_rows(int rows, int threads)
{
	int c = (rows + threads * 4 - 1) / (threads * 4);
	c = (c + 7) & ~7;
	return c > 0 ? c : 8;
}

static void run_rows(coli_pool *p, coli_rows_fn fn, const coli_qmat *w,
		     const float *x, int n, const float *xsum, float *y)
{
	int threads = coli_pool_size(p);
	size_t bytes = coli_qtype_bytes(w->qtype, w->rows, w->cols);
	struct mm_job job = { fn, w, x, xsum, y, n, w->rows };
	if (threads <= 1 || bytes * (size_t)n < POOL_MIN_BYTES || w->rows < 16) {
		fn(w, x, n, xsum, 0, w->rows, y);
		return;
	}
	job.chunk = chunk_rows(w->rows, threads);
	coli_pool_run(p, (w->rows + job.chunk - 1) / job.chunk, mm_task, &job);
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

void coli_matmul(coli_pool *p, const coli_qmat *w, const float *x, int n, float *y)
{
	if (n <= 0 || w->rows <= 0)
		return;
	coli_rows_fn fn = rows_fn(w->qtype);
	if (!fn || w->cols < 0 || (w->qtype != COLI_Q_F32 && w->cols % COLI_QK)) {
		coli_error("matmul: unsupported matrix (type %d, %d x %d)", w->qtype, w->rows, w->cols);
		fill_nan(y, (size_t)n * (size_t)w->rows);
		return;
	}
	if (w->qtype != COLI_Q_INT4) {
		run_rows(p, fn, w, x, n, NULL, y);
		return;
	}
	int nb = w->cols / COLI_QK;
	float xs_stack[XSUM_MAX];
	float *xs = xs_stack;
	int per_pass = nb > 0 ? XSUM_MAX / nb : n;
	if (per_pass < 1) {
		/* More than 512k columns: no model has that; pay one malloc. */
		xs = malloc((size_t)nb * sizeof *xs);
		if (!xs) {
			coli_error("matmul: out of memory for %d block sums", nb);
			fill_nan(y, (size_t)n * (size_t)w->rows);
			return;
		}
		per_pass = 1;
	}
	for (int k0 = 0; k0 < n; k0 += per_pass) {
		int kn = n - k0 < per_pass ? n - k0 : per_pass;
		for (int k = 0; k < kn; k++)
			block_sums(x + (size_t)(k0 + k) * (size_t)w->cols, nb, xs + (size_t)k * (size_t)nb);
		if (kn == n) {
			run_rows(p, fn, w, x, n, xs, y);
		} else {
			/* rows of Y are strided by w->rows: a pass writes inputs
			 * k0.. into the same layout by offsetting both sides. */
			run_rows(p, fn, w, x + (size_t)k0 * (size_t)w->cols, kn, xs,
				 y + (size_t)k0 * (size_t)w->rows);
		}
	}
	if (xs != xs_stack)
		free(xs);
}

void coli_matvec(coli_pool *p, const coli_qmat *w, const float *x, float *y)
{
	coli_matmul(p, w, x, 1, y);
}
