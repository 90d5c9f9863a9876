/* kernels_q8_avx512.c - AVX-512 VNNI row kernels for int8 activations
 * (kernels_q8.h; the arithmetic is defined by the portable kernels in
 * kernels_q8.c and reproduced here bit for bit).
 *
 * Per 64-weight block and row:
 *   INT4  the 32 packed bytes are broadcast to both halves of a zmm (a
 *         load-port uop) and ANDed with 0x0f in the low half, 0xf0 in the
 *         high half: elements 0..63 in x's order as unsigned bytes (the
 *         high ones times 16, taken out at the end), which is what
 *         vpdpbusd (u8 x s8) wants. Then vpdpbusd into a zeroed register
 *         (16 lane sums of 4 products), vcvtdq2ps, and one FMA by s_b =
 *         d_w * d_x read as a broadcast memory operand: 4 vector uops
 *         instead of the f32 kernel's 13.
 *   INT8  weights are signed: q + 128 goes to the unsigned side, and the
 *         vpdpbusd starts from -128 * (x's lane sums), computed once per
 *         block of x (q8_negc): XOR, vpdpbusd, convert, FMA per row.
 * The scales s_b of a chunk of blocks are computed ahead of the dot
 * products (int4: 16 blocks' half d and m per gather, as kernels_avx512.c
 * does), and int4's sum_b m_b * sx_b is 16 masked FMAs per 16 blocks.
 *
 * As in kernels_avx512.c: matvec takes rows in fours so each block of x is
 * loaded once per four rows, and prefetches the same place some rows
 * ahead; matmul works in panels that stay in L2, tiles of RT rows x KN
 * inputs, each unpacked weight block used for every input of the tile.
 * Per (row, input) the operations are the same in every variant. */
#include "config.h"

#include "kernels_q8.h"
#include "kernels_tiling.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))

#include <immintrin.h>

#include "kernels_avx512_inline.h"

#define TARGET_Q8_512 COLI_AVX512_TARGET ",avx512vnni"
#define AVX512 __attribute__((target(TARGET_Q8_512)))
#define AVX512_INLINE static inline __attribute__((always_inline, target(TARGET_Q8_512)))

/* Blocks whose scales are prepared ahead (a multiple of 16). The smallest:
 * the gathers of a chunk's scales then run just ahead of its dot products
 * instead of walking a whole row first. Streamed over a 1 GB ring of int4
 * matrices, 2 threads, huge pages, GB/s at 2048x6144 / 6144x2048 /
 * 16384x2048 / 6144x16384: 128 blocks 23.7 / 23.3 / 22.4 / 25.5; 64:
 * 24.6 / 23.5 / 23.2 / 25.2; 32: 24.2-24.9 / 24.3-24.4 / 23.9-24.5 /
 * 26.4-27.3; 16: 25.4 / 25.5 / 24.9 / 27.7. */
#define CHUNK 16
#define RT 4
#define KN_MAX 3
/* as kernels_avx512.c's input_group (same measurements there) */
static inline int input_group(int left)
{
	return left <= KN_MAX ? left : left == 4 || left == 7 ? 2 : KN_MAX;
}
/* matvec prefetch: the same place PF_ROWS rows ahead, within [8, 32] KiB
 * (kernels_avx512.c measured this rule for the same row layouts). */
#define PF_ROWS_Q4 COLI_PF_ROWS_Q4
#define PF_ROWS_Q8 COLI_PF_ROWS_Q8

AVX512_INLINE __mmask16 tail_mask(int left)
{
	return left >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << left) - 1u);
}

/* lane sums of one block times s, added to acc */
AVX512_INLINE __m512 lane_fma(__m512i isum, const float *s, __m512 acc)
{
	return _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum), _mm512_set1_ps(*s), acc);
}

/* ---- INT4 ---- */

/* the 32 packed bytes in both halves, the low half masked to the low
 * nibbles, the high half to the high nibbles (16 * nibble, which
 * kernels_q8.h's arithmetic takes back out of lanes 8..15 at the end) */
