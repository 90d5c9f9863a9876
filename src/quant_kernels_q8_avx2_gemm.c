/* quant_kernels_q8_avx2_gemm.c - the AVX2 int4 x int8 product of n >= 2
 * inputs (quant_kernels_q8.h's arithmetic, bit for bit; the rows of one L2
 * panel per call, from quant_kernels_q8_avx2_rows.h's row loop).
 *
 * Why not that header's tile loop: a block of 8 rows unpacked to nibbles
 * is 16 ymm, all that AVX2 has, so there the compiler kept them on the
 * stack and reloaded one per vpmaddubsw, and each input's x was split
 * anew (8 vpshufd) for every group of 8 rows. On the Zen 3 this was tuned
 * on, vpmaddubsw issues 2 a cycle and so do 256-bit loads: a product
 * needs one fresh operand from memory per vpmaddubsw at best, so the
 * kernel is shaped so that that is all it loads.
 *
 * Here one quad (4 rows) of a block stays in registers, lo[4] and hi[4]
 * (8 ymm), while the inputs pass two at a time. The quad's 32 bytes of
 * nibbles per row are transposed by qwords: W[j] = qword j of rows 0, 1
 * (lane 0) and of rows 2, 3 (lane 1). So an input's operand is qword j of
 * its quantized x (lo nibbles) or qword 4 + j (hi nibbles) broadcast to
 * all four places, one vpbroadcastq straight from the q8act rows: no
 * table of split x, no shuffle per input. After vpmaddwd each row has two
 * adjacent int32 partial sums (the even and odd dwords of its qwords);
 * two vshufps and an add join a pair of inputs into one ymm:
 *   (r0 k, r1 k, r0 k+1, r1 k+1 | r2 k, r3 k, r2 k+1, r3 k+1)
 * and the float steps are done once for those 8 outputs, each lane doing
 * the scalar ones (s = d_w * d_x, acc = fma(I, s, acc), accm = fma(m,
 * sx, accm)); the scales are laid out the same way. The accumulators of
 * Q4G_ROWS rows x Q4G_KT inputs live in L1 (2 ymm per quad and pair), so
 * the blocks still enter every output's chains in ascending order, and
 * the per-quad work (load, transpose, nibbles, scales) is shared by
 * Q4G_KT inputs. */
#include "config.h"

#include "quant_kernels_q8.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))

#include <immintrin.h>
#include <stddef.h>
#include <string.h>

#define GEMM_ATTR __attribute__((target("avx2,fma,f16c")))
#define GEMM_INLINE static inline __attribute__((always_inline, target("avx2,fma,f16c")))

/* Rows per pass over the blocks and inputs per pass over the rows: their
 * accumulators (Q4G_ROWS / 4 x Q4G_KT / 2 x 64 bytes = 16 KiB) in L1.
 * Measured with bench/matmul_rows_bench at 2048 x 6144 (bench/README.md). */
#define Q4G_ROWS 64
#define Q4G_KT 32
#define Q4G_PAIRS (Q4G_KT / 2)

/* A pair of inputs' scales per block, in the lanes of the joined sums:
 * (k, k, k + 1, k + 1) in both 128-bit lanes. */
typedef struct q4g_scales {
	__m256 d, sx;
} q4g_scales;

/* A block of the pass's inputs, copied together: read in place, rows of x
 * 6144 bytes apart fall into two L1 sets (6144 / 64 = 96 lines, 32 mod
 * 64) and evict each other. */
typedef struct q4g_xblock {
	__m256i q[Q4G_KT][8]; /* qword j of an input's block, broadcast */
} q4g_xblock;

GEMM_INLINE __m256 pair_lanes(float a, float b)
{
	const __m128 v = _mm_setr_ps(a, a, b, b);
	return _mm256_setr_m128(v, v);
}

/* The quad's block (rows at bb + off[i]) as lo[j], hi[j]: nibbles of
 * qword j of rows 0, 1 (lane 0) and rows 2, 3 (lane 1). */
