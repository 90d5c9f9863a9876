/* util_sha256.c - see util_sha256.h. Written from FIPS 180-4 section 6.2.
 *
 * On x86-64 CPUs with the SHA extensions the block function uses them
 * (about 5x the portable code; checkpoints are hundreds of GB). The choice
 * is made once per process and recorded in each context (`accel`), so a
 * test can force the portable path on a context after init. */
#include "config.h"

#include "util_sha256.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* First 32 bits of the fractional parts of the cube roots of the first 64
 * primes (FIPS 180-4 4.2.2). */
static const uint32_t K[64] = {
	0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
	0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
	0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
	0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
	0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
	0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
	0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
	0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
};

static inline uint32_t rotr(uint32_t x, int n)
{
	return (x >> n) | (x << (32 - n));
}

static void sha256_block(uint32_t h[8], const uint8_t *p)
{
	uint32_t w[64];
	for (int i = 0; i < 16; i++)
		w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 |
		       (uint32_t)p[4 * i + 2] << 8 | p[4 * i + 3];
	for (int i = 16; i < 64; i++) {
		uint32_t s0 = rotr(w[i - 15], 7) ^ rotr(w[i - 15], 18) ^ (w[i - 15] >> 3);
		uint32_t s1 = rotr(w[i - 2], 17) ^ rotr(w[i - 2], 19) ^ (w[i - 2] >> 10);
		w[i] = w[i - 16] + s0 + w[i - 7] + s1;
	}
	uint32_t a = h[0], b = h[1], c = h[2], d = h[3];
	uint32_t e = h[4], f = h[5], g = h[6], k = h[7];
	for (int i = 0; i < 64; i++) {
		uint32_t t1 = k + (rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)) +
			      ((e & f) ^ (~e & g)) + K[i] + w[i];
		uint32_t t2 = (rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)) +
			      ((a & b) ^ (a & c) ^ (b & c));
		k = g;
		g = f;
		f = e;
		e = d + t1;
		d = c;
		c = b;
		b = a;
		a = t1 + t2;
	}
	h[0] += a; h[1] += b; h[2] += c; h[3] += d;
	h[4] += e; h[5] += f; h[6] += g; h[7] += k;
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <cpuid.h>
#include <immintrin.h>
#define SHA256_HAVE_NI 1

/* Four rounds on message group `m` (W[4r..4r+3]) with constants K[4r..]:
 * sha256rnds2 does two rounds on (CDGH, ABEF) and the old ABEF becomes the
 * new CDGH, so the two state registers swap roles every call. */
#define NI_ROUNDS4(abef, cdgh, m, r)                                                     \
	do {                                                                             \
		__m128i wk = _mm_add_epi32(m, _mm_loadu_si128((const __m128i *)&K[4 * (r)])); \
		cdgh = _mm_sha256rnds2_epu32(cdgh, abef, wk);                            \
		abef = _mm_sha256rnds2_epu32(abef, cdgh, _mm_shuffle_epi32(wk, 0x0e));   \
	} while (0)

__attribute__((target("sha,sse4.1,ssse3")))
static void sha256_blocks_ni(uint32_t h[8], const uint8_t *p, size_t nblocks)
{
	const __m128i bswap = _mm_set_epi64x(0x0c0d0e0f08090a0bLL, 0x0405060700010203LL);
	/* h[0..3] = A B C D, h[4..7] = E F G H (dword 0 first); the
	 * instructions want ABEF and CDGH with A and C in the top dwords. */
	__m128i t = _mm_shuffle_epi32(_mm_loadu_si128((const __m128i *)&h[0]), 0xb1); /* B A D C */
	__m128i u = _mm_shuffle_epi32(_mm_loadu_si128((const __m128i *)&h[4]), 0x1b); /* H G F E */
	__m128i abef = _mm_alignr_epi8(t, u, 8);      /* F E B A */
	__m128i cdgh = _mm_blend_epi16(u, t, 0xf0);   /* H G D C */
	for (; nblocks; nblocks--, p += 64) {
		__m128i abef0 = abef, cdgh0 = cdgh, w[4];
		for (int i = 0; i < 4; i++) {
			w[i] = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(p + 16 * i)), bswap);
			NI_ROUNDS4(abef, cdgh, w[i], i);
		}
		for (int r = 4; r < 16; r++) {
			/* W[t] = s1(W[t-2]) + W[t-7] + s0(W[t-15]) + W[t-16] */
			__m128i x = _mm_sha256msg1_epu32(w[r & 3], w[(r + 1) & 3]);
			x = _mm_add_epi32(x, _mm_alignr_epi8(w[(r + 3) & 3], w[(r + 2) & 3], 4));
			w[r & 3] = _mm_sha256msg2_epu32(x, w[(r + 3) & 3]);
			NI_ROUNDS4(abef, cdgh, w[r & 3], r);
		}
		abef = _mm_add_epi32(abef, abef0);
		cdgh = _mm_add_epi32(cdgh, cdgh0);
	}
	t = _mm_shuffle_epi32(abef, 0x1b);  /* A B E F */
	u = _mm_shuffle_epi32(cdgh, 0xb1);  /* G H C D */
	_mm_storeu_si128((__m128i *)&h[0], _mm_blend_epi16(t, u, 0xf0));  /* A B C D */
	_mm_storeu_si128((__m128i *)&h[4], _mm_alignr_epi8(u, t, 8));     /* E F G H */
}

