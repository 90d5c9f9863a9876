/* quant_kernels_q8_avx512_blocks.h - the weight transposes of a group of 16
 * rows that the AVX-512 VNNI rows (quant_kernels_q8_avx512.c) and the AMX
 * rows (quant_kernels_q8_amx.c) share: block b of the 16 rows as 16
 * registers of dwords, W[j] = dword j of every row (lane i: row i, in
 * q4_perm() order for int4), the layout vpdpbusd takes in registers and
 * tdpbssd/tdpbsud as the B tile (W[j] its row j), with the rows' scales
 * gathered beside. Not a header for other modules.
 * Include inside the x86-64 GCC/clang region, after <immintrin.h> and
 * quant_kernels_avx512_inline.h (the includers' targets are supersets of
 * COLI_AVX512_TARGET, so these inline into both). */
#ifndef COLI_KERNELS_Q8_AVX512_BLOCKS_H
#define COLI_KERNELS_Q8_AVX512_BLOCKS_H

#define Q8B_INLINE static inline __attribute__((always_inline, target(COLI_AVX512_TARGET)))

/* The lanes of the group's first nr rows. */
Q8B_INLINE __mmask16 rows_mask(int nr)
{
	return nr >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << nr) - 1u);
}

/* Four rows' registers R[0..3] -> U[c], c = 0..3: in each 128-bit lane,
 * element c of that lane of the four rows, in row order (the first two
 * stages of a dword transpose, both weight types) */
Q8B_INLINE void dword_quad(const __m512i R[4], __m512i U[4])
{
	__m512i t0 = _mm512_unpacklo_epi32(R[0], R[1]), t1 = _mm512_unpackhi_epi32(R[0], R[1]);
	__m512i t2 = _mm512_unpacklo_epi32(R[2], R[3]), t3 = _mm512_unpackhi_epi32(R[2], R[3]);
	U[0] = _mm512_unpacklo_epi64(t0, t2);
	U[1] = _mm512_unpackhi_epi64(t0, t2);
	U[2] = _mm512_unpacklo_epi64(t1, t3);
	U[3] = _mm512_unpackhi_epi64(t1, t3);
}

/* ---- INT4 ---- */

/* Lane l of the int4 transpose holds row q4_perm()[l] of the group: rows i
 * and i + 8 share a register before the transpose (one 256-bit half
 * each), which saves two shuffle stages and leaves this order (its own
 * inverse: the same permutation puts the lanes back in row order). */
Q8B_INLINE __m512i q4_perm(void)
{
	return _mm512_setr_epi32(0, 1, 2, 3, 8, 9, 10, 11, 4, 5, 6, 7, 12, 13, 14, 15);
}

/* Block b of the group's nr rows (row stride nb blocks) as 16 registers
 * of unsigned nibbles W[j] (j < 8: low nibbles, elements 4j..4j+3; j >= 8:
 * high, 32 + 4(j - 8)..; lanes in q4_perm() order; rows >= nr are 0),
 * and their d and m as floats. FULL (a constant): nr is 16. */
Q8B_INLINE void q4_block(const coli_block_q4 *blk, int nb, const int FULL, int nr,
			 __m512i W[16], __m512 *dv, __m512 *mv)
{
	__m512i R[8], U[2][4];
	const size_t rs = (size_t)nb;
#pragma GCC unroll 8
	for (int i = 0; i < 8; i++) {
		__m256i lo = FULL || i < nr ? _mm256_loadu_si256((const __m256i *)blk[(size_t)i * rs].q)
					    : _mm256_setzero_si256();
		__m256i hi = FULL || i + 8 < nr
				     ? _mm256_loadu_si256((const __m256i *)blk[(size_t)(i + 8) * rs].q)
				     : _mm256_setzero_si256();
		R[i] = _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1);
	}
	/* U[q][c], 128-bit lane L: rows 4q..4q+3 (L = 0, 1) or 8+4q.. (L = 2,
	 * 3) of dword c (L even) or c + 4 (L odd) */
	dword_quad(R, U[0]);
	dword_quad(R + 4, U[1]);
	const __m512i m4 = _mm512_set1_epi8(0x0f);
