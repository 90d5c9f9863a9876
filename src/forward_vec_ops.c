/* forward_vec_ops.c - see forward_vec_ops.h. Plain C whose inner loops have a constant
 * trip count (16 or 64), so GCC vectorizes them at -O2 in every clone. */
#include "config.h"

#include <stdint.h>
#include <string.h>

#include "forward_vec_ops.h"

/* Not under ThreadSanitizer: the clones' ifunc resolver runs during
 * relocation, before the TSan runtime is up, and its instrumented code
 * crashes there (the TSan build takes the baseline clone). */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && defined(__has_attribute) && \
	!defined(__SANITIZE_THREAD__)
#if __has_attribute(target_clones)
#define VEC_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#endif
#endif
#ifndef VEC_CLONES
#define VEC_CLONES
#endif

#define G COLI_QK /* columns per group (the quantization block) */

/* Helpers of the cloned functions must be inlined into each clone: an
 * out-of-line copy is compiled for the baseline ISA only. */
#define VEC_INLINE static inline __attribute__((always_inline))

VEC_CLONES
float coli_vec_dot(const float *a, const float *b, int n)
{
	float acc[COLI_VEC_LANES] = { 0 };
	int i = 0;
	for (; i + COLI_VEC_LANES <= n; i += COLI_VEC_LANES)
		for (int k = 0; k < COLI_VEC_LANES; k++)
			acc[k] += a[i + k] * b[i + k];
	for (int w = COLI_VEC_LANES / 2; w > 0; w /= 2)
		for (int k = 0; k < w; k++)
			acc[k] += acc[k + w];
	float s = acc[0];
	for (; i < n; i++)
		s += a[i] * b[i];
	return s;
}

/* 8-lane vectors (GCC/clang vector extensions): one ymm in the AVX2 and
 * AVX-512 clones, two xmm in the baseline. Arithmetic on them is
 * lane-wise IEEE multiply then add, the same as the scalar code it
 * replaces. Not 16 lanes: AVX2 has no register that size, and GCC kept
 * such vectors in memory in the AVX2 clone, moving them through the
 * stack in pieces on every use (10x slower there). */
#if defined(__GNUC__) && !defined(__clang__)
/* the helpers pass vectors by value; they are static and inlined, so
 * GCC's note that such a call's ABI differs between clones concerns no
 * call that exists */
#pragma GCC diagnostic ignored "-Wpsabi"
#endif
typedef float v8f __attribute__((vector_size(32)));
typedef float v4f __attribute__((vector_size(16)));
typedef uint8_t v8u8 __attribute__((vector_size(8)));
typedef int8_t v8i8 __attribute__((vector_size(8)));
typedef int32_t v8i32 __attribute__((vector_size(32)));
/* bytes -> floats through int32 (vpmovzxbd/vpmovsxbd + vcvtdq2ps): GCC
 * scalarizes a direct byte -> float conversion. */
#define BYTES_TO_V8F(v) __builtin_convertvector(__builtin_convertvector((v), v8i32), v8f)

VEC_INLINE v8f v8f_load(const float *p)
{
	v8f v;
	memcpy(&v, p, sizeof v);
	return v;
}

VEC_INLINE void v8f_store(float *p, v8f v)
{
	memcpy(p, &v, sizeof v);
}

/* v in every lane, built once: a float times a vector, written as such,
 * was rebuilt lane by lane at each use in the AVX2 clone */
VEC_INLINE v8f v8f_splat(float v)
{
	return (v8f){ v, v, v, v, v, v, v, v };
}

/* coli_vec_dot's lane partials, lanes 0..7 in lo and 8..15 in hi,
 * finished its way: the 16 lanes reduced pairwise (8+8, 4+4, 2+2, 1+1),
 * then the tail terms i..n-1. */
VEC_INLINE float dot_finish(v8f lo, v8f hi, const float *a, const float *b, int i, int n)
{
	/* the same adds as the scalar tree, two levels as vectors */
	const v8f h8 = lo + hi;
	v4f h4[2];
	memcpy(h4, &h8, sizeof h4);
	h4[0] += h4[1];
	float acc[4];
	memcpy(acc, &h4[0], sizeof acc);
	acc[0] += acc[2];
	acc[1] += acc[3];
	float r = acc[0] + acc[1];
	for (; i < n; i++)
		r += a[i] * b[i];
	return r;
}

