/* quant_kernels_avx512.c - AVX-512 (F/BW/VL/DQ) + FMA + F16C row kernels (see
 * quant_kernels.h and the AVX2 twin, quant_kernels_avx2.c, whose structure this file
 * follows: per-function target attributes, one set of inline helpers shared
 * by matvec and the matmul tiles, so matmul row k is matvec of input k bit
 * for bit; every output element is summed by one thread in one order).
 *
 * Why a second vector path: with f32 activations the AVX2 int4 kernel
 * needs ~3.3 ns per 64-weight block on the development VM (11 GB/s of
 * weights per core, cache resident), too close to what two cores must
 * stream. Here a block is 4 zmm vectors and the unpacking is cheaper per
 * element (2.1 ns per block, 17 GB/s per core; tests/quant_bench):
 *
 *   INT4  vpmovzxbd (from memory) widens 16 packed bytes to 16 dwords; the
 *         low nibble needs no mask at all: vpermps only reads the low 4
 *         bits of each index, so permuting the table {0.0 .. 15.0} turns
 *         the widened bytes straight into floats (1 uop instead of and +
 *         convert). The high nibble is a shift and a convert. Elements stay
 *         in x's order, so x is read as is. The half-precision d and m of
 *         16 blocks are converted together ahead of the loop (one gather),
 *         so d reaches the FMA as a broadcast memory operand and m * sum(x)
 *         is one FMA per 16 blocks. Per block: 2 widen, 2 permute, 2 shift,
 *         2 convert, 4 FMA for sum(q*x), 1 FMA for d: 13 vector uops on
 *         the two 512-bit ports, about 6.5 cycles.
 *   INT8  vpmovsxbd + convert per 16 weights, d folded in by an FMA whose
 *         broadcast operand is read from the block itself: also 13 uops.
 *
 * matvec takes rows in fours (each block of x is loaded once for four
 * rows: x of 16384 floats does not fit L1) and prefetches the same place
 * a few rows ahead (see the prefetch rule below).
 *
 * Summation order (what the accuracy bound in quant_kernels.h counts): a block's
 * sum(q*x) is one chain of 4 FMAs over 16 lanes; blocks are accumulated
 * into 16 lanes (one chain of cols/64 FMAs); the 16 lanes are reduced in a
 * fixed tree. INT4 adds sum_b m_b * sum(x_b), accumulated in 16 lanes
 * (lane b % 16) and reduced by the same tree, at the end. F32 sums in 4 x
 * 16 lanes. The longest chain is thus below cols/16 + 10. */
#include "config.h"

#include "quant_kernels.h"
#include "quant_kernels_tiling.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))

#include <immintrin.h>
#include <stdatomic.h>

#include "quant_kernels_avx512_inline.h"
#include "quant_kernels_cpu.h"

#define TARGET_512 COLI_AVX512_TARGET
#define AVX512 __attribute__((target(TARGET_512)))
#define AVX512_INLINE static inline __attribute__((always_inline, target(TARGET_512)))

/* Software prefetch distance of the f32 kernel, in bytes (as AVX2's). */
#define PF_DIST 8192
/* matmul tiles: RT rows x up to KN_MAX inputs, the height and width
 * constants inside a tile so the 12 accumulators stay in registers. */
#define RT 4
#define KN_MAX 3
/* INT4 blocks whose scales are converted ahead of the dot products (a
 * multiple of 16; the stack buffers are 2 x 4 x this many floats per tile). */
#define DM_CHUNK 256

/* matvec prefetch distance (quant_kernels_rows.h hands it to vec_rows):
 * the same place in the row COLI_PF_ROWS_* rows ahead (two groups of 4
 * rows for int4, one for int8), kept within [8, 32] KiB. Measured on
 * the development VM (one thread streaming 512 MiB of matrices, best of
 * 6, interleaved runs), GB/s:
 *                      fixed 8 KiB  fixed 32 KiB  this rule
 *   int4 6144x2048          11.4          10.1       11.6
 *   int4 2048x6144           8.3           9.4       12.6
 *   int4 16384x2048         11.3          10.1       11.6
 *   int8 6144x2048          13.3          12.9       14.0
 *   int8 2048x6144          12.2          15.3       15.1
 * (6 or 12 rows instead of 8 and 3 or 6 instead of 4: within noise, no
 * better; no prefetch at all: ~9.) The right distance grows with the row
 * because four rows stream side by side. */

