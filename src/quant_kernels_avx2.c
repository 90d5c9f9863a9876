/* quant_kernels_avx2.c - AVX2 + FMA + F16C row kernels (see quant_kernels.h).
 *
 * Compiled with per-function target attributes so the rest of the build
 * stays generic; coli_kernels_avx2_rows() checks the CPU at run time.
 *
 * Bit-identity between matvec and matmul: for every (row, input) pair the
 * same inline helpers (block_unpack + block_dot, which int8 and int4
 * share with a constant for the type; f32_dot) run in the same block
 * order with the same accumulators, whether through the n == 1 row loop
 * (row_dot) or the matmul tiles (tile, whose accumulators may live in
 * memory: storing a float does not change it). Matmul only reuses the
 * unpacked weights and the activations' cache lines.
 *
 * INT4 unpacking: vpmovzxbd straight from memory widens 8 packed bytes to
 * 8 dwords; "& 0x0f" gives elements j..j+7 and "& 0xf0" 16 x elements
 * j+32..j+39, already in x's order, so x is never shuffled. A block costs
 * 4 shuffle uops, 8 ANDs, 8 conversions and 10 FMA-port uops: about 10
 * cycles, i.e. ~11 GB/s of weights per core, so with f32 activations the
 * kernel is compute bound on this VM (3.3 ns/block with the block in L2).
 * Quantizing x to int8 (maddubs) would be ~3x cheaper, at ~1e-3 relative
 * error per output; quant_kernels.h promises f32 activations instead. */
#include "config.h"

#include "quant_kernels.h"
#include "quant_kernels_tiling.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))

#include <immintrin.h>
#include <stdatomic.h>
#include <string.h>

#include "quant_kernels_cpu.h"

#define AVX2 __attribute__((target("avx2,fma,f16c")))
#define AVX2_INLINE static inline __attribute__((always_inline, target("avx2,fma,f16c")))

/* Software prefetch distance in bytes. Measured on the development VM
 * (tests/quant_bench, one thread, 1 GiB int4 set): no prefetch 3.3 GB/s,
 * 1 KiB 4.9, 4 KiB 7.3, 8 KiB 8.7, 16 KiB 8.3: the hardware prefetcher
 * alone does not keep enough lines in flight for a kernel that consumes
 * at ~10 GB/s. Prefetching past the end of a buffer is harmless. */
#define PF_DIST 8192
/* Rows per matmul tile: the inputs' current block is reused from L1 by
 * this many rows, cutting the activation traffic from L2 by as much. */
#define RT 8

/* matmul loop nest (quant_kernels_rows.h): rows are taken in panels of
 * about COLI_PANEL_BYTES of weights; within a panel, each group of 4
 * inputs sweeps every RT-row tile. The panel stays in L2 while all input
 * groups pass over it, and a group's activations stay in L2 while the
 * panel's tiles pass over them;
 * without panels, 64 inputs of 6144 floats (1.5 MB) streamed from L3 once
 * per tile and n = 64 ran 4x slower per block than n = 4. */

/* Fixed-order horizontal sum: ((v0+v4)+(v2+v6)) + ((v1+v5)+(v3+v7)). */
AVX2_INLINE float hsum8(__m256 v)
{
	__m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
	s = _mm_add_ps(s, _mm_movehl_ps(s, s));
	s = _mm_add_ss(s, _mm_shuffle_ps(s, s, 1));
	return _mm_cvtss_f32(s);
}

/* ---- F32 ---- */

AVX2_INLINE float f32_dot(const float *a, const float *x, int cols)
{
	__m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
	int j = 0;
	for (; j + 32 <= cols; j += 32) {
		_mm_prefetch((const char *)(a + j) + PF_DIST, _MM_HINT_T0);
		_mm_prefetch((const char *)(a + j) + PF_DIST + 64, _MM_HINT_T0);
		a0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + j), _mm256_loadu_ps(x + j), a0);
		a1 = _mm256_fmadd_ps(_mm256_loadu_ps(a + j + 8), _mm256_loadu_ps(x + j + 8), a1);
		a2 = _mm256_fmadd_ps(_mm256_loadu_ps(a + j + 16), _mm256_loadu_ps(x + j + 16), a2);
		a3 = _mm256_fmadd_ps(_mm256_loadu_ps(a + j + 24), _mm256_loadu_ps(x + j + 24), a3);
	}
	for (; j + 8 <= cols; j += 8)
		a0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + j), _mm256_loadu_ps(x + j), a0);
	float r = hsum8(_mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3)));
	for (; j < cols; j++)
		r = _mm_cvtss_f32(_mm_fmadd_ss(_mm_set_ss(a[j]), _mm_set_ss(x[j]), _mm_set_ss(r)));
	return r;
}