AVX512_INLINE __m512i q4_bytes(const uint8_t *q)
{
	__m512i v = _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)q));
	const __m512i m = _mm512_inserti64x4(_mm512_set1_epi8(0x0f), _mm256_set1_epi8((char)0xf0), 1);
	return _mm512_and_si512(v, m);
}

/* acc's lanes 8..15 carry 16 x their value (high nibbles): exact undo */
AVX512_INLINE float q4_hsum(__m512 acc, __m512 accm)
{
	const __m512 undo = _mm512_insertf32x8(_mm512_set1_ps(1.0f), _mm256_set1_ps(0.0625f), 1);
	return coli_avx512_hsum16(_mm512_mul_ps(acc, undo)) + coli_avx512_hsum16(accm);
}

/* Scales of blocks [0, cnt) of one row, cnt <= CHUNK, for KN inputs:
 * sbuf[k * CHUNK + b] = d_b * dx_k[b]; accm[k] lane b % 16 += m_b * sx_k[b]
 * (masked: lanes past cnt are left alone, not added a zero). */
AVX512_INLINE void q4_scales(const coli_block_q4 *blk, int cnt, const float *dx,
			     const float *sx, size_t kstride, const int KN, float *sbuf,
			     __m512 *accm)
{
	/* dword offsets of 16 blocks' (d, m) pairs: 36-byte stride */
	const __m512i idx = _mm512_setr_epi32(0, 9, 18, 27, 36, 45, 54, 63, 72, 81, 90, 99,
					      108, 117, 126, 135);
	for (int b = 0; b < cnt; b += 16) {
		__mmask16 k = tail_mask(cnt - b);
		__m512i v = _mm512_mask_i32gather_epi32(_mm512_setzero_si512(), k, idx, blk + b, 4);
		__m512 d = _mm512_cvtph_ps(_mm512_cvtepi32_epi16(v));
		__m512 m = _mm512_cvtph_ps(_mm512_cvtepi32_epi16(_mm512_srli_epi32(v, 16)));
#pragma GCC unroll 4
		for (int i = 0; i < KN; i++) {
			const float *dxi = dx + (size_t)i * kstride, *sxi = sx + (size_t)i * kstride;
			_mm512_storeu_ps(sbuf + (size_t)i * CHUNK + b,
					 _mm512_mul_ps(d, _mm512_maskz_loadu_ps(k, dxi + b)));
			accm[i] = _mm512_mask3_fmadd_ps(m, _mm512_maskz_loadu_ps(k, sxi + b), accm[i], k);
		}
	}
}

/* matvec: R rows (a constant after inlining) against one input. */
AVX512_INLINE void q4_rows(const coli_block_q4 *row0, int nb, const int R, const int8_t *qx,
			   const float *dx, const float *sx, size_t pf, float *y)
{
	float sbuf[4][CHUNK];
	__m512 acc[4], accm[4];
#pragma GCC unroll 4
	for (int i = 0; i < R; i++) {
		acc[i] = _mm512_setzero_ps();
		accm[i] = _mm512_setzero_ps();
	}
	for (int c0 = 0; c0 < nb; c0 += CHUNK) {
		int cn = nb - c0 < CHUNK ? nb - c0 : CHUNK;
#pragma GCC unroll 4
		for (int i = 0; i < R; i++)
			q4_scales(row0 + (size_t)i * (size_t)nb + c0, cn, dx + c0, sx + c0, 0, 1,
				  sbuf[i], &accm[i]);
		for (int b = 0; b < cn; b++) {
			__m512i xv = _mm512_load_si512(qx + (size_t)(c0 + b) * COLI_QK);
#pragma GCC unroll 4
			for (int i = 0; i < R; i++) {
				const coli_block_q4 *blk = row0 + (size_t)i * (size_t)nb + c0 + b;
				_mm_prefetch((const char *)blk + pf, _MM_HINT_T0);
				__m512i is = _mm512_dpbusd_epi32(_mm512_setzero_si512(), q4_bytes(blk->q), xv);
				acc[i] = lane_fma(is, &sbuf[i][b], acc[i]);
			}
		}
	}
	if (R == 4) {
		const __m512 undo = _mm512_insertf32x8(_mm512_set1_ps(1.0f), _mm256_set1_ps(0.0625f), 1);
		_mm_storeu_ps(y, _mm_add_ps(coli_avx512_hsum16x4(_mm512_mul_ps(acc[0], undo), _mm512_mul_ps(acc[1], undo),
								 _mm512_mul_ps(acc[2], undo), _mm512_mul_ps(acc[3], undo)),
					    coli_avx512_hsum16x4(accm[0], accm[1], accm[2], accm[3])));
		return;
	}
#pragma GCC unroll 4
	for (int i = 0; i < R; i++)
		y[i] = q4_hsum(acc[i], accm[i]);
}

