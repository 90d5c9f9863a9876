/* quant_kernels_q8_amx.c - AMX-INT8 row kernels for int8 activations, for
 * products of many inputs (an expert's rows against the step's batch);
 * same arithmetic and same bits as every other path (kernels_q8.h).
 *
 * One tile product gives the exact integer block sums I_b of 16 inputs x
 * 16 rows at once: A = 16 inputs' block b (64 bytes each, read straight
 * from the quantized x, row stride cols), B = block b of 16 weight rows
 * transposed to dwords (B row j = dword j of the 16 rows, by the
 * transposes the VNNI path keeps in registers:
 * quant_kernels_q8_avx512_blocks.h), C = A.B: C row i holds input i's 16
 * rows in its lanes, exactly the register the AVX-512 VNNI path gets from
 * its 16 vpdpbusd. From there the float part is that path's, lane for lane:
 * acc = fma((float)I_b, d_w * d_x, acc), b ascending, one chain per
 * output; int4 adds accm = fma(m_b, sx_b, accm) and y = acc + accm.
 *
 * Signs: x is the signed A operand, so int8 weights go in as they are
 * (tdpbssd, s8 x s8: no q + 128 offset, nothing to add back) and int4's
 * nibbles as unsigned bytes (tdpbsud); the sums are exact in int32 (64
 * products of at most 128 * 128), so the order inside a block is free.
 *
 * Loop order: per panel of 32 rows and pass of up to PASS inputs, the
 * blocks go in chunks of CHUNK: the chunk's weights are transposed once
 * into a stack buffer (kept in L1 while every input tile of the pass
 * streams through); per tile of 16 inputs and row group the 16
 * accumulators stay in registers over the chunk's blocks and go back to
 * a stack array (one vector per row group and input) between chunks.
 * A ragged last tile of inputs is moved back to end at the last input
 * (its first rows, done already, are skipped); with fewer than 16 inputs
 * in all the A and C tiles have one row per input. (Accumulators in memory
 * at every block, both groups' products sharing one A load, ran the
 * vector side at 0.65-0.9x of this: matmul_rows_bench 2048 6144 int4-g64
 * gemm amx-vector, n = 16..256, on a loaded Zen 4.)
 *
 * Decode and short products (fewer than AMX_MIN_N = 16 inputs, or
 * $COLI_KERNELS_AMX) go to the AVX-512
 * VNNI rows: there a tile would hold mostly zero rows and each weight
 * transpose would serve few inputs (a count, not a measurement on AMX
 * hardware); the bits are the same. Linux hands out the tile state only on request (arch_prctl
 * ARCH_REQ_XCOMP_PERM for XTILEDATA), once per process; each call loads
 * the tile configuration on its thread and releases the tiles at the end.
 *
 * GCC 12's tile intrinsics are asm statements that do not tell the
 * compiler which memory they read or write (ldtilecfg names 8 of its 64
 * bytes, tileloadd none), so the buffers they use are fenced with empty
 * asm memory clobbers (TILE_FENCE) where plain C writes them. */
#include "config.h"

#include "quant_kernels_q8.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))

#include <cpuid.h>
#include <immintrin.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "coli_log.h"
#include "quant_kernels_avx512_inline.h"
#include "quant_kernels_q8_avx512_blocks.h"

#define AMX_TARGET COLI_AVX512_TARGET ",amx-tile,amx-int8"
#define AMX __attribute__((target(AMX_TARGET)))
#define AMX_INLINE static inline __attribute__((always_inline, target(AMX_TARGET)))

#define GROUP 16
#define PANEL 32
/* inputs per pass: the accumulators, 2 x PASS x 64 bytes (and as much
 * again for int4's accm), stay in L1 beside the chunk's weights */
#define PASS 64
/* blocks per chunk: 2 x CHUNK KiB of transposed weights */
#define CHUNK 8
/* fewer inputs than this go to the VNNI rows (see the top), unless
 * $COLI_KERNELS_AMX names another count */
#define AMX_MIN_N 16

/* p: the buffer, handed to the asm so that the compiler counts it as
 * read there (a local never passed to asm could keep its stores pending) */
#define TILE_FENCE(p) __asm__ volatile("" : : "r"(p) : "memory")

/* tiles: 0 = A (inputs), 1 and 2 = B (weights), 3 and 4 = C (sums); B
 * and C in two sets used by alternate blocks */
#define T_A 0
#define T_B0 1
#define T_B1 2
#define T_C0 3
#define T_C1 4

