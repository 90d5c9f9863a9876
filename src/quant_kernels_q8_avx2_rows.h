/* quant_kernels_q8_avx2_rows.h - the 256-bit row kernels of quant_kernels_q8.h, shared
 * by quant_kernels_q8_avx2.c (vpmaddubsw + vpmaddwd) and quant_kernels_q8_avxvnni.c
 * (AVX-VNNI vpdpbusd); not a header for other modules.
 *
 * Why 8 rows in the lanes: quant_kernels_q8.h's arithmetic is one float chain
 * per output, so a register holds 8 outputs (rows r..r+7 of one input)
 * and every lane does the portable kernel's scalar steps: the block's
 * exact integer sum I_b, s_b = d_w * d_x (vmulps), acc = fma(I_b, s_b, acc)
 * (vfmadd, one rounding as fmaf), int4's accm = fma(m_b, sx_b, accm), and
 * y = acc + accm once at the end. The float work of a block is then done
 * once for 8 rows. The weights are row-major, so per group of 8 rows and
 * block the 8 rows' 32-byte runs of q are loaded and transposed as an 8x8
 * matrix of dwords: dword j of the 8 rows meets x's bytes 4j..4j+3 (and
 * 32 + 4j.. for int4's high nibbles, and for the second half of an int8
 * block), the same in every lane. The transpose is done only halfway, a
 * quad of rows at a time (transpose4, 2 shuffles per row): rows 0..3 hold
 * dwords j and j + 4 in their two 128-bit halves, so x's groups come from
 * one vpshufd of x (x_split) and the two halves of the int32 sums are
 * added once per input (join), not once per dword. It is done once per
 * block and group and serves a tile of inputs; n = 1 (decode) pays it per
 * block and runs a quad (and for int8 half a block) at a time, so that
 * its operands stay in the 16 registers. The 8 rows' scales are scalar
 * loads (col_dwords): vpgatherdd, microcoded on AMD, took 16% of int8
 * decode on Zen 4.
 *
 * Included once per file, after the includer defines:
 *   Q8_TARGET  the target attribute string of the functions below
 *   Q8_SFX     the suffix of the two row functions (rows_q4_SFX, rows_q8_SFX)
 *   Q8_NP      ymm registers of a prepared int8 block (q8_prep)
 *   q4_prep(w, lo, hi)   w[4] = an int4 block's q of a quad of rows as
 *                        transpose4 leaves it: whatever q4_dot needs
 *                        (lo[4], hi[4])
 *   q4_dot(lo, hi, X)    X[8] = x's block as x_split leaves it: the
 *                        quad's int32 halves; join() of the two quads'
 *                        is I_b of the 8 rows
 *   q8_init(qs)          the start of each quad's sums for an int8 block
 *                        whose x sums to qs
 *   q8_prep(w, p)        w[4] = half an int8 block (bytes 0..31 or
 *                        32..63) of a quad as transpose4 leaves it:
 *                        p[Q8_NP]
 *   q8_dot(p, X, acc)    acc plus that half's sums (X[4] = x_split4 of
 *                        the same half of x)
 * and may define Q8_Q4_GEMM(w, a, n, p0, p1, y): its own int4 product of
 * n >= 2 inputs for the rows [p0, p1) of one panel.
 * Rows past the end of [r0, r1) in the last group repeat the last row (its
 * loads stay in bounds) and are not stored (vmaskmovps): a lane's result
 * depends only on its own row.
 *
 * Matmul (n > 1): panels of rows that stay in L2 (quant_kernels_tiling.h), the
 * inputs in tiles of Q8_KT whose accumulators live on the stack; each
 * panel is streamed from memory once per call and each block transposed
 * once per tile of inputs. */

#define Q8_ATTR __attribute__((target(Q8_TARGET)))
#define Q8_INLINE static inline __attribute__((always_inline, target(Q8_TARGET)))
#define Q8_CAT2(a, b) a##b
#define Q8_CAT(a, b) Q8_CAT2(a, b)
#define Q8_FN(name) Q8_CAT(name, Q8_SFX)

#include <string.h>

#include "quant_kernels_tiling.h"

/* Inputs per tile: their accumulators (2 ymm each) on the stack, their x
 * (Q8_KT * cols bytes) in L2 beside the weight panel. */
#define Q8_KT 16

/* r[i] = 8 dwords of row i (i < 4) -> half transposed: r[j] = dword j of
 * rows 0..3 in 128-bit lane 0 and dword j + 4 of rows 0..3 in lane 1
 * (a quad; the 8 rows of a group are two). Two shuffles per row; the lane swap
 * that would finish the transpose is left to join(), once per input on
 * the int32 sums instead of once per dword. */
