/* quant_kernels_rows.h - the row drivers of the f32-activation kernels, written
 * once for quant_kernels.c (portable), quant_kernels_avx2.c and
 * quant_kernels_avx512.c: the loops over rows, panels and groups of inputs
 * that call a path's inner kernels. Not a header for other modules.
 *
 * The drivers only choose which kernel computes which (row, input) pairs;
 * every pair's operations are the inner kernel's, so a path's bits do not
 * depend on this file (matmul row k == matvec of input k is the inner
 * kernels' promise).
 *
 * Included once per file, after the includer defines:
 *   ROWS_ATTR    the attribute of the row functions (a target, or empty)
 *   ROWS_SFX     the suffix of what this header defines: rows_f32_SFX,
 *                rows_q8_SFX, rows_q4_SFX and the table rows_for_SFX(qtype)
 *   RT           rows per matmul tile (panels are a multiple of it)
 *   float f32_dot(const float *a, const float *x, int cols)
 *   int vec_rows(row0, nb, left, x, xs, pf, y, INT4)
 *                matvec: some of the `left` rows at row0 (nb blocks each)
 *                against one input x (xs: its block sums, int4 only; pf:
 *                quant_kernels_tiling.h's prefetch distance for the type),
 *                stored at y[0..]; returns how many
 *   int mm_tile(row0, nb, left, xk, cols, xsk, kn, y, ystride, INT4)
 *                matmul: some of the `left` rows against the kn inputs at
 *                xk (stride cols; xsk: their block sums, stride nb, int4
 *                only), y[k * ystride + i]; returns how many rows
 *   int input_group(int left)  inputs per tile pass with `left` to go
 * INT4 is a constant (1: coli_block_q4 rows, 0: coli_block_q8). A vector
 * path also defines
 *   ROWS_ENTRY   the name of its entry in quant_kernels.h (defined here:
 *                the row function of qtype, or NULL for a CPU without the
 *                path or a type it lacks)
 *   ROWS_CPU     the name of its CPU test, int ROWS_CPU(void), asked once
 *                (quant_kernels_cpu.h) and defined after the include. */

#include "quant_kernels_tiling.h"

#define ROWS_CAT2(a, b) a##b
#define ROWS_CAT(a, b) ROWS_CAT2(a, b)
#define ROWS_FN(name) ROWS_CAT(name, ROWS_SFX)
#define ROWS_INLINE static inline __attribute__((always_inline)) ROWS_ATTR

/* F32: every (row, input) pair on its own, rows outer. */
ROWS_ATTR static void ROWS_FN(rows_f32_)(const coli_qmat *w, const float *x, int n, const float *xsum,
					 int r0, int r1, float *y)
{
	(void)xsum;
	const size_t cols = (size_t)w->cols, rows = (size_t)w->rows;
	for (int r = r0; r < r1; r++) {
		const float *row = (const float *)w->data + (size_t)r * cols;
		for (int k = 0; k < n; k++)
			y[(size_t)k * rows + (size_t)r] = f32_dot(row, x + (size_t)k * cols, w->cols);
	}
}

/* INT8 and INT4: matvec (n == 1) in the path's row groups; matmul in
 * panels of rows that stay in L2 (quant_kernels_tiling.h) while each
 * group of inputs sweeps the panel's tiles. */
ROWS_INLINE void rows_blocks(const coli_qmat *w, const float *x, int n, const float *xsum, int r0, int r1,
			     float *y, const int INT4)
{
	const int nb = w->cols / COLI_QK;
	const size_t cols = (size_t)w->cols, rows = (size_t)w->rows;
	const size_t row_bytes = (size_t)nb * (INT4 ? sizeof(coli_block_q4) : sizeof(coli_block_q8));
	const char *W = w->data;
	if (n == 1) {
		const size_t pf = coli_pf_bytes(row_bytes, INT4 ? COLI_PF_ROWS_Q4 : COLI_PF_ROWS_Q8);
		for (int r = r0; r < r1;)
			r += vec_rows(W + (size_t)r * row_bytes, nb, r1 - r, x, xsum, pf, y + r, INT4);
		return;
	}
	const int panel = coli_panel_rows(row_bytes, RT);
	for (int p0 = r0; p0 < r1; p0 += panel) {
		const int p1 = r1 - p0 < panel ? r1 : p0 + panel;
		for (int k = 0, kn; k < n; k += kn) {
			kn = input_group(n - k);
			const float *xk = x + (size_t)k * cols;
			const float *xsk = INT4 ? xsum + (size_t)k * (size_t)nb : NULL;
			for (int r = p0; r < p1;)
				r += mm_tile(W + (size_t)r * row_bytes, nb, p1 - r, xk, cols, xsk, kn,
					     y + (size_t)k * rows + (size_t)r, rows, INT4);
		}
	}
}

ROWS_ATTR static void ROWS_FN(rows_q8_)(const coli_qmat *w, const float *x, int n, const float *xsum,
					int r0, int r1, float *y)
{
	(void)xsum;
	rows_blocks(w, x, n, NULL, r0, r1, y, 0);
}

ROWS_ATTR static void ROWS_FN(rows_q4_)(const coli_qmat *w, const float *x, int n, const float *xsum,
					int r0, int r1, float *y)
{
	rows_blocks(w, x, n, xsum, r0, r1, y, 1);
}

/* The row function of qtype, or NULL for a type the path lacks. */
static coli_rows_fn ROWS_FN(rows_for_)(int qtype)
{
	switch (qtype) {
	case COLI_Q_F32: return ROWS_FN(rows_f32_);
	case COLI_Q_INT8: return ROWS_FN(rows_q8_);
	case COLI_Q_INT4: return ROWS_FN(rows_q4_);
	default: return NULL;
	}
}

#ifdef ROWS_ENTRY
#include "quant_kernels_cpu.h"

static int ROWS_CPU(void);

coli_rows_fn ROWS_ENTRY(int qtype)
{
	static _Atomic int have = -1;
	return coli_cpu_once(&have, ROWS_CPU) ? ROWS_FN(rows_for_)(qtype) : NULL;
}
#endif
