/* quant_kernels_q8_avx512.c - AVX-512 VNNI row kernels for int8 activations
 * (quant_kernels_q8.h; the arithmetic is defined by the portable kernels in
 * quant_kernels_q8.c and reproduced here bit for bit).
 *
 * The lanes of a register are 16 ROWS of the weight matrix, each lane
 * running quant_kernels_q8.h's scalar chain for its row (acc = fma(I_b, s_b,
 * acc), b ascending). Per group of 16 rows and block b:
 *   - the rows' packed bytes are transposed in registers to dwords of 16
 *     rows (W_j: dword j of every row), int4's nibbles split into 16
 *     registers of unsigned bytes (low: elements 4j..4j+3, high: 32+4j..),
 *     int8's 16 dwords flipped to q + 128;
 *   - for every input of the pass, 16 vpdpbusd take W_j against x's 4-byte
 *     group broadcast from memory (exact int32 I_b of 16 rows in 4 short
 *     chains), then ONE convert, multiply by d_w * d_x and FMA serve the 16
 *     rows, where the old lane-per-element layout paid them per row.
 * So the transpose (about 60 vector ops per 16 rows and block) is paid
 * once per pass of up to Q8_PASS inputs; decode (n = 1) pays it every
 * block and is bound by memory anyway. The d (and m) of the 16 rows come
 * in one gather per block. Rows past the end of a thread's range are
 * zeros in the lanes and never stored. */
#include "config.h"

#include "quant_kernels_q8.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))

#include <immintrin.h>
#include <string.h>

#include "quant_kernels_avx512_inline.h"
#include "quant_kernels_q8_avx512_blocks.h"

#define TARGET_Q8_512 COLI_AVX512_TARGET ",avx512vnni"
#define AVX512 __attribute__((target(TARGET_Q8_512)))
#define AVX512_INLINE static inline __attribute__((always_inline, target(TARGET_Q8_512)))

/* inputs per pass over a group of rows: their accumulators (2 x 64 B
 * each) live on the stack; the transpose is redone once per pass */
#define Q8_PASS 64
#define GROUP 16
/* A group's 16 rows are read as 16 interleaved streams, 36 or 68 bytes a
 * block step each, which the hardware prefetchers follow poorly. But a
 * group's bytes are contiguous, so the next group is prefetched into L2
 * as one linear stream, a block step's worth of lines per step (the
 * prefetches past the matrix's end are harmless: prefetches do not
 * fault). matmul_rows_bench n = 1, out of cache (16384 x 6144): 1.40-1.87
 * ns per block against 2.05-2.16 with each row prefetched 216 bytes
 * ahead into L1 and 2.71-2.83 for the old kernels; the same linear
 * stream into L1 was the slowest, 2.88-2.99 (a group of long rows is
 * larger than L1). */
AVX512_INLINE void group_prefetch(const void *row0, int nb, size_t blk_bytes, int b)
{
	const size_t step = GROUP * blk_bytes;
	const char *p = (const char *)row0 + GROUP * (size_t)nb * blk_bytes + (size_t)b * step;
	for (size_t l = 0; l < step; l += 64)
		_mm_prefetch(p + l, _MM_HINT_T1);
}

/* x's 4-byte group at p, broadcast (vpdpbusd's m32bcst operand) */
AVX512_INLINE __m512i bcast4(const int8_t *p)
{
	int32_t v;
	memcpy(&v, p, sizeof v);
	return _mm512_set1_epi32(v);
}

/* ---- INT4 ---- */

/* I_b of the 16 rows against one input's block xb, exact int32, added to
 * init (0 for int4; -128 sum(qx) for int8's offset form) */
AVX512_INLINE __m512i dot16(const __m512i W[16], const int8_t *xb, __m512i init)
{
	__m512i s0 = init, s1 = _mm512_setzero_si512(), s2 = s1, s3 = s1;
#pragma GCC unroll 4
	for (int j = 0; j < 4; j++) {
		s0 = _mm512_dpbusd_epi32(s0, W[j], bcast4(xb + 4 * j));
		s1 = _mm512_dpbusd_epi32(s1, W[j + 4], bcast4(xb + 16 + 4 * j));
		s2 = _mm512_dpbusd_epi32(s2, W[j + 8], bcast4(xb + 32 + 4 * j));
		s3 = _mm512_dpbusd_epi32(s3, W[j + 12], bcast4(xb + 48 + 4 * j));
	}
	return _mm512_add_epi32(_mm512_add_epi32(s0, s1), _mm512_add_epi32(s2, s3));
}

/* dot16 of four inputs (xb + i * stride, each added to init[i]) in eight
 * chains, two each: the four inputs' chains interleaved give the core
 * independent work that one input's four chains did not (matmul_rows_bench
 * gemm, int4 2048 x 6144 here: n = 32 0.43 -> 0.47 of the vpdpbusd peak) */
