/* util_crc32c.c - see util_crc32c.h. */
#include "config.h"

#include "util_crc32c.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#endif

#define CRC32C_POLY 0x82F63B78u

/* table[k][b]: CRC of byte b followed by k zero bytes, for slicing-by-8. */
static uint32_t crc_table[8][256];

/* The hardware path runs three independent lanes of LANE bytes (the crc32
 * instruction has a latency of 3 cycles and a throughput of 1) and joins
 * them: crc(A|B) = shift(crc(A), |B|) ^ crc0(B), where shift appends zero
 * bytes, a linear map applied with these byte tables. */
#define LANE 4096
static uint32_t shift_1[4][256], shift_2[4][256]; /* by LANE, by 2 * LANE bytes */
static pthread_once_t crc_once = PTHREAD_ONCE_INIT;
static int crc_hw;

/* Long buffers, where the CPU has AVX-512 and VPCLMULQDQ: carry-less
 * multiplication folds 256 bytes per step (four 512-bit accumulators,
 * each 128-bit lane folded forward by k(D + 32) for its low half and
 * k(D - 32) for its high half, D the fold distance in bits; k(n) is
 * x^n mod P bit-reflected and shifted left once, the reflected-CRC
 * convention of Intel's "Fast CRC Computation Using PCLMULQDQ"), down to
 * one 128-bit remainder congruent to the message mod P, whose CRC the
 * crc32 instruction then takes, and the tail after it. About twice the
 * three-lane crc32 rate (bench/store_bench, scale_check_bench). */
#define FOLD_MIN 1024
static int crc_clmul;
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
static uint64_t k_fold[2][2]; /* D = 2048 (the main loop), 512 (4 -> 1 accumulator) */
static uint64_t k_lane[3][2]; /* D = 384, 256, 128 (lanes -> 128 bits, 16-byte steps) */

static uint64_t fold_const(unsigned n)
{
	/* x^n mod P in the normal (unreflected) order: P = 0x1EDC6F41 */
	uint64_t v = 1;
	for (unsigned i = 0; i < n; i++) {
		v <<= 1;
		if (v >> 32 & 1)
			v ^= 0x11EDC6F41ull;
	}
	uint32_t r = 0;
	for (int i = 0; i < 32; i++)
		if (v >> i & 1)
			r |= 1u << (31 - i);
	return (uint64_t)r << 1;
}
#endif

static void crc32c_init(void)
{
	for (uint32_t b = 0; b < 256; b++) {
		uint32_t c = b;
		for (int i = 0; i < 8; i++)
			c = (c >> 1) ^ (CRC32C_POLY & (0u - (c & 1u)));
		crc_table[0][b] = c;
	}
	for (uint32_t b = 0; b < 256; b++)
		for (int k = 1; k < 8; k++)
			crc_table[k][b] = (crc_table[k - 1][b] >> 8) ^ crc_table[0][crc_table[k - 1][b] & 0xff];
	/* shift of each single bit, then of each byte value by linearity */
	uint32_t basis1[32], basis2[32];
	for (int i = 0; i < 32; i++) {
		uint32_t v = 1u << i;
		for (int k = 0; k < LANE; k++)
			v = (v >> 8) ^ crc_table[0][v & 0xff];
		basis1[i] = v;
		for (int k = 0; k < LANE; k++)
			v = (v >> 8) ^ crc_table[0][v & 0xff];
		basis2[i] = v;
	}
	for (int k = 0; k < 4; k++)
		for (uint32_t b = 0; b < 256; b++) {
			uint32_t a1 = 0, a2 = 0;
			for (int j = 0; j < 8; j++)
				if (b & (1u << j)) {
					a1 ^= basis1[8 * k + j];
					a2 ^= basis2[8 * k + j];
				}
			shift_1[k][b] = a1;
			shift_2[k][b] = a2;
		}
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
	__builtin_cpu_init();
	crc_hw = __builtin_cpu_supports("sse4.2") ? 1 : 0;
	/* COLI_CRC32C_FOLD=0: the crc32 path only (tests run both paths) */
	const char *fold = getenv("COLI_CRC32C_FOLD");
	crc_clmul = crc_hw && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("vpclmulqdq") &&
		    !(fold && !strcmp(fold, "0"));
	const unsigned dist[2] = { 2048, 512 }, lane[3] = { 384, 256, 128 };
	for (int i = 0; i < 2; i++) {
		k_fold[i][0] = fold_const(dist[i] + 32);
		k_fold[i][1] = fold_const(dist[i] - 32);
	}
	for (int i = 0; i < 3; i++) {
		k_lane[i][0] = fold_const(lane[i] + 32);
		k_lane[i][1] = fold_const(lane[i] - 32);
	}
#endif
}

