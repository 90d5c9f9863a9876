/* kernels_avx512_inline.h - the AVX-512 target and the fixed-order lane
 * sum shared by kernels_avx512.c and kernels_q8_avx512.c (the q8 file's
 * target adds VNNI, a superset, so these inline into both).
 * Include inside the x86-64 GCC/clang region, after <immintrin.h>. */
#ifndef COLI_KERNELS_AVX512_INLINE_H
#define COLI_KERNELS_AVX512_INLINE_H

#define COLI_AVX512_TARGET "avx512f,avx512bw,avx512vl,avx512dq,avx2,fma,f16c"

/* Fixed-order horizontal sum of 16 lanes: halves, then quarters, then
 * pairs (h_i = v_i + v_(i+8), s_i = h_i + h_(i+4), (s_0 + s_2) + (s_1 + s_3)),
 * the tree kernels.h's accuracy bound and kernels_q8.h's arithmetic name. */
static inline __attribute__((always_inline, target(COLI_AVX512_TARGET))) float coli_avx512_hsum16(__m512 v)
{
	__m256 h = _mm256_add_ps(_mm512_castps512_ps256(v), _mm512_extractf32x8_ps(v, 1));
	__m128 s = _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
	s = _mm_add_ps(s, _mm_movehl_ps(s, s));
	s = _mm_add_ss(s, _mm_shuffle_ps(s, s, 1));
	return _mm_cvtss_f32(s);
}

#endif