Q8_INLINE void transpose4(__m256i r[4])
{
	__m256i t0 = _mm256_unpacklo_epi32(r[0], r[1]), t1 = _mm256_unpackhi_epi32(r[0], r[1]);
	__m256i t2 = _mm256_unpacklo_epi32(r[2], r[3]), t3 = _mm256_unpackhi_epi32(r[2], r[3]);
	r[0] = _mm256_unpacklo_epi64(t0, t2);
	r[1] = _mm256_unpackhi_epi64(t0, t2);
	r[2] = _mm256_unpacklo_epi64(t1, t3);
	r[3] = _mm256_unpackhi_epi64(t1, t3);
}

/* The 32 bytes at p + off[i] for rows i = 0..3, half transposed: a quad. */
Q8_INLINE void load_t4(const char *p, const size_t off[4], __m256i r[4])
{
#pragma GCC unroll 4
	for (int i = 0; i < 4; i++)
		r[i] = _mm256_loadu_si256((const __m256i *)(p + off[i]));
	transpose4(r);
}

/* The same for rows 0..7: two quads. */
Q8_INLINE void load_t8(const char *p, const size_t off[8], __m256i r[8])
{
	load_t4(p, off, r);
	load_t4(p, off + 4, r + 4);
}

/* 32 bytes of x in the layout of transpose8: X[j] = x's dword j in 128-bit
 * lane 0 and dword j + 4 in lane 1. */
Q8_INLINE void x_split4(const int8_t *xb, __m256i X[4])
{
	const __m256i x = _mm256_load_si256((const __m256i *)xb);
	X[0] = _mm256_shuffle_epi32(x, 0x00);
	X[1] = _mm256_shuffle_epi32(x, 0x55);
	X[2] = _mm256_shuffle_epi32(x, 0xaa);
	X[3] = _mm256_shuffle_epi32(x, 0xff);
}

/* x's block: X[0..3] from bytes 0..31, X[4..7] from bytes 32..63. */
Q8_INLINE void x_split(const int8_t *xb, __m256i X[8])
{
	x_split4(xb, X);
	x_split4(xb + 32, X + 4);
}

/* The dword at p + off[i] of rows i = 0..7 (a block's scales): scalar
 * loads and inserts, cheaper than vpgatherdd where it is microcoded. */
Q8_INLINE __m256i col_dwords(const char *p, const size_t off[8])
{
	int32_t v[8];
#pragma GCC unroll 8
	for (int i = 0; i < 8; i++)
		memcpy(&v[i], p + off[i], sizeof v[i]);
	return _mm256_setr_epi32(v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7]);
}

/* Rows 0..3 (A) and 4..7 (B), each as the two 128-bit halves of their
 * sums: I of rows 0..7 (exact int32 additions). */
Q8_INLINE __m256i join(__m256i A, __m256i B)
{
	return _mm256_add_epi32(_mm256_permute2x128_si256(A, B, 0x20),
				_mm256_permute2x128_si256(A, B, 0x31));
}

/* Rows g..g+cnt-1 of w (cnt <= 8): the first one's address, the byte
 * offsets of the 8 from it (rows past cnt repeat the last one, so their
 * loads stay in bounds) and the store mask. */
struct group8 {
	const char *base;
	size_t off[8];
	__m256i mask;
	int cnt;
};

Q8_INLINE void group_rows(struct group8 *G, const coli_qmat *w, size_t blk_bytes, int g, int cnt)
{
	const size_t row_bytes = (size_t)(w->cols / COLI_QK) * blk_bytes;
	int32_t m[8];
	G->base = (const char *)w->data + (size_t)g * row_bytes;
	G->cnt = cnt;
	for (int i = 0; i < 8; i++) {
		G->off[i] = (size_t)(i < cnt ? i : cnt - 1) * row_bytes;
		m[i] = i < cnt ? -1 : 0;
	}
	G->mask = _mm256_loadu_si256((const __m256i *)m);
}

/* v's lanes as rows g.. of input k of y (Y[n][w->rows]). */
Q8_INLINE void store_rows(const struct group8 *G, const coli_qmat *w, int g, int k, float *y, __m256 v)
{
	y += (size_t)k * (size_t)w->rows + (size_t)g;
	if (G->cnt == 8)
		_mm256_storeu_ps(y, v);
	else
		_mm256_maskstore_ps(y, G->mask, v);
}

/* Prefetch distance: the same block of the next group of 8 rows, far
 * enough ahead for small rows (quant_kernels_tiling.h's minimum). */
static size_t group_pf(size_t row_bytes)
{
	size_t g = 8 * row_bytes;
	return g >= COLI_PF_MIN ? g : (COLI_PF_MIN + g - 1) / g * g;
}

