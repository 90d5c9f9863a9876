/* quant_kernels_avx512_inline.h - the AVX-512 target, the fixed-order lane
 * sums and the matmul tile plumbing shared by quant_kernels_avx512.c and
 * quant_kernels_q8_avx512.c (the q8 file's
 * target adds VNNI, a superset, so these inline into both).
 * Include inside the x86-64 GCC/clang region, after <immintrin.h>. */
#ifndef COLI_KERNELS_AVX512_INLINE_H
#define COLI_KERNELS_AVX512_INLINE_H

#define COLI_AVX512_TARGET "avx512f,avx512bw,avx512vl,avx512dq,avx2,fma,f16c"

/* Fixed-order horizontal sum of 16 lanes: halves, then quarters, then
 * pairs (h_i = v_i + v_(i+8), s_i = h_i + h_(i+4), (s_0 + s_2) + (s_1 + s_3)),
 * the tree quant_kernels.h's accuracy bound and quant_kernels_q8.h's arithmetic name. */
static inline __attribute__((always_inline, target(COLI_AVX512_TARGET))) float coli_avx512_hsum16(__m512 v)
{
	__m256 h = _mm256_add_ps(_mm512_castps512_ps256(v), _mm512_extractf32x8_ps(v, 1));
	__m128 s = _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
	s = _mm_add_ps(s, _mm_movehl_ps(s, s));
	s = _mm_add_ss(s, _mm_shuffle_ps(s, s, 1));
	return _mm_cvtss_f32(s);
}

/* Four fixed-order sums at once: lane i of the result is
 * coli_avx512_hsum16 of the i-th argument, bit for bit. Each sum meets the
 * same operands in the same tree (only the registers and lanes holding
 * the partial sums differ), in 10 vector uops for four sums instead of 8
 * uops for one: with rows of 256 columns (4 blocks) the lane sums were a
 * third of a product's work. */
static inline __attribute__((always_inline, target(COLI_AVX512_TARGET))) __m128
coli_avx512_hsum16x4(__m512 a, __m512 b, __m512 c, __m512 d)
{
	/* h_i = v_i + v_(i+8): [h_a | h_b], [h_c | h_d] */
	__m512 ab = _mm512_add_ps(_mm512_shuffle_f32x4(a, b, 0x44), _mm512_shuffle_f32x4(a, b, 0xee));
	__m512 cd = _mm512_add_ps(_mm512_shuffle_f32x4(c, d, 0x44), _mm512_shuffle_f32x4(c, d, 0xee));
	/* s_i = h_i + h_(i+4): one quarter per argument */
	__m512 s = _mm512_add_ps(_mm512_shuffle_f32x4(ab, cd, 0x88), _mm512_shuffle_f32x4(ab, cd, 0xdd));
	/* (s_0 + s_2) and (s_1 + s_3) in lanes 0 and 1 of each quarter, then
	 * their sum in lane 0 */
	s = _mm512_add_ps(s, _mm512_permute_ps(s, 0xee));
	s = _mm512_add_ps(s, _mm512_permute_ps(s, 0x55));
	const __m512i lane0 = _mm512_setr_epi32(0, 4, 8, 12, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0);
	return _mm512_castps512_ps128(_mm512_permutexvar_ps(lane0, s));
}

/* The matmul tile instantiations of quant_kernels_avx512.c and
 * quant_kernels_q8_avx512.c: RT rows (the including file's macro), or 1 for the
 * rows left over, by kn <= 3 inputs, both constants inside the tile. */
#define TILE_SWITCH(rt, kn, CALL)                                                  \
	switch ((kn) * 8 + (rt)) {                                                 \
	case 1 * 8 + RT: CALL(RT, 1); break;                                       \
	case 2 * 8 + RT: CALL(RT, 2); break;                                       \
	case 3 * 8 + RT: CALL(RT, 3); break;                                       \
	case 2 * 8 + 1: CALL(1, 2); break;                                         \
	case 3 * 8 + 1: CALL(1, 3); break;                                         \
	default: CALL(1, 1); break;                                                \
	}

/* y[k * ystride + i] = the lane sums of v(i, k) (+ those of w(i, k) when
 * has_w), for a tile of rt rows x KN inputs: four sums per
 * coli_avx512_hsum16x4, each the bits of coli_avx512_hsum16. */
#define TILE_STORE(v, w, has_w, rt, KN, y, ystride)                                  \
	do {                                                                          \
		_Pragma("GCC unroll 4") for (int k_ = 0; k_ < (KN); k_++)             \
		{                                                                     \
			float *y_ = (y) + (size_t)k_ * (ystride);                     \
			if ((rt) == 4) {                                              \
				__m128 s_ = coli_avx512_hsum16x4(v(0, k_), v(1, k_), v(2, k_), v(3, k_)); \
				if (has_w)                                            \
					s_ = _mm_add_ps(s_, coli_avx512_hsum16x4(w(0, k_), w(1, k_), w(2, k_), w(3, k_))); \
				_mm_storeu_ps(y_, s_);                                \
				continue;                                             \
			}                                                             \
			for (int i_ = 0; i_ < (rt); i_++)                             \
				y_[i_] = (has_w) ? coli_avx512_hsum16(v(i_, k_)) + coli_avx512_hsum16(w(i_, k_)) \
						 : coli_avx512_hsum16(v(i_, k_));     \
		}                                                                     \
	} while (0)

#endif
