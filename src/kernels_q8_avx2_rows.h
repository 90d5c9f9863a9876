/* kernels_q8_avx2_rows.h - the 256-bit row kernels of kernels_q8.h, shared
 * by kernels_q8_avx2.c (vpmaddubsw + vpmaddwd) and kernels_q8_avxvnni.c
 * (AVX-VNNI vpdpbusd); not a header for other modules. Included once per
 * file, after the includer defines:
 *   Q8_TARGET  the target attribute string of the functions below
 *   Q8_SFX     the suffix of the two row functions (rows_q4_SFX, rows_q8_SFX)
 *   q4_lanes(v, xl, xh, &il, &ih)  from the 32 packed bytes v of an int4
 *              block and the two halves of x's block: il = lane sums 0..7,
 *              ih = lane sums 8..15 with the high nibbles as 16 * nibble
 *              (kernels_q8.h)
 *   q8_xprep(xl, xh, &cl, &ch)  whatever q8_lanes needs per block of x
 *   q8_lanes(wl, wh, xl, xh, cl, ch, &il, &ih)  lane sums of an int8 block
 * A block of 64 is two ymm halves (elements 0..31, 32..63): lanes 0..7 come
 * from the low half, 8..15 from the high half, each converted and FMA'd
 * into its own accumulator, which is the AVX-512 lane layout exactly.
 * Matmul (n > 1) runs the matvec code per input over panels of rows that
 * stay in L2 (the weights come from memory once per call; each block is
 * still unpacked once per input): these paths are the fallback for CPUs
 * without AVX-512 VNNI. */

#define Q8_ATTR __attribute__((target(Q8_TARGET)))
#define Q8_INLINE static inline __attribute__((always_inline, target(Q8_TARGET)))
#define Q8_CAT2(a, b) a##b
#define Q8_CAT(a, b) Q8_CAT2(a, b)
#define Q8_FN(name) Q8_CAT(name, Q8_SFX)

#include "kernels_tiling.h"

/* Blocks whose scales are prepared ahead of the dot products. Small: the
 * scale loads then run just ahead of the dot products that use them
 * instead of touching a whole row first. Streamed over a 1 GB ring of
 * int4 matrices, 2 threads, huge pages (AVX-VNNI path), GB/s at
 * 2048x6144 / 6144x2048 / 16384x2048 / 6144x16384: 128 blocks 18.4 /
 * 17.3 / 17.6 / 19.9; 32: 19.6 / 17.1 / 17.5 / 21.0; 16: 21.7 / 18.9 /
 * 19.3 / 25.1. */
#define CHUNK 16

/* matmul (n > 1): panels of kernels_tiling.h; matvec: one pass, nothing
 * to reuse */
static int panel_rows(size_t row_bytes, int n)
{
	return n == 1 ? 1 << 30 : coli_panel_rows(row_bytes, 4);
}

/* kernels_q8.h's tree over lanes 0..7 (lo) and 8..15 (hi). */
Q8_INLINE float hsum_pair(__m256 lo, __m256 hi)
{
	__m256 h = _mm256_add_ps(lo, hi);
	__m128 s = _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
	s = _mm_add_ps(s, _mm_movehl_ps(s, s));
	s = _mm_add_ss(s, _mm_shuffle_ps(s, s, 1));
	return _mm_cvtss_f32(s);
}

Q8_INLINE float hsum_arr(const float v[16])
{
	return hsum_pair(_mm256_loadu_ps(v), _mm256_loadu_ps(v + 8));
}

/* ---- INT4 ---- */

/* Scales of blocks [0, cnt) (cnt <= CHUNK, chunk starts at a multiple of
 * 16 blocks): sbuf[b] = d_b * dx[b]; accm[b % 16] += m_b * sx[b]. */
Q8_INLINE void q4_scales(const coli_block_q4 *blk, int cnt, const float *dx, const float *sx,
			   float *sbuf, float accm[16])
{
	for (int b = 0; b < cnt; b++) {
		sbuf[b] = _cvtsh_ss(blk[b].d) * dx[b];
		accm[b % 16] = fmaf(_cvtsh_ss(blk[b].m), sx[b], accm[b % 16]);
	}
}

Q8_INLINE void q4_rows(const coli_block_q4 *row0, int nb, const int R, const int8_t *qx,
			 const float *dx, const float *sx, size_t pf, float *y)
{
	float sbuf[4][CHUNK], accm[4][16] = { { 0 } };
	__m256 lo[4], hi[4];
#pragma GCC unroll 4
	for (int i = 0; i < R; i++) {
		lo[i] = _mm256_setzero_ps();
		hi[i] = _mm256_setzero_ps();
	}
	for (int c0 = 0; c0 < nb; c0 += CHUNK) {
		int cn = nb - c0 < CHUNK ? nb - c0 : CHUNK;
#pragma GCC unroll 4
		for (int i = 0; i < R; i++)
			q4_scales(row0 + (size_t)i * (size_t)nb + c0, cn, dx + c0, sx + c0, sbuf[i],
				  accm[i]);
		for (int b = 0; b < cn; b++) {
			const int8_t *xb = qx + (size_t)(c0 + b) * COLI_QK;
			__m256i xl = _mm256_load_si256((const __m256i *)xb);
			__m256i xh = _mm256_load_si256((const __m256i *)(xb + 32));
#pragma GCC unroll 4
			for (int i = 0; i < R; i++) {
				const coli_block_q4 *blk = row0 + (size_t)i * (size_t)nb + c0 + b;
				_mm_prefetch((const char *)blk + pf, _MM_HINT_T0);
				__m256i il, ih;
				q4_lanes(_mm256_loadu_si256((const __m256i *)blk->q), xl, xh, &il, &ih);
				__m256 s = _mm256_broadcast_ss(&sbuf[i][b]);
				lo[i] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(il), s, lo[i]);
				hi[i] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(ih), s, hi[i]);
			}
		}
	}
