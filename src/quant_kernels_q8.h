/* quant_kernels_q8.h - matrix products with int8-quantized activations (opt-in).
 *
 * coli_matmul (quant_kernels.h) keeps activations in f32; with int4 weights that
 * costs ~13 vector uops per 64-weight block just to turn nibbles into
 * floats. Here the input rows are quantized once per call to int8 per
 * block of 64, and each block's dot product is an exact integer sum
 * (vpdpbusd / vpmaddubsw), scaled by d_w * d_x afterwards: on AVX-512
 * VNNI one vpdpbusd per block, row and input, plus a convert and two FMAs
 * shared by 16 rows (quant_kernels_q8_avx512.c). The
 * price is the rounding of x: each element moves by at most half a step,
 * max|x_block| / 254, which is why this path is never the default (engine
 * option --act-quant q8).
 *
 * Quantization of an input row, per block of 64 values x_j:
 *   a = max_j |x_j|,  d = a / 127 (float),  q_j = round(x_j * (127 / a))
 * with 127 / a one float division and the product one float rounding;
 * round to nearest, TIES TO EVEN (the default rounding mode, which the
 * process never changes), clamped to [-127, 127]; a < 2^-100 (or 0) gives
 * d = 0 and q = 0. A block holding a NaN or an infinity gets d = NaN (its
 * outputs become NaN, as the f32 path's would be NaN or inf). sx = d *
 * sum_j q_j (float) is kept per block for int4's affine "+ m" term.
 *
 * Arithmetic, identical on every code path (AVX-512 VNNI, AVX-VNNI, AVX2,
 * portable), so the result does not depend on the ISA either: for output
 * (row r, input k), per block b,
 *   I_b  = sum_{e<64} qw[e] * qx[e]              (exact int32)
 *   s_b  = d_w(b) * d_x(b)                       (one float rounding)
 *   acc  = fma((float)I_b, s_b, acc)             (b ascending, from 0)
 * INT4 (w = d*nibble + m) also sums accm = fma(m_b, sx_b, accm), b
 * ascending, and y = acc + accm; INT8: y = acc. One float chain per
 * output, nothing else: a vector path puts 16 (or 8) ROWS in the lanes of
 * a register and runs their chains side by side, every lane doing the
 * scalar operations above, so the row-major weights are transposed a
 * block at a time (dwords of 16 rows) and x's 4-byte groups are
 * broadcast. The integer sum may be formed in any order (it is exact):
 * INT4's high nibbles may enter as 16 * nibble and be shifted out of the
 * int32 sum (exact: a multiple of 16), INT8 weights may go in as q + 128
 * with -128 * sum(qx) (qs) added back. (Before, each output kept 16 lane
 * chains of 4-element sums joined by a reduction tree; one chain per
 * output lets a register hold 16 outputs, so a block's float work is done
 * once for 16 rows instead of once per row.)
 *
 * Contract otherwise as coli_matmul: rows are split over the pool, each
 * output summed by one thread in the fixed order above, so Y row k is the
 * n = 1 result of input k bit for bit, for any thread count. F32 weights
 * go to coli_matmul unchanged (exact). */
#ifndef COLI_KERNELS_Q8_H
#define COLI_KERNELS_Q8_H

#include <stdint.h>

#include "coli_err.h"
#include "quant_kernels.h"

/* Quantized copy of up to n_max input rows of up to cols_max columns.
 * Owned by one thread (the one calling coli_matmul_q8); the pool's threads
 * only read it during a call. Allocated once (at load), never per call. */
typedef struct coli_q8act {
	int n_max;     /* capacity: input rows */
	int cols_max;  /* capacity: columns per row (multiple of 64) */
	int cols;      /* columns of the rows now held */
	int n;         /* rows now held */
	int8_t *q;     /* (n_max, cols_max) quantized values, 64-byte aligned */
	float *d;      /* (n_max, cols_max / 64) block scales */
	float *sx;     /* (n_max, cols_max / 64) d * sum(q) per block */
	int32_t *qs;   /* (n_max, cols_max / 64) sum(q) per block, exact */
} coli_q8act;

/* Zero-initialized *a is a valid empty scratch. n_max >= 1, cols_max >= 1
 * (rounded up to a multiple of 64). Returns 0, -EINVAL or -ENOMEM. */
int coli_q8act_init(coli_q8act *a, int n_max, int cols_max, coli_err *err);
/* Frees the buffers; a is left empty. NULL or empty: no-op. */
void coli_q8act_free(coli_q8act *a);
/* Bytes coli_q8act_init allocated for a (0 for an empty scratch). */
size_t coli_q8act_bytes(const coli_q8act *a);

