/* kernels.h - matrix kernels over coli_qmat, and the compute pool.
 *
 * Determinism: every output element is computed by exactly one thread with
 * a fixed summation order that does not depend on the thread count, so
 * results are bit-identical for any --threads value. AVX2/FMA code paths are
 * selected at run time (cpuid) with a portable C fallback; the two paths may
 * differ in the last bits, so the choice is fixed per process. */
#ifndef COLI_KERNELS_H
#define COLI_KERNELS_H

#include "quant.h"

typedef struct coli_pool coli_pool;

/* n_threads <= 0 means the number of online cores. */
coli_pool *coli_pool_new(int n_threads);
void coli_pool_free(coli_pool *p);
int coli_pool_size(const coli_pool *p);
/* Run fn(arg, i) for i in [0, n) across the pool and wait for all. The
 * calling thread participates. Allocation-free after coli_pool_new. */
void coli_pool_run(coli_pool *p, int n, void (*fn)(void *arg, int i), void *arg);

/* y[rows] = W x[cols]. pool may be NULL (single-threaded). */
void coli_matvec(coli_pool *p, const coli_qmat *w, const float *x, float *y);
/* Y[n][rows] = X[n][cols] W^T, for small n (prefill / batched decode). The
 * result for each row of X is bit-identical to coli_matvec on that row. */
void coli_matmul(coli_pool *p, const coli_qmat *w, const float *x, int n, float *y);

/* Name of the code path in use ("avx2" or "generic"), for bench/info. */
const char *coli_kernels_isa(void);

#endif