/* ldtilecfg's 64-byte operand (palette 1): five tiles of 64-byte rows,
 * 16 of them but for A and C (one row per input) when there are fewer
 * than 16 inputs in all */
struct tilecfg {
	uint8_t palette, start_row, reserved[14];
	uint16_t colsb[16];
	uint8_t rows[16];
};
_Static_assert(sizeof(struct tilecfg) == 64, "ldtilecfg operand");

AMX_INLINE void tiles_config(struct tilecfg *c, int n)
{
	memset(c, 0, sizeof *c);
	c->palette = 1;
	for (int t = 0; t <= T_C1; t++) {
		c->colsb[t] = 64;
		c->rows[t] = (uint8_t)(t == T_B0 || t == T_B1 || n >= GROUP ? GROUP : n);
	}
	TILE_FENCE(c);
	_tile_loadconfig(c);
}

/* ---- the B tiles: block b of 16 weight rows, B row j = the W[j] of
 * quant_kernels_q8_avx512_blocks.h (int4: unsigned nibbles, j < 8 low
 * ones, elements 4j..; j >= 8 high ones, 32 + 4(j - 8)..; lanes in
 * q4_perm() order. int8: signed as stored, lanes in row order) ---- */

/* Block of nr rows at blk (row stride nb blocks) into B (16 x 64 bytes),
 * and the rows' d and int4's m (rows >= nr: zero). */
AMX_INLINE void b_tile(const void *blk, int nb, int nr, int8_t *B, __m512 *dv, __m512 *mv, const int INT4)
{
	__m512i W[16];
	if (INT4)
		q4_block(blk, nb, 0, nr, W, dv, mv);
	else
		q8_block(blk, nb, 0, nr, 0, W, dv);
#pragma GCC unroll 16
	for (int j = 0; j < 16; j++)
		_mm512_store_si512(B + 64 * j, W[j]);
}

/* ---- both weight types ---- */

/* The work of one panel and pass, on the stack of the calling thread */
struct panel {
	__m512 acc[2][PASS];
	__m512 accm[2][PASS];      /* int4 only */
	__m512 dv[2][CHUNK], mv[2][CHUNK];
	_Alignas(64) int8_t B[2][CHUNK][GROUP * 64];
	_Alignas(64) int32_t C[2][GROUP * GROUP];
};

/* One block's tile product of 16 inputs (x rows at xa, stride xs) and
 * the transposed weights B into the C buffer, on tiles B and C (two sets,
 * alternated so that one product need not wait for the last one's
 * store). */
#define TILE_DP(INT4, TB, TC, xa, xs, B, C)                                      \
	do {                                                                      \
		_tile_loadd(T_A, xa, xs);                                         \
		_tile_loadd(TB, B, 64);                                           \
		_tile_zero(TC);                                                   \
		if (INT4)                                                         \
			_tile_dpbsud(TC, T_A, TB);                                \
		else                                                              \
			_tile_dpbssd(TC, T_A, TB);                                \
		_tile_stored(TC, C, 64);                                          \
	} while (0)

/* Inputs [kt, kt + 16) of the pass starting at k0, row group g, blocks
 * [b0, b0 + bn): the 16 accumulators in registers over the chunk */
AMX_INLINE void tile_full(struct panel *P, int g, int kt, int k0, int b0, int bn,
			  const coli_q8act *a, int nb, const int INT4)
{
	const size_t cols = (size_t)nb * COLI_QK;
	__m512 acc[GROUP];
#pragma GCC unroll 16
	for (int i = 0; i < GROUP; i++)
		acc[i] = P->acc[g][kt - k0 + i];
	for (int c = 0; c < bn; c++) {
		const int b = b0 + c;
		const int8_t *xa = a->q + (size_t)kt * cols + (size_t)b * COLI_QK;
		if (c & 1)
			TILE_DP(INT4, T_B1, T_C1, xa, (long)cols, P->B[g][c], P->C[1]);
		else
			TILE_DP(INT4, T_B0, T_C0, xa, (long)cols, P->B[g][c], P->C[0]);
		TILE_FENCE(P);
		const int32_t *C = P->C[c & 1];
		const float *dx = a->d + (size_t)kt * (size_t)nb + (size_t)b;
		const __m512 dv = P->dv[g][c];
#pragma GCC unroll 16
		for (int i = 0; i < GROUP; i++) {
			__m512 is = _mm512_cvtepi32_ps(_mm512_load_si512(C + GROUP * i));
			__m512 s = _mm512_mul_ps(dv, _mm512_set1_ps(dx[(size_t)i * (size_t)nb]));
			acc[i] = _mm512_fmadd_ps(is, s, acc[i]);
		}
	}
#pragma GCC unroll 16
	for (int i = 0; i < GROUP; i++)
		P->acc[g][kt - k0 + i] = acc[i];
}