/* ---- INT8 ---- */

AVX2_INLINE __m256 q8_load8(const int8_t *q)
{
	return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)q)));
}

/* f[j] = elements 8j..8j+7 of the block. */
AVX2_INLINE void q8_unpack(const int8_t *q, __m256 f[8])
{
	f[0] = q8_load8(q);
	f[1] = q8_load8(q + 8);
	f[2] = q8_load8(q + 16);
	f[3] = q8_load8(q + 24);
	f[4] = q8_load8(q + 32);
	f[5] = q8_load8(q + 40);
	f[6] = q8_load8(q + 48);
	f[7] = q8_load8(q + 56);
}

/* ---- INT4 ---- */

/* f[0..3] = elements 0..31 (low nibbles); f[4..7] = 16 x elements 32..63
 * ("& 0xf0" instead of ">> 4" saves a shift; the 16 is taken out, exactly,
 * by block_dot). */
AVX2_INLINE void q4_unpack(const uint8_t *q, __m256 f[8])
{
	const __m256i lo = _mm256_set1_epi32(0x0f), hi = _mm256_set1_epi32(0xf0);
	__m256i v0 = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)q));
	__m256i v1 = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(q + 8)));
	__m256i v2 = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(q + 16)));
	__m256i v3 = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(q + 24)));
	f[0] = _mm256_cvtepi32_ps(_mm256_and_si256(v0, lo));
	f[1] = _mm256_cvtepi32_ps(_mm256_and_si256(v1, lo));
	f[2] = _mm256_cvtepi32_ps(_mm256_and_si256(v2, lo));
	f[3] = _mm256_cvtepi32_ps(_mm256_and_si256(v3, lo));
	f[4] = _mm256_cvtepi32_ps(_mm256_and_si256(v0, hi));
	f[5] = _mm256_cvtepi32_ps(_mm256_and_si256(v1, hi));
	f[6] = _mm256_cvtepi32_ps(_mm256_and_si256(v2, hi));
	f[7] = _mm256_cvtepi32_ps(_mm256_and_si256(v3, hi));
}

/* (d, m, 0, 0) from the block's two halves. */
AVX2_INLINE __m128 q4_dm(const coli_block_q4 *blk)
{
	uint32_t bits;
	memcpy(&bits, blk, sizeof bits);
	return _mm_cvtph_ps(_mm_cvtsi32_si128((int)bits));
}

/* ---- one block, both types (INT4 a constant) ---- */

/* The block at blk as 8 float vectors f (the type's unpack) and its scale
 * d, broadcast; int4's m in lane 0 of *m. */
AVX2_INLINE __m256 block_unpack(const char *blk, __m256 f[8], __m128 *m, const int INT4)
{
	if (!INT4) {
		const coli_block_q8 *b8 = (const coli_block_q8 *)blk;
		q8_unpack(b8->q, f);
		return _mm256_set1_ps(b8->d);
	}
	const coli_block_q4 *b4 = (const coli_block_q4 *)blk;
	q4_unpack(b4->q, f);
	const __m128 dm = q4_dm(b4);
	*m = _mm_movehdup_ps(dm);
	return _mm256_broadcastss_ps(dm);
}

/* sum(f * x) over the block as 8 lanes, two chains of 4 whose order is
 * part of the bits: int8's over the even and the odd vectors, added;
 * int4's over the low and the high nibbles, the high one scaled back by
 * 1/16 (a power of two: exact). */
AVX2_INLINE __m256 block_dot(const __m256 f[8], const float *x, const int INT4)
{
	const int step = INT4 ? 1 : 2, c1 = INT4 ? 4 : 1; /* chain 1's first vector */
	__m256 s0 = _mm256_mul_ps(f[0], _mm256_loadu_ps(x));
	__m256 s1 = _mm256_mul_ps(f[c1], _mm256_loadu_ps(x + 8 * c1));
#pragma GCC unroll 3
	for (int i = 1; i < 4; i++) {
		s0 = _mm256_fmadd_ps(f[step * i], _mm256_loadu_ps(x + 8 * step * i), s0);
		s1 = _mm256_fmadd_ps(f[c1 + step * i], _mm256_loadu_ps(x + 8 * (c1 + step * i)), s1);
	}
	return INT4 ? _mm256_fmadd_ps(s1, _mm256_set1_ps(0.0625f), s0) : _mm256_add_ps(s0, s1);
}