#pragma GCC unroll 4
	for (int i = 0; i < R; i++)
		y[i] = hsum_pair(lo[i], _mm256_mul_ps(hi[i], _mm256_set1_ps(0.0625f))) + hsum_arr(accm[i]);
}

Q8_ATTR static void Q8_FN(rows_q4_)(const coli_qmat *w, const coli_q8act *a, int n, int r0, int r1,
			      float *y)
{
	int nb = w->cols / COLI_QK;
	const coli_block_q4 *W = w->data;
	size_t pf = coli_pf_bytes(nb * sizeof(coli_block_q4), COLI_PF_ROWS_Q4);
	int panel = panel_rows(nb * sizeof(coli_block_q4), n);
	for (int p0 = r0; p0 < r1; p0 += panel) {
		int p1 = r1 - p0 < panel ? r1 : p0 + panel;
		for (int k = 0; k < n; k++) {
			const int8_t *qx = a->q + (size_t)k * (size_t)w->cols;
			const float *dx = a->d + (size_t)k * (size_t)nb, *sx = a->sx + (size_t)k * (size_t)nb;
			float *yk = y + (size_t)k * (size_t)w->rows;
			int r = p0;
			for (; r + 4 <= p1; r += 4)
				q4_rows(W + (size_t)r * (size_t)nb, nb, 4, qx, dx, sx, pf, yk + r);
			for (; r < p1; r++)
				q4_rows(W + (size_t)r * (size_t)nb, nb, 1, qx, dx, sx, pf, yk + r);
		}
	}
}

/* ---- INT8 ---- */

Q8_INLINE void q8_rows(const coli_block_q8 *row0, int nb, const int R, const int8_t *qx,
			 const float *dx, size_t pf, float *y)
{
	float sbuf[4][CHUNK];
	__m256 lo[4], hi[4];
#pragma GCC unroll 4
	for (int i = 0; i < R; i++) {
		lo[i] = _mm256_setzero_ps();
		hi[i] = _mm256_setzero_ps();
	}
	for (int c0 = 0; c0 < nb; c0 += CHUNK) {
		int cn = nb - c0 < CHUNK ? nb - c0 : CHUNK;
#pragma GCC unroll 4
		for (int i = 0; i < R; i++)
			for (int b = 0; b < cn; b++)
				sbuf[i][b] = row0[(size_t)i * (size_t)nb + (size_t)(c0 + b)].d * dx[c0 + b];
		for (int b = 0; b < cn; b++) {
			const int8_t *xb = qx + (size_t)(c0 + b) * COLI_QK;
			__m256i xl = _mm256_load_si256((const __m256i *)xb);
			__m256i xh = _mm256_load_si256((const __m256i *)(xb + 32));
			__m256i cl, ch;
			q8_xprep(xl, xh, &cl, &ch);
#pragma GCC unroll 4
			for (int i = 0; i < R; i++) {
				const coli_block_q8 *blk = row0 + (size_t)i * (size_t)nb + c0 + b;
				_mm_prefetch((const char *)blk + pf, _MM_HINT_T0);
				_mm_prefetch((const char *)blk + pf + 64, _MM_HINT_T0);
				__m256i il, ih;
				q8_lanes(_mm256_loadu_si256((const __m256i *)blk->q),
					 _mm256_loadu_si256((const __m256i *)(blk->q + 32)), xl, xh, cl, ch, &il, &ih);
				__m256 s = _mm256_broadcast_ss(&sbuf[i][b]);
				lo[i] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(il), s, lo[i]);
				hi[i] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(ih), s, hi[i]);
			}
		}
	}
#pragma GCC unroll 4
	for (int i = 0; i < R; i++)
		y[i] = hsum_pair(lo[i], hi[i]);
}

Q8_ATTR static void Q8_FN(rows_q8_)(const coli_qmat *w, const coli_q8act *a, int n, int r0, int r1,
			      float *y)
{
	int nb = w->cols / COLI_QK;
	const coli_block_q8 *W = w->data;
	size_t pf = coli_pf_bytes(nb * sizeof(coli_block_q8), COLI_PF_ROWS_Q8);
	int panel = panel_rows(nb * sizeof(coli_block_q8), n);
	for (int p0 = r0; p0 < r1; p0 += panel) {
		int p1 = r1 - p0 < panel ? r1 : p0 + panel;
		for (int k = 0; k < n; k++) {
			const int8_t *qx = a->q + (size_t)k * (size_t)w->cols;
			const float *dx = a->d + (size_t)k * (size_t)nb;
			float *yk = y + (size_t)k * (size_t)w->rows;
			int r = p0;
			for (; r + 4 <= p1; r += 4)
				q8_rows(W + (size_t)r * (size_t)nb, nb, 4, qx, dx, pf, yk + r);
			for (; r < p1; r++)
				q8_rows(W + (size_t)r * (size_t)nb, nb, 1, qx, dx, pf, yk + r);
		}
	}
}