AVX512_INLINE void dot16x4(const __m512i W[16], const int8_t *xb, size_t stride, const __m512i init[4],
			   __m512i o[4])
{
	__m512i s[4][2];
#pragma GCC unroll 4
	for (int i = 0; i < 4; i++) {
		s[i][0] = init[i];
		s[i][1] = _mm512_setzero_si512();
	}
#pragma GCC unroll 8
	for (int j = 0; j < 8; j++)
#pragma GCC unroll 4
		for (int i = 0; i < 4; i++) {
			const int8_t *p = xb + (size_t)i * stride;
			s[i][0] = _mm512_dpbusd_epi32(s[i][0], W[j], bcast4(p + 16 * (j / 4) + 4 * (j % 4)));
			s[i][1] = _mm512_dpbusd_epi32(s[i][1], W[j + 8], bcast4(p + 32 + 16 * (j / 4) + 4 * (j % 4)));
		}
#pragma GCC unroll 4
	for (int i = 0; i < 4; i++)
		o[i] = _mm512_add_epi32(s[i][0], s[i][1]);
}

/* Inputs [k0, k0 + kn) against the group of nr rows at row0; y points at
 * the group's first row of input 0. KN: kn as a constant (1 keeps the
 * chains in registers), or 0 for a run-time kn <= Q8_PASS. */
AVX512_INLINE void q4_group(const coli_block_q4 *row0, int nb, const int FULL, int nr,
			    const coli_q8act *a, int k0, const int KN, int kn, float *y,
			    size_t ystride)
{
	__m512 acc[Q8_PASS], accm[Q8_PASS];
	const int cnt = KN ? KN : kn;
	const size_t cols = (size_t)nb * COLI_QK;
	for (int k = 0; k < cnt; k++)
		acc[k] = accm[k] = _mm512_setzero_ps();
	for (int b = 0; b < nb; b++) {
		__m512i W[16];
		__m512 dv, mv;
		group_prefetch(row0, nb, sizeof *row0, b);
		q4_block(row0 + b, nb, FULL, nr, W, &dv, &mv);
		int k = 0;
		for (; k + 4 <= cnt; k += 4) {
			const size_t kb = (size_t)(k0 + k) * (size_t)nb + (size_t)b;
			const __m512i zero[4] = { _mm512_setzero_si512(), _mm512_setzero_si512(),
						  _mm512_setzero_si512(), _mm512_setzero_si512() };
			__m512i is[4];
			dot16x4(W, a->q + (size_t)(k0 + k) * cols + (size_t)b * COLI_QK, cols, zero, is);
#pragma GCC unroll 4
			for (int i = 0; i < 4; i++) {
				__m512 s = _mm512_mul_ps(dv, _mm512_set1_ps(a->d[kb + (size_t)i * nb]));
				acc[k + i] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(is[i]), s, acc[k + i]);
				accm[k + i] = _mm512_fmadd_ps(mv, _mm512_set1_ps(a->sx[kb + (size_t)i * nb]), accm[k + i]);
			}
		}
		for (; k < cnt; k++) {
			const size_t kb = (size_t)(k0 + k) * (size_t)nb + (size_t)b;
			__m512i is = dot16(W, a->q + (size_t)(k0 + k) * cols + (size_t)b * COLI_QK,
					   _mm512_setzero_si512());
			__m512 s = _mm512_mul_ps(dv, _mm512_set1_ps(a->d[kb]));
			acc[k] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(is), s, acc[k]);
			accm[k] = _mm512_fmadd_ps(mv, _mm512_set1_ps(a->sx[kb]), accm[k]);
		}
	}
	/* lanes back to row order (q4_perm is its own inverse) */
	const __m512i back = q4_perm();
	const __mmask16 st = rows_mask(nr);
	for (int k = 0; k < cnt; k++)
		_mm512_mask_storeu_ps(y + (size_t)(k0 + k) * ystride, st,
				      _mm512_permutexvar_ps(back, _mm512_add_ps(acc[k], accm[k])));
}

/* ---- INT8 ---- */