/* Inputs per tile pass for `left` inputs to go: 1..3 in a tile of
 * constant height (accumulators in registers), or 4 in a tile of run-time
 * height (accumulators in memory: 4 x 4 in registers ran out of them and
 * was slower), never a lone last one (5 = 3 + 2, 7 = 4 + 3). Any grouping
 * gives the same bits: each (row, input) pair's operations do not
 * change. Measured per (block, input), one thread, ns (n = 1 / 2 / 3 / 4
 * / 8 inputs): int4 768 x 256, all tiles of run-time height 4.7 / 3.9 /
 * 3.4 / 3.2 / 3.2; constant heights up to 3 inputs (4 = 2 + 2) 4.7 / 3.3
 * / 2.8 / 3.3 / 3.0; int4 2048 x 6144, 4 inputs: 1.8 in one tile of
 * run-time height, 2.2 as 2 + 2; 4..8 inputs x 2 rows or x 1 row in
 * registers no better. */
#define KN_TILE 4
static inline int input_group(int left)
{
	return left <= KN_TILE ? left : left <= 6 ? KN_MAX : KN_TILE;
}

/* ---- F32 ---- */

AVX512_INLINE float f32_dot(const float *a, const float *x, int cols)
{
	__m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
	int j = 0;
	for (; j + 64 <= cols; j += 64) {
		_mm_prefetch((const char *)(a + j) + PF_DIST, _MM_HINT_T0);
		_mm_prefetch((const char *)(a + j) + PF_DIST + 64, _MM_HINT_T0);
		_mm_prefetch((const char *)(a + j) + PF_DIST + 128, _MM_HINT_T0);
		_mm_prefetch((const char *)(a + j) + PF_DIST + 192, _MM_HINT_T0);
		a0 = _mm512_fmadd_ps(_mm512_loadu_ps(a + j), _mm512_loadu_ps(x + j), a0);
		a1 = _mm512_fmadd_ps(_mm512_loadu_ps(a + j + 16), _mm512_loadu_ps(x + j + 16), a1);
		a2 = _mm512_fmadd_ps(_mm512_loadu_ps(a + j + 32), _mm512_loadu_ps(x + j + 32), a2);
		a3 = _mm512_fmadd_ps(_mm512_loadu_ps(a + j + 48), _mm512_loadu_ps(x + j + 48), a3);
	}
	for (; j + 16 <= cols; j += 16)
		a0 = _mm512_fmadd_ps(_mm512_loadu_ps(a + j), _mm512_loadu_ps(x + j), a0);
	if (j < cols) {
		/* masked tail: lanes past cols load nothing and add 0 */
		__mmask16 k = (__mmask16)((1u << (cols - j)) - 1u);
		a1 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(k, a + j), _mm512_maskz_loadu_ps(k, x + j), a1);
	}
	return coli_avx512_hsum16(_mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3)));
}

/* ---- shared by INT8 and INT4: sum(f * x) over one block of 64 ---- */

AVX512_INLINE __m512 block_dot(const __m512 f[4], const float *x)
{
	__m512 s = _mm512_mul_ps(f[0], _mm512_loadu_ps(x));
	s = _mm512_fmadd_ps(f[1], _mm512_loadu_ps(x + 16), s);
	s = _mm512_fmadd_ps(f[2], _mm512_loadu_ps(x + 32), s);
	return _mm512_fmadd_ps(f[3], _mm512_loadu_ps(x + 48), s);
}

/* ---- INT8 ---- */

AVX512_INLINE void q8_unpack(const int8_t *q, __m512 f[4])
{
	f[0] = _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)q)));
	f[1] = _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)(q + 16))));
	f[2] = _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)(q + 32))));
	f[3] = _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)(q + 48))));
}

/* matvec: R rows (a constant after inlining) against one input, each
 * with its own accumulator in a register. Taking rows in fours loads each
 * block of x once for four rows: with 16384 columns x (64 KiB) no longer
 * fits L1, and one row at a time read 7 bytes of x from L2 per byte of
 * weights. The rows' operations do not mix, so the bits are tile's. */
