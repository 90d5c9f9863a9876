/* quant_kernels.h - matrix kernels over coli_qmat, and the compute pool.
 *
 * Determinism: every output element is computed by exactly one thread with
 * a fixed summation order that does not depend on the thread count, so
 * results are bit-identical for any --threads value. AVX-512 and AVX2/FMA
 * code paths are selected at run time (cpuid) with a portable C fallback;
 * the paths may differ in the last bits, so the choice is made once per
 * process: the best the CPU has, or $COLI_KERNELS_ISA ("avx512", "avx2",
 * "generic") when set and supported.
 *
 * Precision: activations stay f32 for every weight type (never quantized),
 * products are summed in f32. Against a double-precision product of the
 * dequantized weights, each output is within (k + 80) * 2^-24 * S, where
 * S = sum_j |w_j x_j| (INT4: sum_j (|w_j| + 2|m|) |x_j|) and k = cols / 16
 * (AVX-512), cols / 8 (AVX2) or cols (portable); tests/quant_kernels.c
 * checks this bound on every path the CPU has.
 *
 * x and y must not overlap. F32 matrices take any cols; INT8/INT4 need
 * cols % 64 == 0 (a bad matrix is logged and y is filled with NaN). */
#ifndef COLI_KERNELS_H
#define COLI_KERNELS_H

#include "quant.h"

typedef struct coli_pool coli_pool;

/* n_threads <= 0 means the number of online cores (fewer if the process's
 * CPU affinity allows fewer). */
coli_pool *coli_pool_new(int n_threads);
void coli_pool_free(coli_pool *p);
int coli_pool_size(const coli_pool *p);
/* Run fn(arg, i) for i in [0, n) across the pool and wait for all; each i
 * runs exactly once, in no particular order or thread. The calling thread
 * participates. Allocation-free after coli_pool_new. One caller at a time
 * (concurrent callers are serialized); a run started from inside a task
 * executes inline on that thread. */
void coli_pool_run(coli_pool *p, int n, void (*fn)(void *arg, int i), void *arg);

/* y[rows] = W x[cols]. pool may be NULL (single-threaded). */
void coli_matvec(coli_pool *p, const coli_qmat *w, const float *x, float *y);
/* Y[n][rows] = X[n][cols] W^T, for small n (prefill / batched decode). The
 * result for each row of X is bit-identical to coli_matvec on that row. */
void coli_matmul(coli_pool *p, const coli_qmat *w, const float *x, int n, float *y);

/* One product of a group: Y[n][w->rows] = X[n][w->cols] W^T. */
typedef struct coli_mm {
	const coli_qmat *w;
	const float *x;
	float *y;
	int n;
} coli_mm;

/* The products g[0..count) in as few pool runs as their inputs allow (one
 * for a layer's experts): the threads take row chunks of any of them, so
 * small matrices do not each end in a wait. Product i's bits are those of
 * coli_matmul(p, g[i].w, g[i].x, g[i].n, g[i].y). Products may share an
 * input (its block sums are then computed once); no output may overlap an
 * input or another output. */
void coli_matmul_group(coli_pool *p, const coli_mm *g, int count);

/* For callers that split one product over their own pool tasks (forward.c
 * computes each attention task's query rows itself): rows [r0, r1) of
 * Y[n][w->rows] = X W^T on the calling thread, the same bits as those rows
 * of coli_matmul. xsum: coli_matmul_xsum_len(w, n) floats filled by
 * coli_matmul_xsum once per X (INT4 needs them; others ignore them). An
 * unsupported matrix is logged and its rows become NaN. */
size_t coli_matmul_xsum_len(const coli_qmat *w, int n);
void coli_matmul_xsum(const coli_qmat *w, const float *x, int n, float *xsum);
void coli_matmul_rows(const coli_qmat *w, const float *x, int n, const float *xsum, int r0, int r1,
		      float *y);

/* Name of the code path in use ("avx512", "avx2" or "generic"), for
 * bench/info. */
const char *coli_kernels_isa(void);

/* Tests and benchmarks only: nonzero forces the portable C path (for the
 * rest of the process, or until called again with 0). Returns the previous
 * setting. Not to be flipped while kernels run on other threads. */
int coli_kernels_force_generic(int on);
/* Tests and benchmarks only: force the named path ("avx512", "avx2",
 * "generic"); NULL or "auto" returns to the process's own choice. Returns
 * 0, -EINVAL for an unknown name, -ENOTSUP when this CPU or build lacks
 * the path (the setting is then unchanged). Same caveat as above. */
int coli_kernels_force_isa(const char *name);

/* Internal contract between quant_kernels.c and quant_kernels_avx2.c, quant_kernels_avx512.c
 * (not for other modules): compute rows [r0, r1) of Y[n][rows] =
 * X[n][cols] W^T for one weight type. xsum[k * (cols / 64) + b] holds the
 * sum of block b of input k (used by INT4's "+ m" term; NULL for other
 * types). */
typedef void (*coli_rows_fn)(const coli_qmat *w, const float *x, int n,
			     const float *xsum, int r0, int r1, float *y);
/* The AVX2+FMA+F16C implementation for qtype, or NULL when this CPU or
 * build lacks it. */
coli_rows_fn coli_kernels_avx2_rows(int qtype);
/* The AVX-512 F/BW/VL/DQ (+FMA, F16C) implementation, or NULL. */
coli_rows_fn coli_kernels_avx512_rows(int qtype);

/* Internal contract of the group dispatch (quant_kernels_group.c): run(ctx, s,
 * r0, r1) computes rows [r0, r1) of segment s; every row of every segment
 * is run exactly once, over the pool, and the call returns when all are
 * done. At most COLI_GROUP_SEGS segments per call (more run inline). */
#define COLI_GROUP_SEGS 128
typedef void (*coli_rows_seg_fn)(void *ctx, int seg, int r0, int r1);
void coli_rows_dispatch(coli_pool *p, int nseg, const coli_qmat *const *w, const int *n,
			coli_rows_seg_fn run, void *ctx);

#endif
