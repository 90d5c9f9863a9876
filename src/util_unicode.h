/* util_unicode.h - the few UTF-8 facts the tokenizer needs: a lossy decoder
 * that replaces invalid sequences exactly as the WHATWG TextDecoder does
 * (one U+FFFD per maximal subpart, so our output equals the JavaScript
 * reference byte for byte), and GPT-2's byte <-> printable-char alphabet. */
#ifndef COLI_UNICODE_H
#define COLI_UNICODE_H

#include <stddef.h>
#include <stdint.h>

/* The UTF-8 lead-byte table (Unicode table 3-7), written once: the length
 * of the sequence lead byte b starts (1 for ASCII, 2-4, 0 when b cannot
 * start one: a continuation byte, C0, C1, F5-FF) and the allowed range
 * [*lo, *hi] of the second byte (narrower after E0, ED, F0 and F4: no
 * overlong form, no surrogate, nothing past U+10FFFF); the later bytes are
 * 80-BF. */
static inline int unicode_utf8_lead(uint8_t b, uint8_t *lo, uint8_t *hi)
{
	*lo = 0x80;
	*hi = 0xBF;
	if (b < 0x80)
		return 1;
	if (b >= 0xC2 && b <= 0xDF)
		return 2;
	if (b >= 0xE0 && b <= 0xEF) {
		if (b == 0xE0)
			*lo = 0xA0; /* overlong */
		if (b == 0xED)
			*hi = 0x9F; /* surrogates */
		return 3;
	}
	if (b >= 0xF0 && b <= 0xF4) {
		if (b == 0xF0)
			*lo = 0x90; /* overlong */
		if (b == 0xF4)
			*hi = 0x8F; /* beyond U+10FFFF */
		return 4;
	}
	return 0;
}

/* Length of the valid UTF-8 sequence at s[0..n), 0 when it is invalid,
 * -1 when it is a valid but truncated prefix (more bytes could complete
 * it). *cp receives the code point when the result is > 0. */
int unicode_utf8_next(const uint8_t *s, size_t n, uint32_t *cp);

/* Encode cp as UTF-8 into out (4 bytes room); returns bytes written. */
int unicode_utf8_put(uint32_t cp, uint8_t *out);

/* Lossy copy of in[0..n) into out (room for 3*n bytes is always enough).
 * With `final` set a truncated tail becomes U+FFFD; otherwise it is left
 * unconsumed and *consumed says how far the input was used. Returns bytes
 * written. */
size_t unicode_utf8_lossy(const uint8_t *in, size_t n, int final, uint8_t *out,
			  size_t *consumed);

/* Non-zero when the buffer is entirely valid UTF-8. */
int unicode_utf8_valid(const uint8_t *s, size_t n);

/* Unicode White_Space property (what Oniguruma and the JS reference call
 * \s), used for lstrip/rstrip of added tokens. */
int unicode_is_white_space(uint32_t cp);

/* GPT-2 byte-level alphabet: every byte maps to one printable code point. */
uint32_t unicode_byte_to_cp(uint8_t b);
/* Inverse; -1 when cp is not in the alphabet. */
int unicode_cp_to_byte(uint32_t cp);

#endif
