/* kernels_q8_avx2.c - AVX2 + FMA + F16C row kernels for int8 activations
 * (kernels_q8.h; the arithmetic is defined by the portable kernels in
 * kernels_q8.c and reproduced here bit for bit).
 *
 * A block of 64 is two ymm halves (elements 0..31, 32..63). vpmaddubsw
 * (u8 x s8, adjacent pairs summed to int16) then vpmaddwd by 1 (adjacent
 * int16 pairs to int32) gives exactly the 16 lane sums of 4 products that
 * vpdpbusd gives on AVX-512: lanes 0..7 from the low half, 8..15 from the
 * high half, each converted and FMA'd into its own accumulator. No int16
 * saturation: int4 pairs are at most 2 * 15 * 127; int8 weights go as |w|
 * (<= 128) with their sign moved onto x (vpsignb), pairs at most
 * 2 * 128 * 127 = 32512.
 *
 * Matmul (n > 1) runs the matvec code per input (no weight reuse across
 * inputs): this path is the fallback for CPUs without AVX-512 VNNI. */
#include "config.h"

#include "kernels_q8.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))

#include <cpuid.h>
#include <immintrin.h>
#include <math.h>
#include <stdatomic.h>

#define TARGET_Q8_AVX2 "avx2,fma,f16c"
#define AVX2 __attribute__((target(TARGET_Q8_AVX2)))
#define AVX2_INLINE static inline __attribute__((always_inline, target(TARGET_Q8_AVX2)))

#define CHUNK 128
#define PF_ROWS_Q4 8
#define PF_ROWS_Q8 4
#define PF_MIN 8192
#define PF_MAX 32768

static size_t pf_bytes(size_t row_bytes, size_t rows_ahead)
{
	size_t d = row_bytes * rows_ahead;
	return d < PF_MIN ? PF_MIN : d > PF_MAX ? PF_MAX : d;
}

/* kernels_q8.h's tree over lanes 0..7 (lo) and 8..15 (hi). */
AVX2_INLINE float hsum_pair(__m256 lo, __m256 hi)
{
	__m256 h = _mm256_add_ps(lo, hi);
	__m128 s = _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
	s = _mm_add_ps(s, _mm_movehl_ps(s, s));
	s = _mm_add_ss(s, _mm_shuffle_ps(s, s, 1));
	return _mm_cvtss_f32(s);
}

AVX2_INLINE float hsum_arr(const float v[16])
{
	return hsum_pair(_mm256_loadu_ps(v), _mm256_loadu_ps(v + 8));
}

AVX2_INLINE __m256i pairs_to_lanes(__m256i p16)
{
	return _mm256_madd_epi16(p16, _mm256_set1_epi16(1));
}

/* ---- INT4 ---- */

/* Scales of blocks [0, cnt) (cnt <= CHUNK, chunk starts at a multiple of
 * 16 blocks): sbuf[b] = d_b * dx[b]; accm[b % 16] += m_b * sx[b]. */
AVX2_INLINE void q4_scales(const coli_block_q4 *blk, int cnt, const float *dx, const float *sx,
			   float *sbuf, float accm[16])
{
	for (int b = 0; b < cnt; b++) {
		sbuf[b] = _cvtsh_ss(blk[b].d) * dx[b];
		accm[b % 16] = fmaf(_cvtsh_ss(blk[b].m), sx[b], accm[b % 16]);
	}
}