static uint32_t crc32c_sw_raw(uint32_t c, const unsigned char *p, size_t len)
{
	while (len && ((uintptr_t)p & 7)) {
		c = (c >> 8) ^ crc_table[0][(c ^ *p++) & 0xff];
		len--;
	}
	while (len >= 8) {
		uint64_t w;
		memcpy(&w, p, 8);
		/* Little-endian load assumed: colitop targets x86-64 and arm64 LE. */
		uint32_t lo = (uint32_t)w ^ c, hi = (uint32_t)(w >> 32);
		c = crc_table[7][lo & 0xff] ^ crc_table[6][(lo >> 8) & 0xff] ^
		    crc_table[5][(lo >> 16) & 0xff] ^ crc_table[4][lo >> 24] ^
		    crc_table[3][hi & 0xff] ^ crc_table[2][(hi >> 8) & 0xff] ^
		    crc_table[1][(hi >> 16) & 0xff] ^ crc_table[0][hi >> 24];
		p += 8;
		len -= 8;
	}
	while (len--)
		c = (c >> 8) ^ crc_table[0][(c ^ *p++) & 0xff];
	return c;
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
static inline uint32_t shift_by(const uint32_t t[4][256], uint32_t c)
{
	return t[0][c & 0xff] ^ t[1][(c >> 8) & 0xff] ^ t[2][(c >> 16) & 0xff] ^ t[3][c >> 24];
}

/* 128-bit fold: the lane's low half times k[0], its high half times k[1] */
__attribute__((target("pclmul,sse4.2")))
static inline __m128i fold128(__m128i x, const uint64_t k[2])
{
	const __m128i kk = _mm_set_epi64x((long long)k[1], (long long)k[0]);
	return _mm_xor_si128(_mm_clmulepi64_si128(x, kk, 0x00), _mm_clmulepi64_si128(x, kk, 0x11));
}

__attribute__((target("avx512f,vpclmulqdq")))
static inline __m512i fold512(__m512i x, const uint64_t k[2])
{
	const __m512i kk = _mm512_broadcast_i32x4(_mm_set_epi64x((long long)k[1], (long long)k[0]));
	return _mm512_xor_si512(_mm512_clmulepi64_epi128(x, kk, 0x00), _mm512_clmulepi64_epi128(x, kk, 0x11));
}

/* len >= FOLD_MIN: the raw CRC (register c) of p[0..len) up to the last
 * len % 16 bytes, which *rest gets; the caller finishes with crc32. */
__attribute__((target("avx512f,vpclmulqdq,pclmul,sse4.2")))
static uint32_t crc32c_clmul(uint32_t c, const unsigned char *p, size_t len, size_t *rest)
{
	__m512i x[4];
	for (int i = 0; i < 4; i++)
		x[i] = _mm512_loadu_si512((const void *)(p + 64 * i));
	/* the register enters as the first 32 bits of the message */
	x[0] = _mm512_xor_si512(x[0], _mm512_castsi128_si512(_mm_cvtsi32_si128((int)c)));
	p += 256;
	len -= 256;
	while (len >= 256) {
		for (int i = 0; i < 4; i++)
			x[i] = _mm512_xor_si512(fold512(x[i], k_fold[0]),
						_mm512_loadu_si512((const void *)(p + 64 * i)));
		p += 256;
		len -= 256;
	}
	for (int i = 1; i < 4; i++)
		x[i] = _mm512_xor_si512(x[i], fold512(x[i - 1], k_fold[1]));
	__m128i r = _mm512_extracti32x4_epi32(x[3], 3);
	r = _mm_xor_si128(r, fold128(_mm512_extracti32x4_epi32(x[3], 0), k_lane[0]));
	r = _mm_xor_si128(r, fold128(_mm512_extracti32x4_epi32(x[3], 1), k_lane[1]));
	r = _mm_xor_si128(r, fold128(_mm512_extracti32x4_epi32(x[3], 2), k_lane[2]));
	while (len >= 16) {
		r = _mm_xor_si128(fold128(r, k_lane[2]), _mm_loadu_si128((const __m128i *)p));
		p += 16;
		len -= 16;
	}
	*rest = len;
	uint64_t c64 = __builtin_ia32_crc32di(0, (uint64_t)_mm_cvtsi128_si64(r));
	c64 = __builtin_ia32_crc32di(c64, (uint64_t)_mm_extract_epi64(r, 1));
	return (uint32_t)c64;
}

__attribute__((target("sse4.2")))
static uint32_t crc32c_hw_raw(uint32_t c, const unsigned char *p, size_t len)
{
	if (crc_clmul && len >= FOLD_MIN) {
		size_t rest;
		c = crc32c_clmul(c, p, len, &rest);
		p += len - rest;
		len = rest;
	}
	uint64_t c64 = c;
	while (len && ((uintptr_t)p & 7)) {
		c64 = __builtin_ia32_crc32qi((uint32_t)c64, *p++);
		len--;
	}
	while (len >= 3 * LANE) {
		uint64_t c1 = 0, c2 = 0;
		for (size_t i = 0; i < LANE; i += 8) {
			uint64_t w0, w1, w2;
			memcpy(&w0, p + i, 8);
			memcpy(&w1, p + LANE + i, 8);
			memcpy(&w2, p + 2 * LANE + i, 8);
			c64 = __builtin_ia32_crc32di(c64, w0);
			c1 = __builtin_ia32_crc32di(c1, w1);
			c2 = __builtin_ia32_crc32di(c2, w2);
		}
		c64 = shift_by(shift_2, (uint32_t)c64) ^ shift_by(shift_1, (uint32_t)c1) ^ (uint32_t)c2;
		p += 3 * LANE;
		len -= 3 * LANE;
	}
	while (len >= 8) {
		uint64_t w;
		memcpy(&w, p, 8);
		c64 = __builtin_ia32_crc32di(c64, w);
		p += 8;
		len -= 8;
	}
	while (len--)
		c64 = __builtin_ia32_crc32qi((uint32_t)c64, *p++);
	return (uint32_t)c64;
}
#endif

uint32_t crc32c_update_sw(uint32_t crc, const void *buf, size_t len)
{
	pthread_once(&crc_once, crc32c_init);
	return ~crc32c_sw_raw(~crc, buf, len);
}

uint32_t crc32c_update(uint32_t crc, const void *buf, size_t len)
{
	pthread_once(&crc_once, crc32c_init);
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
	if (crc_hw)
		return ~crc32c_hw_raw(~crc, buf, len);
#endif
	return ~crc32c_sw_raw(~crc, buf, len);
}

int crc32c_hw_available(void)
{
	pthread_once(&crc_once, crc32c_init);
	return crc_hw;
}

int crc32c_fold_available(void)
{
	pthread_once(&crc_once, crc32c_init);
	return crc_clmul;
}