GEMM_INLINE void quad_nibbles(const char *q, const size_t off[4], __m256i lo[4], __m256i hi[4])
{
	__m256i r[4];
#pragma GCC unroll 4
	for (int i = 0; i < 4; i++)
		r[i] = _mm256_loadu_si256((const __m256i *)(q + off[i]));
	/* r[i] = (Q0, Q1 | Q2, Q3) of row i */
	const __m256i u0 = _mm256_unpacklo_epi64(r[0], r[1]); /* r0Q0 r1Q0 | r0Q2 r1Q2 */
	const __m256i u1 = _mm256_unpackhi_epi64(r[0], r[1]); /* r0Q1 r1Q1 | r0Q3 r1Q3 */
	const __m256i u2 = _mm256_unpacklo_epi64(r[2], r[3]);
	const __m256i u3 = _mm256_unpackhi_epi64(r[2], r[3]);
	__m256i W[4];
	W[0] = _mm256_permute2x128_si256(u0, u2, 0x20);
	W[1] = _mm256_permute2x128_si256(u1, u3, 0x20);
	W[2] = _mm256_permute2x128_si256(u0, u2, 0x31);
	W[3] = _mm256_permute2x128_si256(u1, u3, 0x31);
	const __m256i m4 = _mm256_set1_epi8(0x0f);
#pragma GCC unroll 4
	for (int j = 0; j < 4; j++) {
		lo[j] = _mm256_and_si256(W[j], m4);
		hi[j] = _mm256_and_si256(_mm256_srli_epi16(W[j], 4), m4);
	}
}

/* The quad's d and m, laid out as the joined sums: (r0, r1, r0, r1 | r2,
 * r3, r2, r3). */
GEMM_INLINE void quad_scales(const char *bb, const size_t off[4], __m256 *dw, __m256 *mw)
{
	int32_t dm[4];
#pragma GCC unroll 4
	for (int i = 0; i < 4; i++)
		memcpy(&dm[i], bb + off[i], sizeof dm[i]);
	/* (d, m) halves of 4 rows -> the 4 d halves, then the 4 m halves */
	const __m128i split = _mm_setr_epi8(0, 1, 4, 5, 8, 9, 12, 13, 2, 3, 6, 7, 10, 11, 14, 15);
	const __m128i h = _mm_shuffle_epi8(_mm_setr_epi32(dm[0], dm[1], dm[2], dm[3]), split);
	const __m128 d4 = _mm_cvtph_ps(h), m4 = _mm_cvtph_ps(_mm_unpackhi_epi64(h, h));
	*dw = _mm256_setr_m128(_mm_movelh_ps(d4, d4), _mm_movehl_ps(d4, d4));
	*mw = _mm256_setr_m128(_mm_movelh_ps(m4, m4), _mm_movehl_ps(m4, m4));
}

/* An input's int32 sums for the quad: two adjacent partials per row.
 * One int16 chain per half of the block (|.| <= 4 * 2 * 15 * 127 each,
 * and their sum <= 30480: exact); the empty asm keeps them chains, which
 * the compiler otherwise turned into a tree whose partial sums took the
 * registers that lo and hi need. */
GEMM_INLINE __m256i bcast_q(const int8_t *x, int j)
{
	long long v;
	memcpy(&v, x + 8 * j, sizeof v);
	return _mm256_set1_epi64x(v); /* one vpbroadcastq from memory */
}

GEMM_INLINE __m256i quad_dot(const __m256i lo[4], const __m256i hi[4], const __m256i *X,
			     __m256i ones)
{
	__m256i s = _mm256_maddubs_epi16(lo[0], X[0]);
	__m256i t = _mm256_maddubs_epi16(hi[0], X[4]);
#pragma GCC unroll 3
	for (int j = 1; j < 4; j++) {
		__asm__("" : "+x"(s), "+x"(t));
		s = _mm256_add_epi16(s, _mm256_maddubs_epi16(lo[j], X[j]));
		t = _mm256_add_epi16(t, _mm256_maddubs_epi16(hi[j], X[4 + j]));
	}
	return _mm256_madd_epi16(_mm256_add_epi16(s, t), ones);
}

/* Two inputs' sums (a: input k, b: input k + 1) joined: (r0 k, r1 k,
 * r0 k+1, r1 k+1 | r2 k, r3 k, r2 k+1, r3 k+1), exact int32 adds. */
GEMM_INLINE __m256i join_pair(__m256i a, __m256i b)
{
	const __m256 fa = _mm256_castsi256_ps(a), fb = _mm256_castsi256_ps(b);
	const __m256i even = _mm256_castps_si256(_mm256_shuffle_ps(fa, fb, _MM_SHUFFLE(2, 0, 2, 0)));
	const __m256i odd = _mm256_castps_si256(_mm256_shuffle_ps(fa, fb, _MM_SHUFFLE(3, 1, 3, 1)));
	return _mm256_add_epi32(even, odd);
}

/* Four floats of y (cnt <= 4 of them). */
GEMM_INLINE void store4(float *y, __m128 v, int cnt)
{
	if (cnt == 4) {
		_mm_storeu_ps(y, v);
		return;
	}
	const __m128i mask = _mm_cmpgt_epi32(_mm_set1_epi32(cnt), _mm_setr_epi32(0, 1, 2, 3));
	_mm_maskstore_ps(y, mask, v);
}

