/* ingest_sha256.c - SHA-256 against the FIPS 180-2 / NIST example vectors,
 * streaming in every split, and the file helper. */
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ingest_util.h"
#include "util_sha256.h"
#include "test_util.h"

static int force_portable;

static void init(coli_sha256 *s)
{
	coli_sha256_init(s);
	if (force_portable)
		s->accel = 0;
}

static void hex_of(const void *p, size_t n, char hex[65])
{
	coli_sha256 s;
	uint8_t d[32];
	init(&s);
	coli_sha256_update(&s, p, n);
	coli_sha256_final(&s, d);
	coli_sha256_to_hex(d, hex);
}

static void test_vectors(void)
{
	char hex[65];
	coli_sha256_hex("", 0, hex);
	CHECK(!strcmp(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"));
	hex_of("", 0, hex);
	CHECK(!strcmp(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"));
	hex_of("abc", 3, hex);
	CHECK(!strcmp(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"));
	const char *m2 = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
	hex_of(m2, strlen(m2), hex);
	CHECK(!strcmp(hex, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"));

	/* one million 'a', fed in uneven pieces */
	char *a = malloc(1000000);
	memset(a, 'a', 1000000);
	coli_sha256 s;
	uint8_t d[32];
	init(&s);
	for (size_t off = 0, step = 1; off < 1000000; off += step, step = step * 3 % 977 + 1)
		coli_sha256_update(&s, a + off, off + step > 1000000 ? 1000000 - off : step);
	coli_sha256_final(&s, d);
	coli_sha256_to_hex(d, hex);
	CHECK(!strcmp(hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0"));

	/* every split point of a 200-byte message agrees with one-shot */
	uint8_t msg[200];
	for (int i = 0; i < 200; i++)
		msg[i] = (uint8_t)(i * 31 + 7);
	char ref[65];
	for (size_t len = 0; len <= 200; len += 13) {
		hex_of(msg, len, ref);
		for (size_t cut = 0; cut <= len; cut++) {
			init(&s);
			coli_sha256_update(&s, msg, cut);
			coli_sha256_update(&s, msg + cut, len - cut);
			coli_sha256_final(&s, d);
			coli_sha256_to_hex(d, hex);
			CHECK(!strcmp(hex, ref));
		}
	}

	/* file digest equals buffer digest; a missing file names the path */
	write_bytes(tpath("a.bin"), a, 1000000);
	coli_err err = { 0 };
	CHECK(coli_sha256_file(tpath("a.bin"), hex, &err) == 0);
	CHECK(!strcmp(hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0"));
	CHECK(coli_sha256_file(tpath("missing.bin"), hex, &err) < 0);
	CHECK(strstr(err.msg, "missing.bin") != NULL);
	free(a);
}

int main(void)
{
	tmp_setup();
	coli_sha256 probe;
	coli_sha256_init(&probe);
	printf("SHA extensions %s\n", probe.accel ? "used" : "not available");
	test_vectors();
	force_portable = 1;  /* the same checks on the portable code */
	test_vectors();
	return test_summary(__FILE__);
}
