/* util_crc32c.c - see util_crc32c.h. */
#include "config.h"

#include "util_crc32c.h"

#include <pthread.h>
#include <string.h>

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

__attribute__((target("sse4.2")))
static uint32_t crc32c_hw_raw(uint32_t c, const unsigned char *p, size_t len)
{
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