GEMM_ATTR void coli_kernels_q8_avx2_q4_gemm(const coli_qmat *w, const coli_q8act *a, int n, int r0,
					   int r1, float *y)
{
	const int nb = w->cols / COLI_QK;
	const size_t row_bytes = (size_t)nb * sizeof(coli_block_q4);
	const __m256i ones = _mm256_set1_epi16(1);
	/* lanes (k, r0..r3 | k + 1, r0..r3) out of the joined layout */
	const __m256i unjoin = _mm256_setr_epi32(0, 1, 4, 5, 2, 3, 6, 7);
	_Alignas(32) q4g_scales sc[Q4G_PAIRS];
	q4g_xblock xb;
	_Alignas(32) __m256 acc[Q4G_ROWS / 4][Q4G_PAIRS], accm[Q4G_ROWS / 4][Q4G_PAIRS];
	/* passes of equal size (35 inputs: 18 + 17, not 32 + 3): the quads'
	 * work is shared by the inputs of a pass */
	const int passes = (n + Q4G_KT - 1) / Q4G_KT;
	const int per = ((n + passes - 1) / passes + 1) & ~1;
	for (int k0 = 0; k0 < n; k0 += per) {
		const int kn = n - k0 < per ? n - k0 : per, np = (kn + 1) / 2;
		for (int s0 = r0; s0 < r1; s0 += Q4G_ROWS) {
			const int s1 = r1 - s0 < Q4G_ROWS ? r1 : s0 + Q4G_ROWS, nq = (s1 - s0 + 3) / 4;
			for (int q = 0; q < nq; q++)
				for (int p = 0; p < np; p++)
					acc[q][p] = accm[q][p] = _mm256_setzero_ps();
			for (int b = 0; b < nb; b++) {
				/* an odd count repeats the last input (its lane is not stored) */
				for (int p = 0; p < np; p++) {
					const size_t i0 = (size_t)(k0 + 2 * p) * (size_t)nb + (size_t)b;
					const size_t i1 = 2 * p + 1 < kn ? i0 + (size_t)nb : i0;
					for (int j = 0; j < 8; j++) {
						xb.q[2 * p][j] = bcast_q(a->q + i0 * COLI_QK, j);
						xb.q[2 * p + 1][j] = bcast_q(a->q + i1 * COLI_QK, j);
					}
					sc[p].d = pair_lanes(a->d[i0], a->d[i1]);
					sc[p].sx = pair_lanes(a->sx[i0], a->sx[i1]);
				}
				for (int q = 0; q < nq; q++) {
					const int r = s0 + 4 * q, cnt = s1 - r < 4 ? s1 - r : 4;
					const char *bb = (const char *)w->data + (size_t)r * row_bytes +
							 (size_t)b * sizeof(coli_block_q4);
					size_t off[4];
#pragma GCC unroll 4
					for (int i = 0; i < 4; i++) {
						off[i] = (size_t)(i < cnt ? i : cnt - 1) * row_bytes;
						_mm_prefetch(bb + off[i] + 4 * sizeof(coli_block_q4), _MM_HINT_T0);
					}
					__m256 dw, mw;
					__m256i lo[4], hi[4];
					quad_scales(bb, off, &dw, &mw);
					quad_nibbles(bb + offsetof(coli_block_q4, q), off, lo, hi);
					for (int p = 0; p < np; p++) {
						const __m256i I = join_pair(quad_dot(lo, hi, xb.q[2 * p], ones),
									    quad_dot(lo, hi, xb.q[2 * p + 1], ones));
						const __m256 s = _mm256_mul_ps(dw, sc[p].d);
						acc[q][p] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(I), s, acc[q][p]);
						accm[q][p] = _mm256_fmadd_ps(mw, sc[p].sx, accm[q][p]);
					}
				}
			}
			for (int q = 0; q < nq; q++) {
				const int r = s0 + 4 * q, cnt = s1 - r < 4 ? s1 - r : 4;
				for (int p = 0; p < np; p++) {
					const __m256 v = _mm256_permutevar8x32_ps(
						_mm256_add_ps(acc[q][p], accm[q][p]), unjoin);
					const size_t k = (size_t)(k0 + 2 * p);
					store4(y + k * (size_t)w->rows + (size_t)r, _mm256_castps256_ps128(v), cnt);
					if (2 * p + 1 < kn)
						store4(y + (k + 1) * (size_t)w->rows + (size_t)r,
						       _mm256_extractf128_ps(v, 1), cnt);
				}
			}
		}
	}
}

#endif
