/* quant_kernels_q8_avx2.c - AVX2 + FMA + F16C row kernels for int8 activations
 * (quant_kernels_q8.h; the arithmetic is defined by the portable kernels in
 * quant_kernels_q8.c and reproduced here bit for bit). The row loops (8 rows in
 * the lanes of a ymm, blocks transposed to dwords of the 8 rows, x's
 * 4-byte groups broadcast) are quant_kernels_q8_avx2_rows.h's; this file gives
 * the integer block sums.
 *
 * vpmaddubsw (u8 x s8, adjacent pairs summed to int16) then vpmaddwd with
 * ones (adjacent int16 pairs to int32): exact while no int16 overflows.
 * int4: nibbles <= 15, so a pair is at most 2 * 15 * 127 = 3810 in
 * magnitude and 8 vpmaddubsw results can be added as int16 (<= 30480)
 * before one vpmaddwd: two per block instead of 16. int8 weights go as
 * |w| (<= 128) with their sign moved onto x (vpsignb): pairs at most
 * 2 * 128 * 127 = 32512, each widened by its own vpmaddwd. Also the
 * quantizer of x for both 256-bit paths. */
#include "config.h"

#include "quant_kernels_q8.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))

#include <immintrin.h>
#include <math.h>

#define Q8_TARGET "avx2,fma,f16c"
#define Q8_SFX avx2
#define Q8_NP 8

/* lo = low nibbles, hi = high nibbles (shifted down) of w's bytes. */
static inline __attribute__((always_inline, target(Q8_TARGET))) void
q4_prep(const __m256i w[4], __m256i lo[4], __m256i hi[4])
{
	const __m256i m4 = _mm256_set1_epi8(0x0f);
#pragma GCC unroll 4
	for (int j = 0; j < 4; j++) {
		lo[j] = _mm256_and_si256(w[j], m4);
		hi[j] = _mm256_and_si256(_mm256_srli_epi16(w[j], 4), m4);
	}
}

static inline __attribute__((always_inline, target(Q8_TARGET))) __m256i
q4_dot(const __m256i lo[4], const __m256i hi[4], const __m256i X[8])
{
	/* an int16 sum of 8 pair sums: |.| <= 8 * 3810, exact */
	__m256i a = _mm256_maddubs_epi16(lo[0], X[0]), b = _mm256_maddubs_epi16(hi[0], X[4]);
#pragma GCC unroll 3
	for (int j = 1; j < 4; j++) {
		a = _mm256_add_epi16(a, _mm256_maddubs_epi16(lo[j], X[j]));
		b = _mm256_add_epi16(b, _mm256_maddubs_epi16(hi[j], X[4 + j]));
	}
	return _mm256_madd_epi16(_mm256_add_epi16(a, b), _mm256_set1_epi16(1));
}

static inline __attribute__((always_inline, target(Q8_TARGET))) __m256i q8_init(int32_t qs)
{
	(void)qs;
	return _mm256_setzero_si256();
}

/* p[j] = |w_j| (unsigned), p[4 + j] = w_j (its sign, for x) */
static inline __attribute__((always_inline, target(Q8_TARGET))) void
q8_prep(const __m256i w[4], __m256i p[Q8_NP])
{
#pragma GCC unroll 4
	for (int j = 0; j < 4; j++) {
		p[j] = _mm256_abs_epi8(w[j]);
		p[4 + j] = w[j];
	}
}

static inline __attribute__((always_inline, target(Q8_TARGET))) __m256i
q8_dot(const __m256i p[Q8_NP], const __m256i X[4], __m256i acc)
{
	/* |w| times x with w's sign: pairs <= 32512, each widened */
	const __m256i one = _mm256_set1_epi16(1);
#pragma GCC unroll 4
	for (int j = 0; j < 4; j++)
		acc = _mm256_add_epi32(
			acc, _mm256_madd_epi16(_mm256_maddubs_epi16(p[j], _mm256_sign_epi8(X[j], p[4 + j])),
					       one));
	return acc;
}

/* int4 products of n >= 2 inputs: quant_kernels_q8_avx2_gemm.c */
#define Q8_Q4_GEMM coli_kernels_q8_avx2_q4_gemm

#include "quant_kernels_q8_avx2_rows.h"

/* ---- quantization of x: quant_kernels_q8.h's rule, as quant_kernels_q8_avx512.c ---- */

Q8_ATTR static void quant_avx2(const float *x, int nb, int8_t *q, float *d, float *sx,
				 int32_t *qs)
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
			qs[b] = 0;
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
		qs[b] = _mm_cvtsi128_si32(s4);
		sx[b] = d[b] * (float)qs[b];
	}
}

/* quant_kernels_avx2.c's CPU check (AVX2, FMA, F16C; cached there). */
static int have_avx2(void)
{
	return coli_kernels_avx2_rows(COLI_Q_F32) != NULL;
}

coli_q8_quant_fn coli_kernels_q8_avx2_quant(void)
{
	return have_avx2() ? quant_avx2 : NULL;
}

coli_q8_rows_fn coli_kernels_q8_avx2_rows(int qtype)
{
	return coli_q8_rows_pick(have_avx2(), qtype, rows_q8_avx2, rows_q4_avx2);
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