/* Row p of a block: x + p * x_stride, or rows[p] when rows is given (the
 * gathered variants). */
VEC_INLINE const float *row_at(const float *x, size_t x_stride, const float *const *rows, int p)
{
	return rows ? rows[p] : x + (size_t)p * x_stride;
}

/* Four rows at a time: four independent chains of coli_vec_dot's 16
 * lanes, each as two v8f */
VEC_INLINE void dot_rows(const float *a, const float *x, size_t x_stride, const float *const *rows, int np, int n,
			 float *out)
{
	int p = 0;
	for (; p + 4 <= np; p += 4) {
		const float *x0 = row_at(x, x_stride, rows, p), *x1 = row_at(x, x_stride, rows, p + 1);
		const float *x2 = row_at(x, x_stride, rows, p + 2), *x3 = row_at(x, x_stride, rows, p + 3);
		v8f l0 = { 0 }, h0 = { 0 }, l1 = { 0 }, h1 = { 0 }, l2 = { 0 }, h2 = { 0 }, l3 = { 0 }, h3 = { 0 };
		int i = 0;
		for (; i + COLI_VEC_LANES <= n; i += COLI_VEC_LANES) {
			const v8f al = v8f_load(a + i), ah = v8f_load(a + i + 8);
			l0 += al * v8f_load(x0 + i);
			h0 += ah * v8f_load(x0 + i + 8);
			l1 += al * v8f_load(x1 + i);
			h1 += ah * v8f_load(x1 + i + 8);
			l2 += al * v8f_load(x2 + i);
			h2 += ah * v8f_load(x2 + i + 8);
			l3 += al * v8f_load(x3 + i);
			h3 += ah * v8f_load(x3 + i + 8);
		}
		out[p] = dot_finish(l0, h0, a, x0, i, n);
		out[p + 1] = dot_finish(l1, h1, a, x1, i, n);
		out[p + 2] = dot_finish(l2, h2, a, x2, i, n);
		out[p + 3] = dot_finish(l3, h3, a, x3, i, n);
	}
	for (; p < np; p++)
		out[p] = coli_vec_dot(a, row_at(x, x_stride, rows, p), n);
}

VEC_CLONES
void coli_vec_dot_rows(const float *a, const float *x, size_t x_stride, int np, int n, float *out)
{
	dot_rows(a, x, x_stride, NULL, np, n, out);
}

VEC_CLONES
void coli_vec_dot_gather(const float *a, const float *const *rows, int np, int n, float *out)
{
	dot_rows(a, NULL, 0, rows, np, n, out);
}

/* Columns [c, c + 64) of coli_vec_wsum: eight independent accumulator
 * chains of 8 lanes, written out as locals (as 16-lane vectors in an
 * array they lived on the AVX2 clone's stack: most of a prefill's
 * attention time). Each column is still its own chain in ascending p,
 * so the width changes no bit. */
VEC_INLINE void wsum_cols(float *y, const float *w, const float *x, size_t x_stride, const float *const *rows,
			  int np, int c)
{
	float *yc = y + c;
	v8f a0 = v8f_load(yc), a1 = v8f_load(yc + 8), a2 = v8f_load(yc + 16), a3 = v8f_load(yc + 24);
	v8f a4 = v8f_load(yc + 32), a5 = v8f_load(yc + 40), a6 = v8f_load(yc + 48), a7 = v8f_load(yc + 56);
	for (int p = 0; p < np; p++) {
		const float *xp = row_at(x, x_stride, rows, p) + c;
		const v8f wp = v8f_splat(w[p]);
		a0 += wp * v8f_load(xp);
		a1 += wp * v8f_load(xp + 8);
		a2 += wp * v8f_load(xp + 16);
		a3 += wp * v8f_load(xp + 24);
		a4 += wp * v8f_load(xp + 32);
		a5 += wp * v8f_load(xp + 40);
		a6 += wp * v8f_load(xp + 48);
		a7 += wp * v8f_load(xp + 56);
	}
	v8f_store(yc, a0);
	v8f_store(yc + 8, a1);
	v8f_store(yc + 16, a2);
	v8f_store(yc + 24, a3);
	v8f_store(yc + 32, a4);
	v8f_store(yc + 40, a5);
	v8f_store(yc + 48, a6);
	v8f_store(yc + 56, a7);
}

