/* kv_crc32c.c - CRC32C known answers; hardware and table paths agree. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util_crc32c.h"

int main(void)
{
	int fail = 0;
	/* RFC 3720 (iSCSI) B.4 vectors and the usual "123456789" check value. */
	unsigned char zeros[32] = { 0 }, ones[32], inc[32], dec[32];
	memset(ones, 0xff, sizeof ones);
	for (int i = 0; i < 32; i++) {
		inc[i] = (unsigned char)i;
		dec[i] = (unsigned char)(31 - i);
	}
	struct { const void *p; size_t n; unsigned want; } v[] = {
		{ "123456789", 9, 0xE3069283u },
		{ zeros, 32, 0x8A9136AAu },
		{ ones, 32, 0x62A8AB43u },
		{ inc, 32, 0x46DD794Eu },
		{ dec, 32, 0x113FDB5Cu },
		{ "", 0, 0 },
	};
	for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
		unsigned a = crc32c_update(0, v[i].p, v[i].n), b = crc32c_update_sw(0, v[i].p, v[i].n);
		if (a != v[i].want || b != v[i].want) {
			fprintf(stderr, "vector %zu: got %08x/%08x want %08x\n", i, a, b, v[i].want);
			fail = 1;
		}
	}
	/* Random lengths and misalignments; chunked updates equal one shot. */
	unsigned char *buf = malloc(70000);
	srand(7);
	for (int i = 0; i < 70000; i++)
		buf[i] = (unsigned char)rand();
	for (int t = 0; t < 200; t++) {
		size_t off = (size_t)rand() % 9, len = (size_t)rand() % 65536, cut = len ? (size_t)rand() % len : 0;
		unsigned one = crc32c_update(0, buf + off, len);
		unsigned sw = crc32c_update_sw(0, buf + off, len);
		unsigned two = crc32c_update(crc32c_update(0, buf + off, cut), buf + off + cut, len - cut);
		if (one != sw || one != two) {
			fprintf(stderr, "mismatch at off %zu len %zu cut %zu\n", off, len, cut);
			fail = 1;
			break;
		}
	}
	free(buf);
	printf("crc32c: hardware path %s\n", crc32c_hw_available() ? "on" : "off");
	return fail;
}
