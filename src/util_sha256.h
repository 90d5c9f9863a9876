/* util_sha256.h - streaming SHA-256 (FIPS 180-4), for manifests and fingerprints.
 *
 *   coli_sha256 s; coli_sha256_init(&s);
 *   coli_sha256_update(&s, buf, n); ...
 *   uint8_t d[32]; coli_sha256_final(&s, d);
 *
 * Hex digests are 64 lowercase characters plus a terminating NUL. */
#ifndef COLI_SHA256_H
#define COLI_SHA256_H

#include <stddef.h>
#include <stdint.h>

#include "coli_err.h"

#define COLI_SHA256_DIGEST 32

typedef struct coli_sha256 {
	uint32_t h[8];
	uint64_t nbytes;       /* total bytes fed so far */
	uint8_t block[64];     /* pending partial block */
	size_t fill;           /* bytes used in block */
	int accel;             /* 1: x86 SHA extensions (set by init; 0 forces portable C) */
} coli_sha256;

void coli_sha256_init(coli_sha256 *s);
void coli_sha256_update(coli_sha256 *s, const void *data, size_t len);
/* Writes the 32-byte digest; `s` must be re-initialised before reuse. */
void coli_sha256_final(coli_sha256 *s, uint8_t digest[COLI_SHA256_DIGEST]);

/* Lowercase hex of a 32-byte digest. */
void coli_sha256_to_hex(const uint8_t digest[COLI_SHA256_DIGEST], char hex[65]);
/* One-shot digest of a buffer, as hex. */
void coli_sha256_hex(const void *data, size_t len, char hex[65]);
/* Digest of a whole file, read sequentially in 1 MiB chunks. Returns 0 or a
 * negative errno with `err` naming the file. */
int coli_sha256_file(const char *path, char hex[65], coli_err *err);

#endif