#pragma GCC unroll 4
	for (int c = 0; c < 4; c++) {
		__m512i d0 = _mm512_shuffle_i32x4(U[0][c], U[1][c], _MM_SHUFFLE(2, 0, 2, 0));
		__m512i d4 = _mm512_shuffle_i32x4(U[0][c], U[1][c], _MM_SHUFFLE(3, 1, 3, 1));
		W[c] = _mm512_and_si512(d0, m4);
		W[c + 4] = _mm512_and_si512(d4, m4);
		W[c + 8] = _mm512_and_si512(_mm512_srli_epi32(d0, 4), m4);
		W[c + 12] = _mm512_and_si512(_mm512_srli_epi32(d4, 4), m4);
	}
	/* (d, m) pairs of the 16 rows: 36-byte blocks, 9 dwords */
	const int s9 = 9 * nb;
	const __m512i idx = _mm512_mullo_epi32(q4_perm(), _mm512_set1_epi32(s9));
	__mmask16 k = FULL ? (__mmask16)0xffff
			   : _mm512_cmplt_epi32_mask(q4_perm(), _mm512_set1_epi32(nr));
	__m512i v = _mm512_mask_i32gather_epi32(_mm512_setzero_si512(), k, idx, blk, 4);
	*dv = _mm512_cvtph_ps(_mm512_cvtepi32_epi16(v));
	*mv = _mm512_cvtph_ps(_mm512_cvtepi32_epi16(_mm512_srli_epi32(v, 16)));
}

/* ---- INT8 ---- */

/* Block b of the group's nr rows as 16 registers of dwords (dword j of
 * every row, lanes in row order; rows >= nr are 0), signed as stored or,
 * with PLUS128 (a constant, vpdpbusd's unsigned operand), q + 128; and
 * their d. */
Q8B_INLINE void q8_block(const coli_block_q8 *blk, int nb, const int FULL, int nr, const int PLUS128,
			 __m512i W[16], __m512 *dv)
{
	__m512i R[16], U[4][4], V[2][4][2];
	const size_t rs = (size_t)nb;
#pragma GCC unroll 16
	for (int i = 0; i < 16; i++)
		R[i] = FULL || i < nr ? _mm512_loadu_si512(blk[(size_t)i * rs].q) : _mm512_setzero_si512();
	/* U[q][c], 128-bit lane L: rows 4q..4q+3, dword 4L + c */
#pragma GCC unroll 4
	for (int q = 0; q < 4; q++)
		dword_quad(R + 4 * q, U[q]);
	/* V[h][c][0]: lanes (quad 2h lane 0, quad 2h lane 2, quad 2h+1 lane 0,
	 * quad 2h+1 lane 2); V[h][c][1] the same with lanes 1 and 3 */
#pragma GCC unroll 2
	for (int h = 0; h < 2; h++)
#pragma GCC unroll 4
		for (int c = 0; c < 4; c++) {
			V[h][c][0] = _mm512_shuffle_i32x4(U[2 * h][c], U[2 * h + 1][c], _MM_SHUFFLE(2, 0, 2, 0));
			V[h][c][1] = _mm512_shuffle_i32x4(U[2 * h][c], U[2 * h + 1][c], _MM_SHUFFLE(3, 1, 3, 1));
		}
	const __m512i off = _mm512_set1_epi8((char)0x80);
#pragma GCC unroll 4
	for (int c = 0; c < 4; c++) {
		/* dword 4L + c of rows 0..15 in order */
		W[c] = _mm512_shuffle_i32x4(V[0][c][0], V[1][c][0], _MM_SHUFFLE(2, 0, 2, 0));
		W[c + 8] = _mm512_shuffle_i32x4(V[0][c][0], V[1][c][0], _MM_SHUFFLE(3, 1, 3, 1));
		W[c + 4] = _mm512_shuffle_i32x4(V[0][c][1], V[1][c][1], _MM_SHUFFLE(2, 0, 2, 0));
		W[c + 12] = _mm512_shuffle_i32x4(V[0][c][1], V[1][c][1], _MM_SHUFFLE(3, 1, 3, 1));
		if (PLUS128) {
			W[c] = _mm512_xor_si512(W[c], off);
			W[c + 4] = _mm512_xor_si512(W[c + 4], off);
			W[c + 8] = _mm512_xor_si512(W[c + 8], off);
			W[c + 12] = _mm512_xor_si512(W[c + 12], off);
		}
	}
	/* d of the 16 rows: 68-byte blocks, 17 dwords */
	const __m512i idx = _mm512_mullo_epi32(
		_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
		_mm512_set1_epi32(17 * nb));
	*dv = _mm512_mask_i32gather_ps(_mm512_setzero_ps(), rows_mask(FULL ? 16 : nr), idx, blk, 4);
}

#endif