VEC_INLINE void wsum(float *y, const float *w, const float *x, size_t x_stride, const float *const *rows, int np,
		      int n)
{
	int c = 0;
	for (; c + G <= n; c += G)
		wsum_cols(y, w, x, x_stride, rows, np, c);
	for (; c < n; c++)
		for (int p = 0; p < np; p++)
			y[c] += w[p] * row_at(x, x_stride, rows, p)[c];
}

VEC_CLONES
void coli_vec_wsum(float *y, const float *w, const float *x, size_t x_stride, int np, int n)
{
	wsum(y, w, x, x_stride, NULL, np, n);
}

VEC_CLONES
void coli_vec_wsum_gather(float *y, const float *w, const float *const *rows, int np, int n)
{
	wsum(y, w, NULL, 0, rows, np, n);
}

/* The weights of a quantized group as they enter the product: int4 nibbles
 * (0..15) or int8 values, in column order, as floats (exact). The group's
 * value is then scale * q (+ min for int4), applied outside the 64-wide
 * loop: sum_i a_i (d_i q_ik + m_i) = sum_i (a_i d_i) q_ik + sum_i a_i m_i.
 * Written out (no arrays or loops over the four vectors) so they stay in
 * registers. */
VEC_INLINE void group_q(int qtype, const char *row, int g, v8f q[8])
{
	if (qtype == COLI_Q_INT8) {
		const coli_block_q8 *b = (const coli_block_q8 *)row + g;
#pragma GCC unroll 8
		for (int k = 0; k < 8; k++) {
			v8i8 v;
			memcpy(&v, b->q + 8 * k, sizeof v);
			q[k] = BYTES_TO_V8F(v);
		}
	} else {
		const coli_block_q4 *b = (const coli_block_q4 *)row + g;
		/* byte j holds element j (low nibble) and element 32 + j (high) */
#pragma GCC unroll 4
		for (int k = 0; k < 4; k++) {
			v8u8 v;
			memcpy(&v, b->q + 8 * k, sizeof v);
			q[k] = BYTES_TO_V8F(v & 15);
			q[4 + k] = BYTES_TO_V8F(v >> 4);
		}
	}
}

/* Scale (and int4 min) of group g of a quantized row. */
/* half -> float: the compiler's _Float16 conversion where it has one
 * (vcvtph2ps in the v3/v4 clones), else quant.h's; both exact. */
VEC_INLINE float half_float(uint16_t h)
{
#ifdef __FLT16_MAX__
	_Float16 f;
	memcpy(&f, &h, sizeof f);
	return (float)f;
#else
	return coli_half_to_float(h);
#endif
}

VEC_INLINE float group_scale(int qtype, const char *row, int g, float *min)
{
	if (qtype == COLI_Q_INT8) {
		*min = 0.0f;
		return ((const coli_block_q8 *)row + g)->d;
	}
	const coli_block_q4 *b = (const coli_block_q4 *)row + g;
	*min = half_float(b->m);
	return half_float(b->d);
}

/* Rows [i0, i1) of group g for one input a, added in ascending row order
 * onto the group's running sums acc[64] and bias. The rows come straight
 * from the packed matrix (tile NULL) or from the tile of unpacked integers
 * built once for n > 1; both give the same floats, so decode and prefill
 * agree bit for bit. */