static int panel_rows(size_t row_bytes, int n)
{
	return n == 1 ? 1 << 30 : coli_panel_rows(row_bytes, 8);
}

/* ---- INT4 ---- */

/* Rows g..g+cnt-1 (cnt <= 8), inputs k0..k0+kn-1 (kn <= Q8_KT). */
Q8_INLINE void q4_group(const coli_qmat *w, const coli_q8act *a, int g, int cnt, int k0, int kn,
			size_t pf, float *y)
{
	const int nb = w->cols / COLI_QK;
	struct group8 G;
	group_rows(&G, w, sizeof(coli_block_q4), g, cnt);
	/* (d, m) dwords -> d halves in 128-bit lane 0, m halves in lane 1 */
	const __m256i dmsplit = _mm256_setr_epi8(0, 1, 4, 5, 8, 9, 12, 13, 2, 3, 6, 7, 10, 11, 14, 15,
						 0, 1, 4, 5, 8, 9, 12, 13, 2, 3, 6, 7, 10, 11, 14, 15);
	__m256 acc[Q8_KT], accm[Q8_KT];
	for (int kk = 0; kk < kn; kk++)
		acc[kk] = accm[kk] = _mm256_setzero_ps();
	for (int b = 0; b < nb; b++) {
		const char *bb = G.base + (size_t)b * sizeof(coli_block_q4);
#pragma GCC unroll 8
		for (int i = 0; i < 8; i++)
			_mm_prefetch(bb + G.off[i] + pf, _MM_HINT_T0);
		__m256i dm = col_dwords(bb, G.off);
		dm = _mm256_permute4x64_epi64(_mm256_shuffle_epi8(dm, dmsplit), 0xd8);
		const __m256 dw = _mm256_cvtph_ps(_mm256_castsi256_si128(dm));
		const __m256 mw = _mm256_cvtph_ps(_mm256_extracti128_si256(dm, 1));
		if (kn == 1) {
			/* decode: one quad of rows at a time, fewer registers live */
			const size_t i = (size_t)k0 * (size_t)nb + (size_t)b;
			__m256i X[8], AB[2];
			x_split(a->q + i * COLI_QK, X);
#pragma GCC unroll 2
			for (int h = 0; h < 2; h++) {
				__m256i t[4], lo[4], hi[4];
				load_t4(bb + offsetof(coli_block_q4, q), G.off + 4 * h, t);
				q4_prep(t, lo, hi);
				AB[h] = q4_dot(lo, hi, X);
			}
			__m256 s = _mm256_mul_ps(dw, _mm256_set1_ps(a->d[i]));
			acc[0] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(join(AB[0], AB[1])), s, acc[0]);
			accm[0] = _mm256_fmadd_ps(mw, _mm256_set1_ps(a->sx[i]), accm[0]);
			continue;
		}
		/* the block prepared once for the tile of inputs */
		__m256i t[8], lo[8], hi[8];
		load_t8(bb + offsetof(coli_block_q4, q), G.off, t);
		q4_prep(t, lo, hi);
		q4_prep(t + 4, lo + 4, hi + 4);
		for (int kk = 0; kk < kn; kk++) {
			const size_t i = (size_t)(k0 + kk) * (size_t)nb + (size_t)b;
			__m256i X[8];
			x_split(a->q + i * COLI_QK, X);
			const __m256i s32 = join(q4_dot(lo, hi, X), q4_dot(lo + 4, hi + 4, X));
			__m256 s = _mm256_mul_ps(dw, _mm256_set1_ps(a->d[i]));
			acc[kk] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s32), s, acc[kk]);
			accm[kk] = _mm256_fmadd_ps(mw, _mm256_set1_ps(a->sx[i]), accm[kk]);
		}
	}
	for (int kk = 0; kk < kn; kk++)
		store_rows(&G, w, g, k0 + kk, y, _mm256_add_ps(acc[kk], accm[kk]));
}

/* ---- INT8 ---- */

