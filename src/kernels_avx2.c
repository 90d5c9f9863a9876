/* kernels_avx2.c - AVX2 + FMA + F16C row kernels (see kernels.h).
 *
 * Compiled with per-function target attributes so the rest of the build
 * stays generic; coli_kernels_avx2_rows() checks the CPU at run time.
 *
 * Bit-identity between matvec and matmul: each input's result is produced
 * by the same inline helpers (q4_unpack + q4_dot, q8_dot, f32_dot) in the
 * same order whatever n is; matmul only reuses the unpacked weights.
 *
 * INT4 unpacking: vpmovzxbd straight from memory widens 8 packed bytes to
 * 8 dwords; "& 15" gives elements j..j+7 and ">> 4" gives j+32..j+39, both
 * already in x's order, so no shuffles of x or of the nibbles are needed
 * and the block costs 4 shuffle uops, 8 conversions and 8 FMAs. */
#include "config.h"

#include "kernels.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))

#include <immintrin.h>
#include <stdatomic.h>

#define AVX2 __attribute__((target("avx2,fma,f16c")))
#define AVX2_INLINE static inline __attribute__((always_inline, target("avx2,fma,f16c")))

/* Fixed-order horizontal sum: ((v0+v4)+(v2+v6)) + ((v1+v5)+(v3+v7)). */
AVX2_INLINE float hsum8(__m256 v)
{
	__m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
	s = _mm_add_ps(s, _mm_movehl_ps(s, s));
	s = _mm_add_ss(s, _mm_shuffle_ps(s, s, 1));
	return _mm_cvtss_f32(s);
}

/* ---- F32 ---- */

AVX2_INLINE float f32_dot(const float *a, const float *x, int cols)
{
	__m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
	int j = 0;
	for (; j + 32 <= cols; j += 32) {
		a0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + j), _mm256_loadu_ps(x + j), a0);
		a1 = _mm256_fmadd_ps(_mm256_loadu_ps(a + j + 8), _mm256_loadu_ps(x + j + 8), a1);
		a2 = _mm256_fmadd_ps(_mm256_loadu_ps(a + j + 16), _mm256_loadu_ps(x + j + 16), a2);
		a3 = _mm256_fmadd_ps(_mm256_loadu_ps(a + j + 24), _mm256_loadu_ps(x + j + 24), a3);
	}
	for (; j + 8 <= cols; j += 8)
		a0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + j), _mm256_loadu_ps(x + j), a0);
	float r = hsum8(_mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3)));
	for (; j < cols; j++)
		r = _mm_cvtss_f32(_mm_fmadd_ss(_mm_set_ss(a[j]), _mm_set_ss(x[j]), _mm_set_ss(r)));
	return r;
}

AVX2 static void rows_f32_avx2(const coli_qmat *w, const float *x, int n,
			       const float *xsum, int r0, int r1, float *y)
{
	(void)xsum;
	const float *W = w->data;
	size_t cols = (size_t)w->cols;
	for (int r = r0; r < r1; r++)
		for (int k = 0; k < n; k++)
			y[(size_t)k * (size_t)w->rows + (size_t)r] =
				f32_dot(W + (size_t)r * cols, x + (size_t)k * cols, w->cols);
}

/* ---- INT8 ---- */

AVX2_INLINE __m256 q8_load8(const int8_t *q)
{
	return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)q)));
}

AVX2_INLINE float q8_dot(const coli_block_q8 *row, const float *x, int nb)
{
	__m256 acc = _mm256_setzero_ps();
	for (int b = 0; b < nb; b++) {
		const int8_t *q = row[b].q;
		const float *xb = x + b * COLI_QK;
		__m256 s0 = _mm256_mul_ps(q8_load8(q), _mm256_loadu_ps(xb));
		__m256 s1 = _mm256_mul_ps(q8_load8(q + 8), _mm256_loadu_ps(xb + 8));
		for (int j = 16; j < COLI_QK; j += 16) {
			s0 = _mm256_fmadd_ps(q8_load8(q + j), _mm256_loadu_ps(xb + j), s0);
			s1 = _mm256_fmadd_ps(q8_load8(q + j + 8), _mm256_loadu_ps(xb + j + 8), s1);
		}
		acc = _mm256_fmadd_ps(_mm256_set1_ps(row[b].d), _mm256_add_ps(s0, s1), acc);
	}
	return hsum8(acc);
}

AVX2 static void rows_q8_avx2(const coli_qmat *w, const float *x, int n,
			      const float *xsum, int r0, int r1, float *y)
{
	(void)xsum;
	int nb = w->cols / COLI_QK;
	for (int r = r0; r < r1; r++) {
		const coli_block_q8 *row = (const coli_block_q8 *)w->data + (size_t)r * (size_t)nb;
		for (int k = 0; k < n; k++)
			y[(size_t)k * (size_t)w->rows + (size_t)r] =
				q8_dot(row, x + (size_t)k * (size_t)w->cols, nb);
	}
}