/* matvec: one row, one input, accumulators in registers. */
AVX2_INLINE float row_dot(const char *row, int nb, const float *x, const float *xs, const int INT4)
{
	const size_t bb = INT4 ? sizeof(coli_block_q4) : sizeof(coli_block_q8);
	__m256 acc = _mm256_setzero_ps();
	__m128 accm = _mm_setzero_ps();
	for (int b = 0; b < nb; b++) {
		const char *blk = row + (size_t)b * bb;
		__m256 f[8];
		__m128 m = _mm_setzero_ps();
		COLI_BLOCK_PREFETCH(blk + PF_DIST, _MM_HINT_T0, INT4);
		const __m256 d = block_unpack(blk, f, &m, INT4);
		acc = _mm256_fmadd_ps(d, block_dot(f, x + (size_t)b * COLI_QK, INT4), acc);
		if (INT4)
			accm = _mm_fmadd_ss(m, _mm_load_ss(xs + b), accm);
	}
	return INT4 ? hsum8(acc) + _mm_cvtss_f32(accm) : hsum8(acc);
}

/* matmul: a tile of rt <= RT rows against KN inputs (KN constant after
 * inlining), block-major: the inputs' block (KN x 256 bytes) is reused
 * from L1 by every row of the tile, each unpacked weight block by every
 * input. Per (row, input) the operations are exactly row_dot's, so the
 * bits are too (accumulators in memory: storing a float does not change
 * it). */
AVX2_INLINE void tile(const char *row0, int nb, int rt, const float *x, size_t cols, const float *xs,
		      const int KN, float *y, size_t ystride, const int INT4)
{
	const size_t bb = INT4 ? sizeof(coli_block_q4) : sizeof(coli_block_q8), rs = (size_t)nb * bb;
	__m256 acc[RT][4];
	__m128 accm[RT][4];
	for (int i = 0; i < rt; i++)
#pragma GCC unroll 4
		for (int k = 0; k < KN; k++) {
			acc[i][k] = _mm256_setzero_ps();
			accm[i][k] = _mm_setzero_ps();
		}
	for (int b = 0; b < nb; b++) {
		const float *xb = x + (size_t)b * COLI_QK;
		for (int i = 0; i < rt; i++) {
			const char *blk = row0 + (size_t)i * rs + (size_t)b * bb;
			__m256 f[8];
			__m128 m = _mm_setzero_ps();
			COLI_BLOCK_PREFETCH(blk + RT * rs, _MM_HINT_T1, INT4);
			const __m256 d = block_unpack(blk, f, &m, INT4);
#pragma GCC unroll 4
			for (int k = 0; k < KN; k++) {
				acc[i][k] = _mm256_fmadd_ps(d, block_dot(f, xb + (size_t)k * cols, INT4), acc[i][k]);
				if (INT4)
					accm[i][k] = _mm_fmadd_ss(m, _mm_load_ss(xs + (size_t)k * (size_t)nb + b),
								  accm[i][k]);
			}
		}
	}
	for (int i = 0; i < rt; i++)
#pragma GCC unroll 4
		for (int k = 0; k < KN; k++)
			y[(size_t)k * ystride + (size_t)i] =
				INT4 ? hsum8(acc[i][k]) + _mm_cvtss_f32(accm[i][k]) : hsum8(acc[i][k]);
}

/* ---- the drivers (quant_kernels_rows.h) ---- */

/* matvec: one row at a time, its accumulators in registers. */
AVX2_INLINE int vec_rows(const char *row0, int nb, int left, const float *x, const float *xs, size_t pf,
			 float *y, const int INT4)
{
	(void)left;
	(void)pf; /* PF_DIST: a fixed distance measured for these kernels */
	*y = row_dot(row0, nb, x, xs, INT4);
	return 1;
}

/* matmul: a tile of up to RT rows against kn <= 4 inputs, kn a constant
 * inside the tile. */
AVX2_INLINE int mm_tile(const char *row0, int nb, int left, const float *xk, size_t cols, const float *xsk,
			int kn, float *y, size_t ystride, const int INT4)
{
	const int rt = left < RT ? left : RT;
	switch (kn) {
	case 4: tile(row0, nb, rt, xk, cols, xsk, 4, y, ystride, INT4); break;
	case 3: tile(row0, nb, rt, xk, cols, xsk, 3, y, ystride, INT4); break;
	case 2: tile(row0, nb, rt, xk, cols, xsk, 2, y, ystride, INT4); break;
	default: tile(row0, nb, rt, xk, cols, xsk, 1, y, ystride, INT4); break;
	}
	return rt;
}

static inline int input_group(int left)
{
	return left < 4 ? left : 4;
}

#define ROWS_ATTR AVX2
#define ROWS_SFX avx2
#define ROWS_ENTRY coli_kernels_avx2_rows
#define ROWS_CPU cpu_has_avx2
#include "quant_kernels_rows.h"

static int cpu_has_avx2(void)
{
	return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && coli_cpu_has_f16c();
}

#else

coli_rows_fn coli_kernels_avx2_rows(int qtype)
{
	(void)qtype;
	return NULL;
}

#endif
