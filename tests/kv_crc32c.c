/* kv_crc32c.c - CRC32C known answers; hardware and table paths agree. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util_crc32c.h"

int main(int argc, char **argv)
{
	int fail = 0;
	(void)argc;
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
	/* long buffers (the VPCLMULQDQ folding path from 1 KiB: every
	 * length class around its 256- and 16-byte steps), any start, any
	 * incoming CRC, against the table */
	size_t big = (size_t)4 << 20;
	buf = malloc(big + 64);
	for (size_t i = 0; i < big + 64; i++)
		buf[i] = (unsigned char)(i * 2654435761u >> 11);
	for (int t = 0; t < 400 && !fail; t++) {
		size_t off = (size_t)rand() % 64;
		size_t len = t < 300 ? 1000 + (size_t)t : (size_t)rand() % big;
		unsigned init = (unsigned)rand();
		if (crc32c_update(init, buf + off, len) != crc32c_update_sw(init, buf + off, len)) {
			fprintf(stderr, "long buffer mismatch at off %zu len %zu\n", off, len);
			fail = 1;
		}
	}
	free(buf);
	printf("crc32c: hardware path %s, folding path %s\n", crc32c_hw_available() ? "on" : "off",
	       crc32c_fold_available() ? "on" : "off");
	/* where folding is on, the same checks once more with it off, so the
	 * three-lane crc32 path of long buffers is checked too */
	if (!fail && crc32c_fold_available() && !getenv("COLI_CRC32C_FOLD")) {
		char cmd[4200];
		snprintf(cmd, sizeof cmd, "COLI_CRC32C_FOLD=0 '%s'", argv[0]);
		if (system(cmd) != 0) {
			fprintf(stderr, "crc32c: the crc32 path (COLI_CRC32C_FOLD=0) fails\n");
			fail = 1;
		}
	}
	return fail;
}