/* ---- INT4 ---- */

/* f[0..3] = elements 0..31 (low nibbles), f[4..7] = 32..63 (high). */
AVX2_INLINE void q4_unpack(const uint8_t *q, __m256 f[8])
{
	const __m256i lo = _mm256_set1_epi32(0x0f);
	for (int g = 0; g < 4; g++) {
		__m256i v = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(q + 8 * g)));
		f[g] = _mm256_cvtepi32_ps(_mm256_and_si256(v, lo));
		f[4 + g] = _mm256_cvtepi32_ps(_mm256_srli_epi32(v, 4));
	}
}

AVX2_INLINE __m256 q4_dot(const __m256 f[8], const float *x)
{
	__m256 s0 = _mm256_mul_ps(f[0], _mm256_loadu_ps(x));
	__m256 s1 = _mm256_mul_ps(f[4], _mm256_loadu_ps(x + 32));
	s0 = _mm256_fmadd_ps(f[1], _mm256_loadu_ps(x + 8), s0);
	s1 = _mm256_fmadd_ps(f[5], _mm256_loadu_ps(x + 40), s1);
	s0 = _mm256_fmadd_ps(f[2], _mm256_loadu_ps(x + 16), s0);
	s1 = _mm256_fmadd_ps(f[6], _mm256_loadu_ps(x + 48), s1);
	s0 = _mm256_fmadd_ps(f[3], _mm256_loadu_ps(x + 24), s0);
	s1 = _mm256_fmadd_ps(f[7], _mm256_loadu_ps(x + 56), s1);
	return _mm256_add_ps(s0, s1);
}

/* Inputs per pass over a row: the unpacked block (8 registers) is reused
 * for NR inputs; NR accumulators keep the rest of the register file. */
#define NR 4

AVX2 static void rows_q4_avx2(const coli_qmat *w, const float *x, int n,
			      const float *xsum, int r0, int r1, float *y)
{
	int nb = w->cols / COLI_QK;
	size_t cols = (size_t)w->cols;
	for (int r = r0; r < r1; r++) {
		const coli_block_q4 *row = (const coli_block_q4 *)w->data + (size_t)r * (size_t)nb;
		for (int k0 = 0; k0 < n; k0 += NR) {
			int kn = n - k0 < NR ? n - k0 : NR;
			__m256 acc[NR];
			float accm[NR];
			for (int k = 0; k < NR; k++) {
				acc[k] = _mm256_setzero_ps();
				accm[k] = 0.0f;
			}
			const float *xk0 = x + (size_t)k0 * cols;
			const float *xs0 = xsum + (size_t)k0 * (size_t)nb;
			for (int b = 0; b < nb; b++) {
				__m256 f[8];
				q4_unpack(row[b].q, f);
				__m256 d = _mm256_set1_ps(_cvtsh_ss(row[b].d));
				float m = _cvtsh_ss(row[b].m);
				for (int k = 0; k < kn; k++) {
					__m256 s = q4_dot(f, xk0 + (size_t)k * cols + (size_t)b * COLI_QK);
					acc[k] = _mm256_fmadd_ps(d, s, acc[k]);
					accm[k] = _mm_cvtss_f32(_mm_fmadd_ss(_mm_set_ss(m),
						_mm_set_ss(xs0[(size_t)k * (size_t)nb + (size_t)b]),
						_mm_set_ss(accm[k])));
				}
			}
			for (int k = 0; k < kn; k++)
				y[(size_t)(k0 + k) * (size_t)w->rows + (size_t)r] = hsum8(acc[k]) + accm[k];
		}
	}
}

coli_rows_fn coli_kernels_avx2_rows(int qtype)
{
	/* Every thread computes the same answer; relaxed is enough. */
	static _Atomic int have = -1;
	int h = atomic_load_explicit(&have, memory_order_relaxed);
	if (h < 0) {
		__builtin_cpu_init();
		h = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
		    __builtin_cpu_supports("f16c");
		atomic_store_explicit(&have, h, memory_order_relaxed);
	}
	if (!h)
		return NULL;
	switch (qtype) {
	case COLI_Q_F32: return rows_f32_avx2;
	case COLI_Q_INT8: return rows_q8_avx2;
	case COLI_Q_INT4: return rows_q4_avx2;
	default: return NULL;
	}
}

#else

coli_rows_fn coli_kernels_avx2_rows(int qtype)
{
	(void)qtype;
	return NULL;
}

#endif
