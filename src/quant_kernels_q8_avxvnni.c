/* quant_kernels_q8_avxvnni.c - AVX-VNNI (256-bit vpdpbusd, VEX-encoded) row
 * kernels for int8 activations: the CPUs that have AVX2 and AVX-VNNI but
 * not AVX-512 (Intel client cores since Alder Lake), or runs forced onto
 * the 256-bit path. Same arithmetic and same bits as every other path
 * (quant_kernels_q8.h); the row loops (8 rows in the lanes, blocks transposed
 * to dwords of the 8 rows, x's 4-byte groups broadcast) are
 * quant_kernels_q8_avx2_rows.h's, as for quant_kernels_q8_avx2.c, and this file gives
 * the integer block sums.
 *
 * vpdpbusd replaces vpmaddubsw + vpmaddwd and sums in int32, so nothing
 * can saturate: int4's high nibbles are used as they sit in the byte
 * (16 * nibble, an AND with 0xf0, no shift) in their own sum, shifted
 * down at the end (exact: a multiple of 16), and int8 weights take the
 * offset form (q + 128 unsigned, the sum starting from -128 * qs, x's
 * exact block sum from the quantizer). */
#include "config.h"

#include "quant_kernels_q8.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))

#include <immintrin.h>
#include <math.h>

#include "quant_kernels_cpu.h"

#define Q8_TARGET "avx2,fma,f16c,avxvnni"
#define Q8_SFX avxvnni
#define Q8_NP 4

/* lo = low nibbles, hi = 16 * high nibbles of w's bytes. */
static inline __attribute__((always_inline, target(Q8_TARGET))) void
q4_prep(const __m256i w[4], __m256i lo[4], __m256i hi[4])
{
	const __m256i m4 = _mm256_set1_epi8(0x0f), m4h = _mm256_set1_epi8((char)0xf0);
#pragma GCC unroll 4
	for (int j = 0; j < 4; j++) {
		lo[j] = _mm256_and_si256(w[j], m4);
		hi[j] = _mm256_and_si256(w[j], m4h);
	}
}

static inline __attribute__((always_inline, target(Q8_TARGET))) __m256i
q4_dot(const __m256i lo[4], const __m256i hi[4], const __m256i X[8])
{
	__m256i a = _mm256_setzero_si256(), b = _mm256_setzero_si256();
#pragma GCC unroll 4
	for (int j = 0; j < 4; j++) {
		a = _mm256_dpbusd_avx_epi32(a, lo[j], X[j]);
		b = _mm256_dpbusd_avx_epi32(b, hi[j], X[4 + j]);
	}
	/* b is 16 times the high nibbles' sum: an exact shift */
	return _mm256_add_epi32(a, _mm256_srai_epi32(b, 4));
}

/* sum (w + 128) x - 128 sum x = sum w x, all in int32: the offset in
 * 128-bit lane 0 only, which join() adds to lane 1 once */
static inline __attribute__((always_inline, target(Q8_TARGET))) __m256i q8_init(int32_t qs)
{
	return _mm256_zextsi128_si256(_mm_set1_epi32(-128 * qs));
}

/* p[j] = w_j + 128 as unsigned bytes */
static inline __attribute__((always_inline, target(Q8_TARGET))) void
q8_prep(const __m256i w[4], __m256i p[Q8_NP])
{
	const __m256i off = _mm256_set1_epi8((char)0x80);
#pragma GCC unroll 4
	for (int j = 0; j < 4; j++)
		p[j] = _mm256_xor_si256(w[j], off);
}

static inline __attribute__((always_inline, target(Q8_TARGET))) __m256i
q8_dot(const __m256i p[Q8_NP], const __m256i X[4], __m256i acc)
{
#pragma GCC unroll 4
	for (int j = 0; j < 4; j++)
		acc = _mm256_dpbusd_avx_epi32(acc, p[j], X[j]);
	return acc;
}

#include "quant_kernels_q8_avx2_rows.h"

/* quant_kernels_avx2.c's CPU check (AVX2, FMA, F16C) plus AVX-VNNI: cpuid leaf
 * 7 subleaf 1, eax bit 4 (not every compiler knows a
 * __builtin_cpu_supports name for it). */
static int cpu_has_avxvnni(void)
{
	unsigned a, b, c, d;
	return coli_kernels_avx2_rows(COLI_Q_F32) != NULL && __get_cpuid_count(7, 1, &a, &b, &c, &d) &&
	       ((a >> 4) & 1);
}

static int have_avxvnni(void)
{
	static _Atomic int have = -1;
	return coli_cpu_once(&have, cpu_has_avxvnni);
}

coli_q8_rows_fn coli_kernels_q8_avxvnni_rows(int qtype)
{
	return coli_q8_rows_pick(have_avxvnni(), qtype, rows_q8_avxvnni, rows_q4_avxvnni);
}

#else

coli_q8_rows_fn coli_kernels_q8_avxvnni_rows(int qtype)
{
	(void)qtype;
	return NULL;
}

#endif
