/* forward_vec_ops.h - vectorized f32 loops of the attention inner products.
 *
 * Each function is compiled for x86-64-v4 (AVX-512), v3 (AVX2) and the
 * baseline and picked at load time (GCC target_clones). The result does not
 * depend on which one runs: the build uses ISO C's -ffp-contract=off (no
 * fused multiply-add), every output element or lane is computed in a fixed
 * order, and a dot product always sums 16 lanes reduced by the same tree, so
 * the vector width changes the speed, never a bit of the answer. */
#ifndef COLI_VEC_OPS_H
#define COLI_VEC_OPS_H

#include <stddef.h>

#include "quant.h"

/* Lanes of coli_vec_dot's partial sums (the order it sums in). */
#define COLI_VEC_LANES 16

/* sum_i a[i] * b[i]: lane i % 16 accumulates its terms in order, then the
 * 16 lanes are added pairwise (8+8, 4+4, 2+2, 1+1), then the tail. */
float coli_vec_dot(const float *a, const float *b, int n);

/* out[p] = coli_vec_dot(a, x + p * x_stride, n) for p < np, bit for bit
 * (rows taken four at a time: independent accumulator chains). */
void coli_vec_dot_rows(const float *a, const float *x, size_t x_stride, int np, int n, float *out);

/* The same over rows anywhere: out[p] = coli_vec_dot(a, rows[p], n), bit
 * for bit (the keys a DSA indexer selected, read where they lie). */
void coli_vec_dot_gather(const float *a, const float *const *rows, int np, int n, float *out);

/* y[k] += sum_{p < np} w[p] * x[p * x_stride + k] for k < n, each element
 * summed in ascending p onto its starting value (the attention's weighted
 * sum of cached latents; 128 or 64 columns at a time held in registers). */
void coli_vec_wsum(float *y, const float *w, const float *x, size_t x_stride, int np, int n);
/* The same with row p at rows[p]: coli_vec_wsum's bits for the same rows. */
void coli_vec_wsum_gather(float *y, const float *w, const float *const *rows, int np, int n);

/* Transposed product of a row block: for b < n,
 *   y[b * y_stride + k] = sum_{i < nrows} a[b * a_stride + i] * W[r0 + i][k]
 * for every column k. This is W^T a, which the row kernels (W x) do not
 * compute; MLA's absorption of q_nope through W_UK needs it. For quantized
 * W (row i, group g: W = d_ig q_ik + m_ig; m = 0 for int8) it is computed
 * as sum_i (a_i d_ig) q_ik + sum_i a_i m_ig, both sums in ascending i, so
 * the 64-wide inner loop works on the raw integers. f32 W: the plain sum in
 * ascending i. tile: scratch of nrows * 64 floats (for n > 1 each group's
 * integers are unpacked once for all n inputs; n = 1 reads them in place
 * and gives the same bits). W must have cols % 64 == 0 unless f32. */
void coli_qrows_tmul(const coli_qmat *w, int r0, int nrows, const float *a, size_t a_stride, int n,
		     float *y, size_t y_stride, float *tile);

#endif