/* matmul tile: rt <= RT rows x KN inputs; per (row, input) q4_rows' ops. */
AVX512_INLINE void q4_tile(const coli_block_q4 *row0, int nb, const int rt, const int8_t *qx,
			   const float *dx, const float *sx, const int KN, float *y, size_t ystride)
{
	float sbuf[RT][KN_MAX * CHUNK];
	__m512 acc[RT][KN_MAX], accm[RT][KN_MAX];
	size_t cols = (size_t)nb * COLI_QK;
#pragma GCC unroll 4
	for (int i = 0; i < rt; i++)
#pragma GCC unroll 4
		for (int k = 0; k < KN; k++) {
			acc[i][k] = _mm512_setzero_ps();
			accm[i][k] = _mm512_setzero_ps();
		}
	for (int c0 = 0; c0 < nb; c0 += CHUNK) {
		int cn = nb - c0 < CHUNK ? nb - c0 : CHUNK;
#pragma GCC unroll 4
		for (int i = 0; i < rt; i++)
			q4_scales(row0 + (size_t)i * (size_t)nb + c0, cn, dx + c0, sx + c0,
				  (size_t)nb, KN, sbuf[i], accm[i]);
		for (int b = 0; b < cn; b++) {
			__m512i xv[KN_MAX];
#pragma GCC unroll 4
			for (int k = 0; k < KN; k++)
				xv[k] = _mm512_load_si512(qx + (size_t)k * cols + (size_t)(c0 + b) * COLI_QK);
#pragma GCC unroll 4
			for (int i = 0; i < rt; i++) {
				const coli_block_q4 *blk = row0 + (size_t)i * (size_t)nb + c0 + b;
				_mm_prefetch((const char *)(blk + (size_t)RT * (size_t)nb), _MM_HINT_T1);
				__m512i wv = q4_bytes(blk->q);
#pragma GCC unroll 4
				for (int k = 0; k < KN; k++) {
					__m512i is = _mm512_dpbusd_epi32(_mm512_setzero_si512(), wv, xv[k]);
					acc[i][k] = lane_fma(is, &sbuf[i][k * CHUNK + b], acc[i][k]);
				}
			}
		}
	}
	/* lanes 8..15 of acc carry 16 x their value (q4_hsum) */
	const __m512 undo = _mm512_insertf32x8(_mm512_set1_ps(1.0f), _mm256_set1_ps(0.0625f), 1);
#define ACC(i, k) _mm512_mul_ps(acc[i][k], undo)
#define ACCM(i, k) accm[i][k]
	TILE_STORE(ACC, ACCM, 1, rt, KN, y, ystride);
#undef ACC
#undef ACCM
}