/* The last, ragged tile of a pass (inputs [k0 + t, k0 + kn), fewer than
 * 16): moved back to end at k0 + kn, its first rows (done already)
 * skipped, or, with fewer than 16 inputs in all, the A and C tiles
 * configured to n rows. Accumulators in memory. */
AMX_INLINE void tile_ragged(struct panel *P, int g, int k0, int kn, int t, int n, int b0, int bn,
			    const coli_q8act *a, int nb, const int INT4)
{
	const size_t cols = (size_t)nb * COLI_QK;
	int kt = k0 + t, i0 = 0;
	if (k0 + kn >= GROUP) {
		kt = k0 + kn - GROUP;
		i0 = k0 + t - kt;
	}
	const int iend = n < GROUP ? n : GROUP;
	for (int c = 0; c < bn; c++) {
		const int b = b0 + c;
		const int8_t *xa = a->q + (size_t)kt * cols + (size_t)b * COLI_QK;
		TILE_DP(INT4, T_B0, T_C0, xa, (long)cols, P->B[g][c], P->C[0]);
		TILE_FENCE(P);
		const float *dx = a->d + (size_t)kt * (size_t)nb + (size_t)b;
		const __m512 dv = P->dv[g][c];
		for (int i = i0; i < iend; i++) {
			__m512 is = _mm512_cvtepi32_ps(_mm512_load_si512(P->C[0] + GROUP * i));
			__m512 s = _mm512_mul_ps(dv, _mm512_set1_ps(dx[(size_t)i * (size_t)nb]));
			__m512 *acc = &P->acc[g][kt + i - k0];
			*acc = _mm512_fmadd_ps(is, s, *acc);
		}
	}
}

/* Rows [g0, g0 + nr) (nr <= 32, row0 the first), inputs [k0, k0 + kn) of
 * a's n, kn <= PASS; y points at row g0 of input 0. */
AMX_INLINE void panel_pass(struct panel *P, const char *row0, size_t row_bytes, int nb, int nr,
			   const coli_q8act *a, int n, int k0, int kn, float *y, size_t ystride,
			   const int INT4)
{
	const size_t blk_bytes = INT4 ? sizeof(coli_block_q4) : sizeof(coli_block_q8);
	const int ng = nr > GROUP ? 2 : 1;
	for (int g = 0; g < ng; g++)
		for (int k = 0; k < kn; k++)
			P->acc[g][k] = P->accm[g][k] = _mm512_setzero_ps();
	for (int b0 = 0; b0 < nb; b0 += CHUNK) {
		const int bn = nb - b0 < CHUNK ? nb - b0 : CHUNK;
		for (int g = 0; g < ng; g++) {
			const int gr = nr - GROUP * g < GROUP ? nr - GROUP * g : GROUP;
			const char *rg = row0 + (size_t)(GROUP * g) * row_bytes;
			for (int c = 0; c < bn; c++)
				b_tile(rg + (size_t)(b0 + c) * blk_bytes, nb, gr, P->B[g][c], &P->dv[g][c],
				       &P->mv[g][c], INT4);
		}
		TILE_FENCE(P);
		for (int t = 0; t < kn; t += GROUP)
			for (int g = 0; g < ng; g++) {
				if (kn - t >= GROUP)
					tile_full(P, g, k0 + t, k0, b0, bn, a, nb, INT4);
				else
					tile_ragged(P, g, k0, kn, t, n, b0, bn, a, nb, INT4);
			}
		if (INT4)
			for (int g = 0; g < ng; g++)
				for (int k = 0; k < kn; k++) {
					const float *sx = a->sx + (size_t)(k0 + k) * (size_t)nb + (size_t)b0;
					__m512 m = P->accm[g][k];
					for (int c = 0; c < bn; c++)
						m = _mm512_fmadd_ps(P->mv[g][c], _mm512_set1_ps(sx[c]), m);
					P->accm[g][k] = m;
				}
	}
	for (int g = 0; g < ng; g++) {
		const int gr = nr - GROUP * g < GROUP ? nr - GROUP * g : GROUP;
		const __mmask16 st = rows_mask(gr);
		for (int k = 0; k < kn; k++) {
			float *yk = y + (size_t)(k0 + k) * ystride + (size_t)(GROUP * g);
			if (INT4) /* lanes back to row order: the order is its own inverse */
				_mm512_mask_storeu_ps(yk, st,
						      _mm512_permutexvar_ps(q4_perm(),
									    _mm512_add_ps(P->acc[g][k], P->accm[g][k])));
			else
				_mm512_mask_storeu_ps(yk, st, P->acc[g][k]);
		}
	}
}