AVX2_INLINE void q4_rows(const coli_block_q4 *row0, int nb, const int R, const int8_t *qx,
			 const float *dx, const float *sx, size_t pf, float *y)
{
	float sbuf[4][CHUNK], accm[4][16] = { { 0 } };
	__m256 lo[4], hi[4];
	const __m256i m4 = _mm256_set1_epi8(0x0f);
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
				__m256i v = _mm256_loadu_si256((const __m256i *)blk->q);
				__m256i wl = _mm256_and_si256(v, m4);
				__m256i wh = _mm256_and_si256(_mm256_srli_epi16(v, 4), m4);
				__m256i il = pairs_to_lanes(_mm256_maddubs_epi16(wl, xl));
				/* 16 * high nibble, as kernels_q8.h specifies */
				__m256i ih = _mm256_madd_epi16(_mm256_maddubs_epi16(wh, xh), _mm256_set1_epi16(16));
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

AVX2 static void rows_q4_avx2(const coli_qmat *w, const coli_q8act *a, int n, int r0, int r1,
			      float *y)
{
	int nb = w->cols / COLI_QK;
	const coli_block_q4 *W = w->data;
	size_t pf = pf_bytes(nb * sizeof(coli_block_q4), PF_ROWS_Q4);
	for (int k = 0; k < n; k++) {
		const int8_t *qx = a->q + (size_t)k * (size_t)w->cols;
		const float *dx = a->d + (size_t)k * (size_t)nb, *sx = a->sx + (size_t)k * (size_t)nb;
		float *yk = y + (size_t)k * (size_t)w->rows;
		int r = r0;
		for (; r + 4 <= r1; r += 4)
			q4_rows(W + (size_t)r * (size_t)nb, nb, 4, qx, dx, sx, pf, yk + r);
		for (; r < r1; r++)
			q4_rows(W + (size_t)r * (size_t)nb, nb, 1, qx, dx, sx, pf, yk + r);
	}
}

/* ---- INT8 ---- */

AVX2_INLINE void q8_rows(const coli_block_q8 *row0, int nb, const int R, const int8_t *qx,
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
#pragma GCC unroll 4
			for (int i = 0; i < R; i++) {
				const coli_block_q8 *blk = row0 + (size_t)i * (size_t)nb + c0 + b;
				_mm_prefetch((const char *)blk + pf, _MM_HINT_T0);
				_mm_prefetch((const char *)blk + pf + 64, _MM_HINT_T0);
				__m256i wl = _mm256_loadu_si256((const __m256i *)blk->q);
				__m256i wh = _mm256_loadu_si256((const __m256i *)(blk->q + 32));
				__m256i il = pairs_to_lanes(
					_mm256_maddubs_epi16(_mm256_abs_epi8(wl), _mm256_sign_epi8(xl, wl)));
				__m256i ih = pairs_to_lanes(
					_mm256_maddubs_epi16(_mm256_abs_epi8(wh), _mm256_sign_epi8(xh, wh)));
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

AVX2 static void rows_q8_avx2(const coli_qmat *w, const coli_q8act *a, int n, int r0, int r1,
			      float *y)
{
	int nb = w->cols / COLI_QK;
	const coli_block_q8 *W = w->data;
	size_t pf = pf_bytes(nb * sizeof(coli_block_q8), PF_ROWS_Q8);
	for (int k = 0; k < n; k++) {
		const int8_t *qx = a->q + (size_t)k * (size_t)w->cols;
		const float *dx = a->d + (size_t)k * (size_t)nb;
		float *yk = y + (size_t)k * (size_t)w->rows;
		int r = r0;
		for (; r + 4 <= r1; r += 4)
			q8_rows(W + (size_t)r * (size_t)nb, nb, 4, qx, dx, pf, yk + r);
		for (; r < r1; r++)
			q8_rows(W + (size_t)r * (size_t)nb, nb, 1, qx, dx, pf, yk + r);
	}
}

/* ---- quantization of x: kernels_q8.h's rule, as kernels_q8_avx512.c ---- */

AVX2 static void quant_avx2(const float *x, int nb, int8_t *q, float *d, float *sx)
{
	const __m256 absmask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
	const __m256i expmask = _mm256_set1_epi32(0x7f800000);
	for (int b = 0; b < nb; b++) {
		const float *xb = x + (size_t)b * COLI_QK;
		__m256 v[8];
		__m256 amax = _mm256_setzero_ps();
		__m256i bad = _mm256_setzero_si256();
#pragma GCC unroll 8
		for (int j = 0; j < 8; j++) {
			v[j] = _mm256_loadu_ps(xb + 8 * j);
			amax = _mm256_max_ps(amax, _mm256_and_ps(v[j], absmask));
			__m256i e = _mm256_and_si256(_mm256_castps_si256(v[j]), expmask);
			bad = _mm256_or_si256(bad, _mm256_cmpeq_epi32(e, expmask));
		}
		__m128 m4 = _mm_max_ps(_mm256_castps256_ps128(amax), _mm256_extractf128_ps(amax, 1));
		m4 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
		float a = _mm_cvtss_f32(_mm_max_ss(m4, _mm_shuffle_ps(m4, m4, 1)));
		int8_t *qb = q + (size_t)b * COLI_QK;
		int nonfinite = !_mm256_testz_si256(bad, bad);
		if (nonfinite || a < 0x1p-100f) {
			_mm256_storeu_si256((__m256i *)qb, _mm256_setzero_si256());
			_mm256_storeu_si256((__m256i *)(qb + 32), _mm256_setzero_si256());
			d[b] = sx[b] = nonfinite ? __builtin_nanf("") : 0.0f;
			continue;
		}
		__m256 id = _mm256_set1_ps(127.0f / a);
		__m256i sum = _mm256_setzero_si256();
		for (int j = 0; j < 8; j += 4) {
			__m256i i0 = _mm256_cvtps_epi32(_mm256_mul_ps(v[j], id));
			__m256i i1 = _mm256_cvtps_epi32(_mm256_mul_ps(v[j + 1], id));
			__m256i i2 = _mm256_cvtps_epi32(_mm256_mul_ps(v[j + 2], id));
			__m256i i3 = _mm256_cvtps_epi32(_mm256_mul_ps(v[j + 3], id));
			sum = _mm256_add_epi32(sum, _mm256_add_epi32(_mm256_add_epi32(i0, i1),
								      _mm256_add_epi32(i2, i3)));
			/* packs work per 128-bit lane: undo the interleave */
			__m256i p = _mm256_packs_epi16(_mm256_packs_epi32(i0, i1), _mm256_packs_epi32(i2, i3));
			p = _mm256_permutevar8x32_epi32(p, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
			_mm256_storeu_si256((__m256i *)(qb + 8 * j), p);
		}
		__m128i s4 = _mm_add_epi32(_mm256_castsi256_si128(sum), _mm256_extracti128_si256(sum, 1));
		s4 = _mm_add_epi32(s4, _mm_shuffle_epi32(s4, 0x4e));
		s4 = _mm_add_epi32(s4, _mm_shuffle_epi32(s4, 0xb1));
		d[b] = a / 127.0f;
		sx[b] = d[b] * (float)_mm_cvtsi128_si32(s4);
	}
}

static int has_f16c(void)
{
	unsigned a, b, c, d;
	if (!__get_cpuid(1, &a, &b, &c, &d))
		return 0;
	return (int)((c >> 29) & 1);
}

static int have_avx2(void)
{
	static _Atomic int have = -1; /* every thread computes the same answer */
	int h = atomic_load_explicit(&have, memory_order_relaxed);
	if (h < 0) {
		__builtin_cpu_init();
		h = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && has_f16c();
		atomic_store_explicit(&have, h, memory_order_relaxed);
	}
	return h;
}

coli_q8_quant_fn coli_kernels_q8_avx2_quant(void)
{
	return have_avx2() ? quant_avx2 : NULL;
}

coli_q8_rows_fn coli_kernels_q8_avx2_rows(int qtype)
{
	if (!have_avx2())
		return NULL;
	switch (qtype) {
	case COLI_Q_INT8: return rows_q8_avx2;
	case COLI_Q_INT4: return rows_q4_avx2;
	default: return NULL;
	}
}

#else

coli_q8_quant_fn coli_kernels_q8_avx2_quant(void)
{
	return NULL;
}

coli_q8_rows_fn coli_kernels_q8_avx2_rows(int qtype)
{
	(void)qtype;
	return NULL;
}

#endif