AVX512 static void rows_q4_vnni(const coli_qmat *w, const coli_q8act *a, int n, int r0, int r1,
				float *y)
{
	int nb = w->cols / COLI_QK;
	size_t cols = (size_t)w->cols, rows = (size_t)w->rows;
	const coli_block_q4 *W = w->data;
	if (n == 1) {
		size_t pf = coli_pf_bytes(nb * sizeof(coli_block_q4), PF_ROWS_Q4);
		int r = r0;
		for (; r + 4 <= r1; r += 4)
			q4_rows(W + (size_t)r * (size_t)nb, nb, 4, a->q, a->d, a->sx, pf, y + r);
		for (; r < r1; r++)
			q4_rows(W + (size_t)r * (size_t)nb, nb, 1, a->q, a->d, a->sx, pf, y + r);
		return;
	}
	int panel = coli_panel_rows(nb * sizeof(coli_block_q4), RT);
	for (int p0 = r0; p0 < r1; p0 += panel) {
		int p1 = r1 - p0 < panel ? r1 : p0 + panel;
		for (int k = 0, kn; k < n; k += kn) {
			kn = input_group(n - k);
			const int8_t *qx = a->q + (size_t)k * cols;
			const float *dx = a->d + (size_t)k * (size_t)nb, *sx = a->sx + (size_t)k * (size_t)nb;
			for (int r = p0; r < p1;) {
				/* whole tiles, then single rows: constant tile
				 * heights keep the accumulators in registers */
				int rt = p1 - r >= RT ? RT : 1;
				const coli_block_q4 *row0 = W + (size_t)r * (size_t)nb;
				float *yk = y + (size_t)k * rows + r;
#define CALL(RTc, KNc) q4_tile(row0, nb, RTc, qx, dx, sx, KNc, yk, rows)
				TILE_SWITCH(rt, kn, CALL)
#undef CALL
				r += rt;
			}
		}
	}
}

/* ---- INT8 ---- */

/* Signed weights through vpdpbusd (u8 x s8): q + 128 is unsigned, and
 * sum (q + 128) x - 128 sum x is the exact lane sum. -128 sum x per lane
 * (q8_negc) is computed once per block of x and is where each row's
 * vpdpbusd starts: per row an XOR and the vpdpbusd. */
AVX512_INLINE __m512i q8_negc(__m512i xv)
{
	__m512i c = _mm512_dpbusd_epi32(_mm512_setzero_si512(), _mm512_set1_epi8((char)0x80), xv);
	return _mm512_sub_epi32(_mm512_setzero_si512(), c);
}

AVX512_INLINE __m512i q8_isum(const int8_t *q, __m512i xv, __m512i negc)
{
	__m512i wu = _mm512_xor_si512(_mm512_loadu_si512(q), _mm512_set1_epi8((char)0x80));
	return _mm512_dpbusd_epi32(negc, wu, xv);
}

/* sbuf[k * CHUNK + b] = d_b * dx_k[b] for blocks [0, cnt) of one row and
 * KN inputs: 16 blocks' d per gather. (Scalar multiplies here would run
 * on port 0, which vpdpbusd and vcvtdq2ps already fill.) */
AVX512_INLINE void q8_scales(const coli_block_q8 *blk, int cnt, const float *dx, size_t kstride,
			     const int KN, float *sbuf)
{
	/* dword offsets of 16 blocks' d: 68-byte stride */
	const __m512i idx = _mm512_setr_epi32(0, 17, 34, 51, 68, 85, 102, 119, 136, 153, 170, 187,
					      204, 221, 238, 255);
	for (int b = 0; b < cnt; b += 16) {
		__mmask16 k = tail_mask(cnt - b);
		__m512 d = _mm512_mask_i32gather_ps(_mm512_setzero_ps(), k, idx, blk + b, 4);
#pragma GCC unroll 4
		for (int i = 0; i < KN; i++)
			_mm512_storeu_ps(sbuf + (size_t)i * CHUNK + b,
					 _mm512_mul_ps(d, _mm512_maskz_loadu_ps(k, dx + (size_t)i * kstride + b)));
	}
}