AVX512_INLINE void q8_rows(const coli_block_q8 *row0, int nb, const int R, const float *x, size_t pf,
			   float *y)
{
	__m512 acc[4];
#pragma GCC unroll 4
	for (int i = 0; i < R; i++)
		acc[i] = _mm512_setzero_ps();
	for (int b = 0; b < nb; b++) {
		const float *xb = x + (size_t)b * COLI_QK;
#pragma GCC unroll 4
		for (int i = 0; i < R; i++) {
			const coli_block_q8 *blk = row0 + (size_t)i * (size_t)nb + b;
			__m512 f[4];
			_mm_prefetch((const char *)blk + pf, _MM_HINT_T0);
			_mm_prefetch((const char *)blk + pf + 64, _MM_HINT_T0);
			q8_unpack(blk->q, f);
			acc[i] = _mm512_fmadd_ps(_mm512_set1_ps(blk->d), block_dot(f, xb), acc[i]);
		}
	}
	if (R == 4) {
		_mm_storeu_ps(y, coli_avx512_hsum16x4(acc[0], acc[1], acc[2], acc[3]));
		return;
	}
#pragma GCC unroll 4
	for (int i = 0; i < R; i++)
		y[i] = coli_avx512_hsum16(acc[i]);
}

/* ---- INT4 ---- */

/* f[0] = elements 0..15, f[1] = 16..31 (low nibbles), f[2] = 32..47,
 * f[3] = 48..63 (high nibbles), all as exact small floats. */
AVX512_INLINE void q4_unpack(const uint8_t *q, __m512 f[4])
{
	const __m512 table = _mm512_setr_ps(0.0f, 1.0f, 2.0f, 3.0f, 4.0f, 5.0f, 6.0f, 7.0f,
					    8.0f, 9.0f, 10.0f, 11.0f, 12.0f, 13.0f, 14.0f, 15.0f);
	__m512i v0 = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)q));
	__m512i v1 = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)(q + 16)));
	f[0] = _mm512_permutexvar_ps(v0, table);
	f[1] = _mm512_permutexvar_ps(v1, table);
	f[2] = _mm512_cvtepi32_ps(_mm512_srli_epi32(v0, 4));
	f[3] = _mm512_cvtepi32_ps(_mm512_srli_epi32(v1, 4));
}

/* Scales of blocks [0, cnt) of a row, cnt <= DM_CHUNK: d and m as floats
 * into dbuf and mbuf, 16 blocks per gather + 2 conversions instead of a
 * conversion and two shuffles per block in the hot loop. Slots past cnt
 * (up to the next multiple of 16) get 0. */
AVX512_INLINE void q4_scales(const coli_block_q4 *blk, int cnt, float *dbuf, float *mbuf)
{
	/* dword offsets of the 16 blocks' (d, m) pairs: 36-byte stride */
	const __m512i idx = _mm512_setr_epi32(0, 9, 18, 27, 36, 45, 54, 63, 72, 81, 90, 99,
					      108, 117, 126, 135);
	for (int b = 0; b < cnt; b += 16) {
		__mmask16 k = cnt - b >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (cnt - b)) - 1u);
		__m512i v = _mm512_mask_i32gather_epi32(_mm512_setzero_si512(), k, idx, blk + b, 4);
		_mm512_storeu_ps(dbuf + b, _mm512_cvtph_ps(_mm512_cvtepi32_epi16(v)));
		_mm512_storeu_ps(mbuf + b, _mm512_cvtph_ps(_mm512_cvtepi32_epi16(_mm512_srli_epi32(v, 16))));
	}
}

/* sum_b m_b * xsum_b over a chunk, lane b % 16 (a chunk is a whole
 * number of 16-block groups, so lanes line up across chunks). */
AVX512_INLINE __m512 q4_mterm(const float *mbuf, const float *xs, int cnt, __m512 accm)
{
	for (int b = 0; b < cnt; b += 16) {
		__mmask16 k = cnt - b >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (cnt - b)) - 1u);
		accm = _mm512_fmadd_ps(_mm512_loadu_ps(mbuf + b), _mm512_maskz_loadu_ps(k, xs + b), accm);
	}
	return accm;
}

/* matvec: R rows (constant after inlining) against one input, in fours
 * for the reason given at q8_rows. */