/* Rows [r0, r1), all n inputs, on the tiles (any n >= 1). */
AMX_INLINE void rows_amx(const coli_qmat *w, const coli_q8act *a, int n, int r0, int r1, float *y,
			 const int INT4)
{
	const int nb = w->cols / COLI_QK;
	const size_t row_bytes = (size_t)nb * (INT4 ? sizeof(coli_block_q4) : sizeof(coli_block_q8));
	struct tilecfg cfg;
	struct panel P;
	tiles_config(&cfg, n);
	for (int g = r0; g < r1; g += PANEL) {
		const int nr = r1 - g < PANEL ? r1 - g : PANEL;
		const char *row0 = (const char *)w->data + (size_t)g * row_bytes;
		for (int k0 = 0; k0 < n; k0 += PASS) {
			const int kn = n - k0 < PASS ? n - k0 : PASS;
			panel_pass(&P, row0, row_bytes, nb, nr, a, n, k0, kn, y + g, (size_t)w->rows, INT4);
		}
	}
	_tile_release();
}

AMX static void rows_q4_amx(const coli_qmat *w, const coli_q8act *a, int n, int r0, int r1, float *y)
{
	rows_amx(w, a, n, r0, r1, y, 1);
}

AMX static void rows_q8_amx(const coli_qmat *w, const coli_q8act *a, int n, int r0, int r1, float *y)
{
	rows_amx(w, a, n, r0, r1, y, 0);
}

/* ---- the path's availability and its choice by n ---- */

#define ARCH_REQ_XCOMP_PERM 0x1023
#define XFEATURE_XTILEDATA 18

static pthread_once_t amx_once = PTHREAD_ONCE_INIT;
static int amx_ok;               /* written once under amx_once */
static int amx_min_n = AMX_MIN_N; /* likewise */

/* CPUID.(7,0):EDX bits 24 (AMX-TILE) and 25 (AMX-INT8), the AVX-512 VNNI
 * rows (the short products' path, and proof of the AVX-512 checks), and
 * the kernel's permission for the tile data. $COLI_KERNELS_AMX: 0 turns
 * the path off, N >= 1 sets the least inputs a product needs for the
 * tiles (1: all of them; for tests and tuning on AMX hardware). */
static void amx_decide(void)
{
	unsigned a, b, c, d;
	const char *env = getenv("COLI_KERNELS_AMX");
	if (env && *env) {
		char *end;
		long v = strtol(env, &end, 10);
		if (*end || v < 0 || v > 1 << 20)
			coli_warn("COLI_KERNELS_AMX=%s: not 0 or an input count; using %d", env,
				  AMX_MIN_N);
		else if (v == 0)
			return;
		else
			amx_min_n = (int)v;
	}
	if (!__get_cpuid_count(7, 0, &a, &b, &c, &d) || !((d >> 24) & 1) || !((d >> 25) & 1))
		return;
	if (!coli_kernels_q8_avx512_rows(COLI_Q_INT4))
		return;
	amx_ok = syscall(SYS_arch_prctl, ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA) == 0;
}

static int have_amx(void)
{
	pthread_once(&amx_once, amx_decide);
	return amx_ok;
}

static void rows_q4_pick(const coli_qmat *w, const coli_q8act *a, int n, int r0, int r1, float *y)
{
	if (n < amx_min_n)
		coli_kernels_q8_avx512_rows(COLI_Q_INT4)(w, a, n, r0, r1, y);
	else
		rows_q4_amx(w, a, n, r0, r1, y);
}

static void rows_q8_pick(const coli_qmat *w, const coli_q8act *a, int n, int r0, int r1, float *y)
{
	if (n < amx_min_n)
		coli_kernels_q8_avx512_rows(COLI_Q_INT8)(w, a, n, r0, r1, y);
	else
		rows_q8_amx(w, a, n, r0, r1, y);
}

coli_q8_rows_fn coli_kernels_q8_amx_rows(int qtype)
{
	return coli_q8_rows_pick(have_amx(), qtype, rows_q8_pick, rows_q4_pick);
}

#else

coli_q8_rows_fn coli_kernels_q8_amx_rows(int qtype)
{
	(void)qtype;
	return NULL;
}

#endif