AVX512_INLINE void q8_rows(const coli_block_q8 *row0, int nb, const int R, const int8_t *qx,
			   const float *dx, size_t pf, float *y)
{
	float sbuf[4][CHUNK];
	__m512 acc[4];
#pragma GCC unroll 4
	for (int i = 0; i < R; i++)
		acc[i] = _mm512_setzero_ps();
	for (int c0 = 0; c0 < nb; c0 += CHUNK) {
		int cn = nb - c0 < CHUNK ? nb - c0 : CHUNK;
#pragma GCC unroll 4
		for (int i = 0; i < R; i++)
			q8_scales(row0 + (size_t)i * (size_t)nb + c0, cn, dx + c0, 0, 1, sbuf[i]);
		for (int b = 0; b < cn; b++) {
			__m512i xv = _mm512_load_si512(qx + (size_t)(c0 + b) * COLI_QK);
			__m512i negc = q8_negc(xv);
#pragma GCC unroll 4
			for (int i = 0; i < R; i++) {
				const coli_block_q8 *blk = row0 + (size_t)i * (size_t)nb + c0 + b;
				_mm_prefetch((const char *)blk + pf, _MM_HINT_T0);
				_mm_prefetch((const char *)blk + pf + 64, _MM_HINT_T0);
				acc[i] = lane_fma(q8_isum(blk->q, xv, negc), &sbuf[i][b], acc[i]);
			}
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

AVX512_INLINE void q8_tile(const coli_block_q8 *row0, int nb, const int rt, const int8_t *qx,
			   const float *dx, const int KN, float *y, size_t ystride)
{
	float sbuf[RT][KN_MAX * CHUNK];
	__m512 acc[RT][KN_MAX];
	size_t cols = (size_t)nb * COLI_QK;
#pragma GCC unroll 4
	for (int i = 0; i < rt; i++)
#pragma GCC unroll 4
		for (int k = 0; k < KN; k++)
			acc[i][k] = _mm512_setzero_ps();
	for (int c0 = 0; c0 < nb; c0 += CHUNK) {
		int cn = nb - c0 < CHUNK ? nb - c0 : CHUNK;
#pragma GCC unroll 4
		for (int i = 0; i < rt; i++)
			q8_scales(row0 + (size_t)i * (size_t)nb + c0, cn, dx + c0, (size_t)nb, KN, sbuf[i]);
		for (int b = 0; b < cn; b++) {
			__m512i xv[KN_MAX], negc[KN_MAX];
#pragma GCC unroll 4
			for (int k = 0; k < KN; k++) {
				xv[k] = _mm512_load_si512(qx + (size_t)k * cols + (size_t)(c0 + b) * COLI_QK);
				negc[k] = q8_negc(xv[k]);
			}
#pragma GCC unroll 4
			for (int i = 0; i < rt; i++) {
				const coli_block_q8 *blk = row0 + (size_t)i * (size_t)nb + c0 + b;
				_mm_prefetch((const char *)(blk + (size_t)RT * (size_t)nb), _MM_HINT_T1);
				_mm_prefetch((const char *)(blk + (size_t)RT * (size_t)nb) + 64, _MM_HINT_T1);
				__m512i wu = _mm512_xor_si512(_mm512_loadu_si512(blk->q), _mm512_set1_epi8((char)0x80));
#pragma GCC unroll 4
				for (int k = 0; k < KN; k++) {
					__m512i is = _mm512_dpbusd_epi32(negc[k], wu, xv[k]);
					acc[i][k] = lane_fma(is, &sbuf[i][k * CHUNK + b], acc[i][k]);
				}
			}
		}
	}
#define ACC(i, k) acc[i][k]
	TILE_STORE(ACC, ACC, 0, rt, KN, y, ystride);
#undef ACC
}

AVX512 static void rows_q8_vnni(const coli_qmat *w, const coli_q8act *a, int n, int r0, int r1,
				float *y)
{
	int nb = w->cols / COLI_QK;
	size_t cols = (size_t)w->cols, rows = (size_t)w->rows;
	const coli_block_q8 *W = w->data;
	if (n == 1) {
		size_t pf = coli_pf_bytes(nb * sizeof(coli_block_q8), PF_ROWS_Q8);
		int r = r0;
		for (; r + 4 <= r1; r += 4)
			q8_rows(W + (size_t)r * (size_t)nb, nb, 4, a->q, a->d, pf, y + r);
		for (; r < r1; r++)
			q8_rows(W + (size_t)r * (size_t)nb, nb, 1, a->q, a->d, pf, y + r);
		return;
	}
	int panel = coli_panel_rows(nb * sizeof(coli_block_q8), RT);
	for (int p0 = r0; p0 < r1; p0 += panel) {
		int p1 = r1 - p0 < panel ? r1 : p0 + panel;
		for (int k = 0, kn; k < n; k += kn) {
			kn = input_group(n - k);
			const int8_t *qx = a->q + (size_t)k * cols;
			const float *dx = a->d + (size_t)k * (size_t)nb;
			for (int r = p0; r < p1;) {
				/* whole tiles, then single rows: constant tile
				 * heights keep the accumulators in registers */
				int rt = p1 - r >= RT ? RT : 1;
				const coli_block_q8 *row0 = W + (size_t)r * (size_t)nb;
				float *yk = y + (size_t)k * rows + r;
#define CALL(RTc, KNc) q8_tile(row0, nb, RTc, qx, dx, KNc, yk, rows)
				TILE_SWITCH(rt, kn, CALL)
#undef CALL
				r += rt;
			}
		}
	}
}

/* ---- quantization of x (kernels_q8.h's rule; x * id never exceeds
 * 127.5 in magnitude, so the conversion, which rounds to nearest even in
 * the default mode, needs no clamp) ---- */

/* vfpclassps categories: QNaN 0x01, +inf 0x08, -inf 0x10, SNaN 0x80 */
#define NONFINITE_CLS 0x99

AVX512 static void quant_vnni(const float *x, int nb, int8_t *q, float *d, float *sx)
{
	for (int b = 0; b < nb; b++) {
		const float *xb = x + (size_t)b * COLI_QK;
		__m512 v[4];
		__m512 amax = _mm512_setzero_ps();
		__mmask16 bad = 0;
#pragma GCC unroll 4
		for (int j = 0; j < 4; j++) {
			v[j] = _mm512_loadu_ps(xb + 16 * j);
			amax = _mm512_max_ps(amax, _mm512_abs_ps(v[j]));
			bad |= _mm512_fpclass_ps_mask(v[j], NONFINITE_CLS);
		}
		float a = _mm512_reduce_max_ps(amax);
		int8_t *qb = q + (size_t)b * COLI_QK;
		if (bad || a < 0x1p-100f) {
			_mm512_storeu_si512(qb, _mm512_setzero_si512());
			d[b] = sx[b] = bad ? __builtin_nanf("") : 0.0f;
			continue;
		}
		__m512 id = _mm512_set1_ps(127.0f / a);
		__m512i sum = _mm512_setzero_si512();
#pragma GCC unroll 4
		for (int j = 0; j < 4; j++) {
			__m512i iv = _mm512_cvtps_epi32(_mm512_mul_ps(v[j], id));
			sum = _mm512_add_epi32(sum, iv);
			_mm_storeu_si128((__m128i *)(qb + 16 * j), _mm512_cvtsepi32_epi8(iv));
		}
		d[b] = a / 127.0f;
		sx[b] = d[b] * (float)_mm512_reduce_add_epi32(sum);
	}
}

/* kernels_avx512.c's CPU check (AVX-512 F/BW/VL/DQ, AVX2, FMA, F16C;
 * cached there) plus VNNI. */
static int have_vnni(void)
{
	return coli_kernels_avx512_rows(COLI_Q_F32) != NULL && __builtin_cpu_supports("avx512vnni");
}

coli_q8_quant_fn coli_kernels_q8_avx512_quant(void)
{
	return have_vnni() ? quant_vnni : NULL;
}

coli_q8_rows_fn coli_kernels_q8_avx512_rows(int qtype)
{
	if (!have_vnni())
		return NULL;
	switch (qtype) {
	case COLI_Q_INT8: return rows_q8_vnni;
	case COLI_Q_INT4: return rows_q4_vnni;
	default: return NULL;
	}
}

#else

coli_q8_quant_fn coli_kernels_q8_avx512_quant(void)
{
	return NULL;
}

coli_q8_rows_fn coli_kernels_q8_avx512_rows(int qtype)
{
	(void)qtype;
	return NULL;
}

#endif