/* Quantize n rows of x (cols each, cols % 64 == 0, n <= n_max, cols <=
 * cols_max) into a, as described above. Returns 0 or -EINVAL. */
int coli_q8act_quantize(coli_q8act *a, const float *x, int n, int cols);

/* Y[n][rows] = X[n][cols] W^T with X quantized into scratch first (in the
 * calling thread). More inputs than scratch->n_max are done in passes (the
 * bits do not change); cols > scratch->cols_max, a NULL scratch or a bad
 * matrix is logged and fills y with NaN. x and y must not overlap. */
void coli_matmul_q8(coli_pool *p, const coli_qmat *w, const float *x, int n, float *y,
		    coli_q8act *scratch);

/* coli_matmul_group with int8 activations: each distinct input of the
 * group is quantized once into scratch (products sharing an input share
 * its copy; the group is split into several pool runs when their inputs do
 * not fit in scratch together). Product i's bits are those of
 * coli_matmul_q8 on it alone. */
void coli_matmul_q8_group(coli_pool *p, const coli_mm *g, int count, coli_q8act *scratch);

/* Rows [r0, r1) of coli_matmul_q8 on the calling thread, with X already
 * quantized into a (coli_q8act_quantize: a->n rows of w->cols): the same
 * bits as those rows of coli_matmul_q8. INT4/INT8 weights only; anything
 * else (or a mismatched a) is logged and its rows become NaN. */
void coli_matmul_q8_rows(const coli_qmat *w, const coli_q8act *a, int r0, int r1, float *y);

/* Name of the q8 code path in use ("amx", "avx512vnni", "avxvnni",
 * "avx2", "generic"): the best one within what coli_kernels_isa() allows
 * (so $COLI_KERNELS_ISA and coli_kernels_force_isa() choose it too:
 * "avx512" allows all, "avx2" the two 256-bit ones; $COLI_KERNELS_AMX=0
 * leaves "amx" out). All give the same bits; the
 * name is for bench/info. */
const char *coli_kernels_q8_isa(void);
/* Tests and benchmarks only: force one of the names above (NULL or "auto"
 * returns to following coli_kernels_isa()). 0, -EINVAL for an unknown
 * name, -ENOTSUP when this CPU or build lacks it. Not to be called while
 * kernels run on other threads. */
int coli_kernels_q8_force_path(const char *name);

/* Internal contract between quant_kernels_q8.c and its ISA files (not for other
 * modules): rows [r0, r1) of Y[n][rows] for one weight type, x already
 * quantized in a (inputs 0..n-1 of a). */
typedef void (*coli_q8_rows_fn)(const coli_qmat *w, const coli_q8act *a, int n, int r0,
				int r1, float *y);
/* Each path's table: q8 for INT8 weights, q4 for INT4, NULL for others
 * (or for a path the CPU lacks, have == 0). */
static inline coli_q8_rows_fn coli_q8_rows_pick(int have, int qtype, coli_q8_rows_fn q8,
						coli_q8_rows_fn q4)
{
	if (!have)
		return NULL;
	return qtype == COLI_Q_INT8 ? q8 : qtype == COLI_Q_INT4 ? q4 : NULL;
}
coli_q8_rows_fn coli_kernels_q8_avx512_rows(int qtype);
coli_q8_rows_fn coli_kernels_q8_avx2_rows(int qtype);
coli_q8_rows_fn coli_kernels_q8_avxvnni_rows(int qtype);
/* The AVX2 rows' int4 product of n >= 2 inputs, rows [r0, r1) of one
 * L2 panel (quant_kernels_q8_avx2_gemm.c; the caller has checked AVX2). */
void coli_kernels_q8_avx2_q4_gemm(const coli_qmat *w, const coli_q8act *a, int n, int r0, int r1,
				  float *y);
/* AMX-INT8 tiles for n >= 16 inputs ($COLI_KERNELS_AMX=N: n >= N), the
 * AVX-512 VNNI rows below that; NULL without AMX, its kernel permission
 * or with $COLI_KERNELS_AMX=0 */
coli_q8_rows_fn coli_kernels_q8_amx_rows(int qtype);
/* Quantize nb blocks of x as specified above (same bits on every path):
 * q, d, sx and qs (the exact sum of each block's q) per block. */
typedef void (*coli_q8_quant_fn)(const float *x, int nb, int8_t *q, float *d, float *sx,
				 int32_t *qs);
coli_q8_quant_fn coli_kernels_q8_avx512_quant(void);
coli_q8_quant_fn coli_kernels_q8_avx2_quant(void);

#endif