VEC_INLINE void tmul_group(const coli_qmat *w, const char *rows, size_t rb, int g, int i0, int i1,
			   const float *a, const float *tile, float *acc_io, float *bias_io)
{
	/* eight 8-lane accumulators (see v8f) */
	v8f acc[8];
#pragma GCC unroll 8
	for (int k = 0; k < 8; k++)
		memcpy(&acc[k], acc_io + 8 * k, sizeof acc[k]);
	float bias = *bias_io;
	for (int i = i0; i < i1; i++) {
		float m;
		const char *row = rows + (size_t)i * rb;
		const float c = a[i] * group_scale(w->qtype, row, g, &m);
		bias += a[i] * m;
		v8f q[8];
		if (tile) {
			const float *t = tile + (size_t)i * G;
#pragma GCC unroll 8
			for (int k = 0; k < 8; k++)
				memcpy(&q[k], t + 8 * k, sizeof q[k]);
		} else {
			group_q(w->qtype, row, g, q);
		}
		const v8f cv = v8f_splat(c);
#pragma GCC unroll 8
		for (int k = 0; k < 8; k++)
			acc[k] += cv * q[k];
	}
#pragma GCC unroll 8
	for (int k = 0; k < 8; k++)
		memcpy(acc_io + 8 * k, &acc[k], sizeof acc[k]);
	*bias_io = bias;
}

/* n = 1 walks the rows in chunks that stay in L1 and runs every column
 * group over a chunk before the next, so the block is read from memory
 * once, sequentially (a group at a time over all rows would stride through
 * it once per group). Sums stay in ascending row order. */
#define TMUL_ROW_CHUNK 32
#define TMUL_GROUPS 16

VEC_CLONES
void coli_qrows_tmul(const coli_qmat *w, int r0, int nrows, const float *a, size_t a_stride, int n,
		     float *y, size_t y_stride, float *tile)
{
	const int groups = (w->cols + G - 1) / G;
	if (w->qtype == COLI_Q_F32) {
		/* rows are floats already: a weighted sum of rows */
		const float *rows = (const float *)w->data + (size_t)r0 * w->cols;
		for (int b = 0; b < n; b++) {
			float *yb = y + (size_t)b * y_stride;
			memset(yb, 0, sizeof(float) * (size_t)w->cols);
			coli_vec_wsum(yb, a + (size_t)b * a_stride, rows, (size_t)w->cols, nrows, w->cols);
		}
		return;
	}
	const size_t rb = coli_qtype_row_bytes(w->qtype, w->cols);
	const char *rows = (const char *)w->data + (size_t)r0 * rb;
	float bias[TMUL_GROUPS];
	if (n == 1) {
		for (int g0 = 0; g0 < groups; g0 += TMUL_GROUPS) {
			const int ng = groups - g0 < TMUL_GROUPS ? groups - g0 : TMUL_GROUPS;
			memset(y + (size_t)g0 * G, 0, sizeof(float) * G * (size_t)ng);
			memset(bias, 0, sizeof bias);
			for (int i0 = 0; i0 < nrows; i0 += TMUL_ROW_CHUNK) {
				const int i1 = nrows - i0 < TMUL_ROW_CHUNK ? nrows : i0 + TMUL_ROW_CHUNK;
				/* the next chunk is on its way while this one runs */
				if (i1 < nrows) {
					const char *nx = rows + (size_t)i1 * rb;
					const int nn = nrows - i1 < TMUL_ROW_CHUNK ? nrows - i1 : TMUL_ROW_CHUNK;
					for (size_t o = 0; o < (size_t)nn * rb; o += 64)
						__builtin_prefetch(nx + o);
				}
				for (int g = 0; g < ng; g++)
					tmul_group(w, rows, rb, g0 + g, i0, i1, a, NULL,
						   y + (size_t)(g0 + g) * G, &bias[g]);
			}
			for (int g = 0; g < ng; g++)
				for (int k = 0; k < G; k++)
					y[(size_t)(g0 + g) * G + k] += bias[g];
		}
		return;
	}
	for (int g = 0; g < groups; g++) {
		/* unpack the group once for all n inputs */
		for (int i = 0; i < nrows; i++) {
			v8f q[8];
			float *t = tile + (size_t)i * G;
			group_q(w->qtype, rows + (size_t)i * rb, g, q);
#pragma GCC unroll 8
			for (int k = 0; k < 8; k++)
				v8f_store(t + 8 * k, q[k]);
		}
		for (int b = 0; b < n; b++) {
			float *yg = y + (size_t)b * y_stride + (size_t)g * G;
			memset(yg, 0, sizeof(float) * G);
			bias[0] = 0.0f;
			tmul_group(w, rows, rb, g, 0, nrows, a + (size_t)b * a_stride, tile, yg, &bias[0]);
			for (int k = 0; k < G; k++)
				yg[k] += bias[0];
		}
	}
}