AVX512_INLINE void q4_rows(const coli_block_q4 *row0, int nb, const int R, const float *x,
			   const float *xs, size_t pf, float *y)
{
	float dbuf[4][DM_CHUNK], mbuf[4][DM_CHUNK];
	__m512 acc[4], accm[4];
#pragma GCC unroll 4
	for (int i = 0; i < R; i++) {
		acc[i] = _mm512_setzero_ps();
		accm[i] = _mm512_setzero_ps();
	}
	for (int c0 = 0; c0 < nb; c0 += DM_CHUNK) {
		int cn = nb - c0 < DM_CHUNK ? nb - c0 : DM_CHUNK;
#pragma GCC unroll 4
		for (int i = 0; i < R; i++) {
			q4_scales(row0 + (size_t)i * (size_t)nb + c0, cn, dbuf[i], mbuf[i]);
			accm[i] = q4_mterm(mbuf[i], xs + c0, cn, accm[i]);
		}
		for (int b = 0; b < cn; b++) {
			const float *xb = x + (size_t)(c0 + b) * COLI_QK;
#pragma GCC unroll 4
			for (int i = 0; i < R; i++) {
				const coli_block_q4 *blk = row0 + (size_t)i * (size_t)nb + c0 + b;
				__m512 f[4];
				_mm_prefetch((const char *)blk + pf, _MM_HINT_T0);
				q4_unpack(blk->q, f);
				acc[i] = _mm512_fmadd_ps(_mm512_set1_ps(dbuf[i][b]), block_dot(f, xb), acc[i]);
			}
		}
	}
	if (R == 4) {
		/* hsum(acc_i) + hsum(accm_i), four rows at once */
		_mm_storeu_ps(y, _mm_add_ps(coli_avx512_hsum16x4(acc[0], acc[1], acc[2], acc[3]),
					    coli_avx512_hsum16x4(accm[0], accm[1], accm[2], accm[3])));
		return;
	}
#pragma GCC unroll 4
	for (int i = 0; i < R; i++)
		y[i] = coli_avx512_hsum16(acc[i]) + coli_avx512_hsum16(accm[i]);
}

/* ---- one block, both types (INT4 a constant) ---- */

/* The block at blk as 4 float vectors f (the type's unpack) and its scale
 * d, broadcast: int8's read from the block itself (a broadcast memory
 * operand of the FMA), int4's converted ahead at *d4 (q4_scales). */
AVX512_INLINE __m512 block_unpack(const char *blk, __m512 f[4], const float *d4, const int INT4)
{
	if (INT4) {
		q4_unpack(((const coli_block_q4 *)blk)->q, f);
		return _mm512_set1_ps(*d4);
	}
	const coli_block_q8 *b8 = (const coli_block_q8 *)blk;
	q8_unpack(b8->q, f);
	return _mm512_set1_ps(b8->d);
}

/* Block c0 + b of row i of the rows at row0 (nb blocks each), as typed
 * pointer arithmetic: GCC then keeps one pointer per row in a register
 * (from byte offsets computed by hand it built extra ones and spilled
 * them in the loop). */
AVX512_INLINE const char *block_at(const char *row0, int nb, int i, int c0, int b, const int INT4)
{
	if (INT4)
		return (const char *)((const coli_block_q4 *)row0 + (size_t)i * (size_t)nb + c0 + b);
	return (const char *)((const coli_block_q8 *)row0 + (size_t)i * (size_t)nb + c0 + b);
}

/* matmul tile: rt <= RT rows against KN inputs, block-major: the inputs'
 * block is reused from L1 by every row, each unpacked weight block by
 * every input. Per (row, input) exactly q8_rows' or q4_rows' operations,
 * in the same order. */