static int ni_usable;
static pthread_once_t ni_once = PTHREAD_ONCE_INIT;

static void ni_probe(void)
{
	unsigned a, b, c, d;
	if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & bit_SSE4_1) || !(c & bit_SSSE3))
		return;
	if (__get_cpuid_count(7, 0, &a, &b, &c, &d) && (b & (1u << 29)))
		ni_usable = 1;
}
#endif

static void sha256_blocks(coli_sha256 *s, const uint8_t *p, size_t nblocks)
{
#ifdef SHA256_HAVE_NI
	if (s->accel) {
		sha256_blocks_ni(s->h, p, nblocks);
		return;
	}
#endif
	for (; nblocks; nblocks--, p += 64)
		sha256_block(s->h, p);
}

void coli_sha256_init(coli_sha256 *s)
{
	static const uint32_t iv[8] = {
		0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
		0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19,
	};
	memcpy(s->h, iv, sizeof iv);
	s->nbytes = 0;
	s->fill = 0;
	s->accel = 0;
#ifdef SHA256_HAVE_NI
	pthread_once(&ni_once, ni_probe);
	s->accel = ni_usable;
#endif
}

void coli_sha256_update(coli_sha256 *s, const void *data, size_t len)
{
	const uint8_t *p = data;
	s->nbytes += len;
	if (s->fill) {
		size_t take = 64 - s->fill < len ? 64 - s->fill : len;
		memcpy(s->block + s->fill, p, take);
		s->fill += take;
		p += take;
		len -= take;
		if (s->fill < 64)
			return;
		sha256_blocks(s, s->block, 1);
		s->fill = 0;
	}
	sha256_blocks(s, p, len / 64);
	p += len / 64 * 64;
	len %= 64;
	memcpy(s->block, p, len);
	s->fill = len;
}

void coli_sha256_final(coli_sha256 *s, uint8_t digest[COLI_SHA256_DIGEST])
{
	uint64_t bits = s->nbytes * 8;
	s->block[s->fill++] = 0x80;
	if (s->fill > 56) {
		memset(s->block + s->fill, 0, 64 - s->fill);
		sha256_blocks(s, s->block, 1);
		s->fill = 0;
	}
	memset(s->block + s->fill, 0, 56 - s->fill);
	for (int i = 0; i < 8; i++)
		s->block[56 + i] = (uint8_t)(bits >> (56 - 8 * i));
	sha256_blocks(s, s->block, 1);
	for (int i = 0; i < 8; i++) {
		digest[4 * i] = (uint8_t)(s->h[i] >> 24);
		digest[4 * i + 1] = (uint8_t)(s->h[i] >> 16);
		digest[4 * i + 2] = (uint8_t)(s->h[i] >> 8);
		digest[4 * i + 3] = (uint8_t)s->h[i];
	}
}

void coli_sha256_to_hex(const uint8_t digest[COLI_SHA256_DIGEST], char hex[65])
{
	static const char xd[] = "0123456789abcdef";
	for (int i = 0; i < COLI_SHA256_DIGEST; i++) {
		hex[2 * i] = xd[digest[i] >> 4];
		hex[2 * i + 1] = xd[digest[i] & 15];
	}
	hex[64] = '\0';
}

void coli_sha256_hex(const void *data, size_t len, char hex[65])
{
	coli_sha256 s;
	uint8_t d[COLI_SHA256_DIGEST];
	coli_sha256_init(&s);
	coli_sha256_update(&s, data, len);
	coli_sha256_final(&s, d);
	coli_sha256_to_hex(d, hex);
}

int coli_sha256_file(const char *path, char hex[65], coli_err *err)
{
	enum { CHUNK = 1 << 20 };
	int rc = 0;
	uint8_t *buf = NULL;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return coli_err_set(err, -errno, "%s: %s", path, strerror(errno));
	buf = malloc(CHUNK);
	if (!buf) {
		rc = coli_err_set(err, -ENOMEM, "%s: out of memory for hashing", path);
		goto out;
	}
	coli_sha256 s;
	coli_sha256_init(&s);
	for (;;) {
		ssize_t n = read(fd, buf, CHUNK);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			rc = coli_err_set(err, -errno, "%s: read: %s", path, strerror(errno));
			goto out;
		}
		if (n == 0)
			break;
		coli_sha256_update(&s, buf, (size_t)n);
	}
	uint8_t d[COLI_SHA256_DIGEST];
	coli_sha256_final(&s, d);
	coli_sha256_to_hex(d, hex);
out:
	free(buf);
	close(fd);
	return rc;
}