Q8_INLINE void q8_group(const coli_qmat *w, const coli_q8act *a, int g, int cnt, int k0, int kn,
			size_t pf, float *y)
{
	const int nb = w->cols / COLI_QK;
	struct group8 G;
	group_rows(&G, w, sizeof(coli_block_q8), g, cnt);
	__m256 acc[Q8_KT];
	for (int kk = 0; kk < kn; kk++)
		acc[kk] = _mm256_setzero_ps();
	for (int b = 0; b < nb; b++) {
		const char *bb = G.base + (size_t)b * sizeof(coli_block_q8);
		/* one line per row and block (68 bytes): the block's last one,
		 * mostly the next block's first */
#pragma GCC unroll 8
		for (int i = 0; i < 8; i++)
			_mm_prefetch(bb + G.off[i] + pf + 64, _MM_HINT_T0);
		const __m256 dw = _mm256_castsi256_ps(col_dwords(bb, G.off));
		if (kn == 1) {
			/* decode: half a block (32 bytes) of a quad of rows at a
			 * time, the operands in registers */
			const size_t i = (size_t)k0 * (size_t)nb + (size_t)b;
			__m256i AB[2];
			AB[0] = AB[1] = q8_init(a->qs[i]);
#pragma GCC unroll 2
			for (int h = 0; h < 2; h++) {
				__m256i X[4];
				x_split4(a->q + i * COLI_QK + 32 * h, X);
#pragma GCC unroll 2
				for (int q = 0; q < 2; q++) {
					__m256i t[4], p[Q8_NP];
					load_t4(bb + offsetof(coli_block_q8, q) + 32 * h, G.off + 4 * q, t);
					q8_prep(t, p);
					AB[q] = q8_dot(p, X, AB[q]);
				}
			}
			__m256 s = _mm256_mul_ps(dw, _mm256_set1_ps(a->d[i]));
			acc[0] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(join(AB[0], AB[1])), s, acc[0]);
			continue;
		}
		/* the whole block prepared once for the tile of inputs: p[h][q]
		 * = half h of quad q */
		__m256i p[2][2][Q8_NP];
#pragma GCC unroll 2
		for (int h = 0; h < 2; h++) {
			__m256i t[8];
			load_t8(bb + offsetof(coli_block_q8, q) + 32 * h, G.off, t);
			q8_prep(t, p[h][0]);
			q8_prep(t + 4, p[h][1]);
		}
		for (int kk = 0; kk < kn; kk++) {
			const size_t i = (size_t)(k0 + kk) * (size_t)nb + (size_t)b;
			__m256i X[8];
			x_split(a->q + i * COLI_QK, X);
			__m256i A = q8_init(a->qs[i]), B = A;
			A = q8_dot(p[0][0], X, A);
			B = q8_dot(p[0][1], X, B);
			A = q8_dot(p[1][0], X + 4, A);
			B = q8_dot(p[1][1], X + 4, B);
			__m256 s = _mm256_mul_ps(dw, _mm256_set1_ps(a->d[i]));
			acc[kk] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(join(A, B)), s, acc[kk]);
		}
	}
	for (int kk = 0; kk < kn; kk++)
		store_rows(&G, w, g, k0 + kk, y, acc[kk]);
}

/* ---- both weight types ---- */

/* Rows [r0, r1) in panels, inputs in tiles of Q8_KT, rows in groups of 8;
 * INT4 (a constant) picks the weight type. */
Q8_INLINE void rows_256(const coli_qmat *w, const coli_q8act *a, int n, int r0, int r1, float *y,
			const int INT4)
{
	const size_t row_bytes =
		(size_t)(w->cols / COLI_QK) * (INT4 ? sizeof(coli_block_q4) : sizeof(coli_block_q8));
	const size_t pf = group_pf(row_bytes);
	const int panel = panel_rows(row_bytes, n);
	for (int p0 = r0; p0 < r1; p0 += panel) {
		const int p1 = r1 - p0 < panel ? r1 : p0 + panel;
#ifdef Q8_Q4_GEMM
		if (INT4 && n > 1) { /* the includer's own int4 matmul */
			Q8_Q4_GEMM(w, a, n, p0, p1, y);
			continue;
		}
#endif
		for (int k0 = 0; k0 < n; k0 += Q8_KT) {
			const int kn = n - k0 < Q8_KT ? n - k0 : Q8_KT;
			for (int g = p0; g < p1; g += 8) {
				const int cnt = p1 - g < 8 ? p1 - g : 8;
				if (INT4 && kn == 1) /* decode: the accumulators in registers */
					q4_group(w, a, g, cnt, k0, 1, pf, y);
				else if (INT4)
					q4_group(w, a, g, cnt, k0, kn, pf, y);
				else if (kn == 1)
					q8_group(w, a, g, cnt, k0, 1, pf, y);
				else
					q8_group(w, a, g, cnt, k0, kn, pf, y);
			}
		}
	}
}

Q8_ATTR static void Q8_FN(rows_q4_)(const coli_qmat *w, const coli_q8act *a, int n, int r0, int r1,
				    float *y)
{
	rows_256(w, a, n, r0, r1, y, 1);
}

Q8_ATTR static void Q8_FN(rows_q8_)(const coli_qmat *w, const coli_q8act *a, int n, int r0, int r1,
				    float *y)
{
	rows_256(w, a, n, r0, r1, y, 0);
}