AVX512_INLINE void tile(const char *row0, int nb, const int rt, const float *x, size_t cols, const float *xs,
			const int KN, float *y, size_t ystride, const int INT4)
{
	const size_t rs = (size_t)nb * (INT4 ? sizeof(coli_block_q4) : sizeof(coli_block_q8));
	const int chunk = INT4 ? DM_CHUNK : nb;
	float dbuf[RT][DM_CHUNK], mbuf[RT][DM_CHUNK];
	/* int4's m terms are touched once per DM_CHUNK blocks: kept in
	 * memory, so the RT x KN accumulators of the hot loop keep the
	 * registers */
	float accm[RT][KN_TILE][16];
	__m512 acc[RT][KN_TILE];
#pragma GCC unroll 4
	for (int i = 0; i < rt; i++)
#pragma GCC unroll 4
		for (int k = 0; k < KN; k++) {
			acc[i][k] = _mm512_setzero_ps();
			if (INT4)
				_mm512_storeu_ps(accm[i][k], _mm512_setzero_ps());
		}
	for (int c0 = 0; c0 < nb; c0 += chunk) {
		const int cn = nb - c0 < chunk ? nb - c0 : chunk;
#pragma GCC unroll 4
		for (int i = 0; INT4 && i < rt; i++) {
			q4_scales((const coli_block_q4 *)block_at(row0, nb, i, c0, 0, 1), cn, dbuf[i], mbuf[i]);
#pragma GCC unroll 4
			for (int k = 0; k < KN; k++)
				_mm512_storeu_ps(accm[i][k], q4_mterm(mbuf[i], xs + (size_t)k * (size_t)nb + c0, cn,
								      _mm512_loadu_ps(accm[i][k])));
		}
		for (int b = 0; b < cn; b++) {
			const float *xb = x + (size_t)(c0 + b) * COLI_QK;
#pragma GCC unroll 4
			for (int i = 0; i < rt; i++) {
				const char *blk = block_at(row0, nb, i, c0, b, INT4);
				__m512 f[4];
				COLI_BLOCK_PREFETCH(blk + RT * rs, _MM_HINT_T1, INT4);
				const __m512 d = block_unpack(blk, f, &dbuf[i][b], INT4);
#pragma GCC unroll 4
				for (int k = 0; k < KN; k++)
					acc[i][k] = _mm512_fmadd_ps(d, block_dot(f, xb + (size_t)k * cols), acc[i][k]);
			}
		}
	}
#define ACC(i, k) acc[i][k]
#define ACCM(i, k) _mm512_loadu_ps(accm[i][k])
	TILE_STORE(ACC, ACCM, INT4, rt, KN, y, ystride);
#undef ACC
#undef ACCM
}

/* ---- the drivers (quant_kernels_rows.h) ---- */

/* matvec: rows in fours while four are left, then one by one. */
AVX512_INLINE int vec_rows(const char *row0, int nb, int left, const float *x, const float *xs, size_t pf,
			   float *y, const int INT4)
{
	const int R = left >= 4 ? 4 : 1;
	if (INT4 && R == 4)
		q4_rows((const coli_block_q4 *)row0, nb, 4, x, xs, pf, y);
	else if (INT4)
		q4_rows((const coli_block_q4 *)row0, nb, 1, x, xs, pf, y);
	else if (R == 4)
		q8_rows((const coli_block_q8 *)row0, nb, 4, x, pf, y);
	else
		q8_rows((const coli_block_q8 *)row0, nb, 1, x, pf, y);
	return R;
}

/* matmul: kn inputs (input_group) against a tile of run-time height for
 * KN_TILE inputs, else against whole tiles and then single rows: constant
 * tile heights keep the accumulators in registers. */
AVX512_INLINE int mm_tile(const char *row0, int nb, int left, const float *xk, size_t cols,
			  const float *xsk, int kn, float *y, size_t ystride, const int INT4)
{
#define CALL(RTc, KNc) tile(row0, nb, RTc, xk, cols, xsk, KNc, y, ystride, INT4)
	if (kn == KN_TILE) {
		const int rt4 = left < RT ? left : RT;
		CALL(rt4, KN_TILE);
		return rt4;
	}
	const int rt = left >= RT ? RT : 1;
	TILE_SWITCH(rt, kn, CALL)
#undef CALL
	return rt;
}

#define ROWS_ATTR AVX512
#define ROWS_SFX avx512
#define ROWS_ENTRY coli_kernels_avx512_rows
#define ROWS_CPU cpu_has_avx512
#include "quant_kernels_rows.h"

static int cpu_has_avx512(void)
{
	return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
	       __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq") &&
	       __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && coli_cpu_has_f16c();
}

#else

coli_rows_fn coli_kernels_avx512_rows(int qtype)
{
	(void)qtype;
	return NULL;
}

#endif
