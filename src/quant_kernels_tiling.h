/* quant_kernels_tiling.h - the cache-blocking rules every vector row kernel
 * shares (quant_kernels_rows.h's drivers of quant_kernels_avx2.c and
 * quant_kernels_avx512.c, and the q8 kernels), measured once in
 * quant_kernels_avx512.c and kept in one place so the paths cannot drift.
 *
 * matmul: rows are taken in panels of about COLI_PANEL_BYTES of weights;
 * each group of inputs passes over a panel while it sits in L2, so a large
 * matrix is streamed from memory once per call, not once per input.
 * matvec: software prefetch of the same place COLI_PF_ROWS_* rows ahead,
 * kept within [COLI_PF_MIN, COLI_PF_MAX] bytes. */
#ifndef COLI_KERNELS_TILING_H
#define COLI_KERNELS_TILING_H

#include <stddef.h>

#define COLI_PANEL_BYTES (192 * 1024)
#define COLI_PF_ROWS_Q4 8
#define COLI_PF_ROWS_Q8 4
#define COLI_PF_MIN 8192
#define COLI_PF_MAX 32768

/* Prefetch distance in bytes for rows of row_bytes, rows_ahead ahead. */
static inline size_t coli_pf_bytes(size_t row_bytes, size_t rows_ahead)
{
	size_t d = row_bytes * rows_ahead;
	return d < COLI_PF_MIN ? COLI_PF_MIN : d > COLI_PF_MAX ? COLI_PF_MAX : d;
}

/* Rows per matmul panel: a multiple of the tile height rt, at least rt. */
static inline int coli_panel_rows(size_t row_bytes, int rt)
{
	size_t p = row_bytes ? COLI_PANEL_BYTES / row_bytes : (size_t)rt;
	p = p / (size_t)rt * (size_t)rt;
	if (p < (size_t)rt)
		return rt;
	return p > (1u << 30) ? 1 << 30 : (int)p;
}

/* The lines of a block at p: two for int8's 68 bytes, one for int4's 36
 * (hint: an _MM_HINT_* level; x86 vector files only). */
#define COLI_BLOCK_PREFETCH(p, hint, INT4)                                                               \
	do {                                                                                             \
		_mm_prefetch((const char *)(p), hint);                                                   \
		if (!(INT4))                                                                             \
			_mm_prefetch((const char *)(p) + 64, hint);                                      \
	} while (0)

#endif