AVX512_INLINE void q8_group(const coli_block_q8 *row0, int nb, const int FULL, int nr,
			    const coli_q8act *a, int k0, const int KN, int kn, float *y,
			    size_t ystride)
{
	__m512 acc[Q8_PASS];
	const int cnt = KN ? KN : kn;
	const size_t cols = (size_t)nb * COLI_QK;
	for (int k = 0; k < cnt; k++)
		acc[k] = _mm512_setzero_ps();
	for (int b = 0; b < nb; b++) {
		__m512i W[16];
		__m512 dv;
		group_prefetch(row0, nb, sizeof *row0, b);
		q8_block(row0 + b, nb, FULL, nr, 1, W, &dv); /* q + 128 */
		int k = 0;
		for (; k + 4 <= cnt; k += 4) {
			const size_t kb = (size_t)(k0 + k) * (size_t)nb + (size_t)b;
			__m512i init[4], is[4];
#pragma GCC unroll 4
			for (int i = 0; i < 4; i++)
				init[i] = _mm512_set1_epi32(-128 * a->qs[kb + (size_t)i * nb]);
			dot16x4(W, a->q + (size_t)(k0 + k) * cols + (size_t)b * COLI_QK, cols, init, is);
#pragma GCC unroll 4
			for (int i = 0; i < 4; i++) {
				__m512 s = _mm512_mul_ps(dv, _mm512_set1_ps(a->d[kb + (size_t)i * nb]));
				acc[k + i] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(is[i]), s, acc[k + i]);
			}
		}
		for (; k < cnt; k++) {
			const size_t kb = (size_t)(k0 + k) * (size_t)nb + (size_t)b;
			/* sum (q + 128) x - 128 sum x */
			__m512i is = dot16(W, a->q + (size_t)(k0 + k) * cols + (size_t)b * COLI_QK,
					   _mm512_set1_epi32(-128 * a->qs[kb]));
			__m512 s = _mm512_mul_ps(dv, _mm512_set1_ps(a->d[kb]));
			acc[k] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(is), s, acc[k]);
		}
	}
	const __mmask16 st = rows_mask(nr);
	for (int k = 0; k < cnt; k++)
		_mm512_mask_storeu_ps(y + (size_t)(k0 + k) * ystride, st, acc[k]);
}

/* ---- both weight types ---- */

/* One group of 16 rows (or the last nr) and one pass of inputs: the
 * constants FULL, KN, INT4 pick the specialized copy. */
AVX512_INLINE void group_run(const void *row0, int nb, const int FULL, int nr, const coli_q8act *a,
			     int k0, const int KN, int kn, float *y, size_t ystride, const int INT4)
{
	if (INT4)
		q4_group(row0, nb, FULL, nr, a, k0, KN, kn, y, ystride);
	else
		q8_group(row0, nb, FULL, nr, a, k0, KN, kn, y, ystride);
}

/* Rows [r0, r1) in groups of 16, inputs in passes of Q8_PASS; decode (one
 * input) and whole groups get their own specialized copies. The passes
 * are the outer loop: a pass's inputs (Q8_PASS x cols bytes) stay in L2
 * while the groups stream by, where n = 256 inputs (1.5 MB at 6144
 * columns) re-read from further away for every group cost 0.43 -> 0.45
 * of the peak at n = 256. */
AVX512_INLINE void rows_vnni(const coli_qmat *w, const coli_q8act *a, int n, int r0, int r1, float *y,
			     const int INT4)
{
	const int nb = w->cols / COLI_QK;
	const size_t rows = (size_t)w->rows;
	const size_t row_bytes = (size_t)nb * (INT4 ? sizeof(coli_block_q4) : sizeof(coli_block_q8));
	for (int k0 = 0; k0 < n; k0 += Q8_PASS) {
		const int kn = n - k0 < Q8_PASS ? n - k0 : Q8_PASS;
		for (int g = r0; g < r1; g += GROUP) {
			const int nr = r1 - g < GROUP ? r1 - g : GROUP;
			const char *row0 = (const char *)w->data + (size_t)g * row_bytes;
			if (nr == GROUP && kn == 1)
				group_run(row0, nb, 1, GROUP, a, k0, 1, 1, y + g, rows, INT4);
			else if (nr == GROUP)
				group_run(row0, nb, 1, GROUP, a, k0, 0, kn, y + g, rows, INT4);
			else
				group_run(row0, nb, 0, nr, a, k0, 0, kn, y + g, rows, INT4);
		}
	}
}

AVX512 static void rows_q4_vnni(const coli_qmat *w, const coli_q8act *a, int n, int r0, int r1,
				float *y)
{
	rows_vnni(w, a, n, r0, r1, y, 1);
}

AVX512 static void rows_q8_vnni(const coli_qmat *w, const coli_q8act *a, int n, int r0, int r1,
				float *y)
{
	rows_vnni(w, a, n, r0, r1, y, 0);
}

/* ---- quantization of x (quant_kernels_q8.h's rule; x * id never exceeds
 * 127.5 in magnitude, so the conversion, which rounds to nearest even in
 * the default mode, needs no clamp) ---- */

/* vfpclassps categories: QNaN 0x01, +inf 0x08, -inf 0x10, SNaN 0x80 */
#define NONFINITE_CLS 0x99

AVX512 static void quant_vnni(const float *x, int nb, int8_t *q, float *d, float *sx,
			       int32_t *qs)
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
			qs[b] = 0;
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
		qs[b] = _mm512_reduce_add_epi32(sum);
		sx[b] = d[b] * (float)qs[b];
	}
}

/* quant_kernels_avx512.c's CPU check (AVX-512 F/BW/VL/DQ, AVX2, FMA, F16C;
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
	return coli_q8_rows_pick(have_vnni(), qtype, rows_q8_vnni, rows_q4_vnni);
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
