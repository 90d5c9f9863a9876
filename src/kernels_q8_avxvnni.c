/* kernels_q8_avxvnni.c - AVX-VNNI (256-bit vpdpbusd, VEX-encoded) row
 * kernels for int8 activations: the CPUs that have AVX2 and AVX-VNNI but
 * not AVX-512 (Intel client cores since Alder Lake), or runs forced onto
 * the 256-bit path. Same arithmetic and same bits as every other path
 * (kernels_q8.h); the row loops are kernels_q8_avx2_rows.h's.
 *
 * vpdpbusd replaces vpmaddubsw + vpmaddwd and sums in int32, so nothing
 * can saturate: int4's high nibbles are used as they sit in the byte
 * (16 * nibble, an AND with 0xf0, no shift), and int8 weights take the
 * offset form of kernels_q8_avx512.c (q + 128 unsigned, the vpdpbusd
 * starting from -128 * x's lane sums, computed once per block of x). */
#include "config.h"

#include "kernels_q8.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))

#include <cpuid.h>
#include <immintrin.h>
#include <math.h>
#include <stdatomic.h>

#define Q8_TARGET "avx2,fma,f16c,avxvnni"
#define Q8_SFX avxvnni

static inline __attribute__((always_inline, target(Q8_TARGET))) void
q4_lanes(__m256i v, __m256i xl, __m256i xh, __m256i *il, __m256i *ih)
{
	__m256i wl = _mm256_and_si256(v, _mm256_set1_epi8(0x0f));
	__m256i wh = _mm256_and_si256(v, _mm256_set1_epi8((char)0xf0));
	*il = _mm256_dpbusd_avx_epi32(_mm256_setzero_si256(), wl, xl);
	*ih = _mm256_dpbusd_avx_epi32(_mm256_setzero_si256(), wh, xh);
}

static inline __attribute__((always_inline, target(Q8_TARGET))) void
q8_xprep(__m256i xl, __m256i xh, __m256i *cl, __m256i *ch)
{
	const __m256i off = _mm256_set1_epi8((char)0x80);
	*cl = _mm256_sub_epi32(_mm256_setzero_si256(),
			       _mm256_dpbusd_avx_epi32(_mm256_setzero_si256(), off, xl));
	*ch = _mm256_sub_epi32(_mm256_setzero_si256(),
			       _mm256_dpbusd_avx_epi32(_mm256_setzero_si256(), off, xh));
}

static inline __attribute__((always_inline, target(Q8_TARGET))) void
q8_lanes(__m256i wl, __m256i wh, __m256i xl, __m256i xh, __m256i cl, __m256i ch, __m256i *il,
	 __m256i *ih)
{
	const __m256i off = _mm256_set1_epi8((char)0x80);
	*il = _mm256_dpbusd_avx_epi32(cl, _mm256_xor_si256(wl, off), xl);
	*ih = _mm256_dpbusd_avx_epi32(ch, _mm256_xor_si256(wh, off), xh);
}

#include "kernels_q8_avx2_rows.h"

/* kernels_avx2.c's CPU check (AVX2, FMA, F16C) plus AVX-VNNI: cpuid leaf
 * 7 subleaf 1, eax bit 4 (not every compiler knows a
 * __builtin_cpu_supports name for it). */
static int have_avxvnni(void)
{
	static _Atomic int have = -1; /* every thread computes the same answer */
	int h = atomic_load_explicit(&have, memory_order_relaxed);
	if (h < 0) {
		unsigned a, b, c, d;
		h = coli_kernels_avx2_rows(COLI_Q_F32) != NULL && __get_cpuid_count(7, 1, &a, &b, &c, &d) &&
		    ((a >> 4) & 1);
		atomic_store_explicit(&have, h, memory_order_relaxed);
	}
	return h;
}

coli_q8_rows_fn coli_kernels_q8_avxvnni_rows(int qtype)
{
	if (!have_avxvnni())
		return NULL;
	switch (qtype) {
	case COLI_Q_INT8: return rows_q8_avxvnni;
	case COLI_Q_INT4: return rows_q4_avxvnni;
	default: return NULL;
	}
}

#else

coli_q8_rows_fn coli_kernels_q8_avxvnni_rows(int qtype)
{
	(void)qtype;
	return NULL;
}

#endif
