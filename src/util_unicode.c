/* util_unicode.c - see util_unicode.h. */
#include "config.h"

#include "util_unicode.h"

#include <string.h>

int unicode_utf8_next(const uint8_t *s, size_t n, uint32_t *cp)
{
	if (n == 0)
		return -1;
	uint8_t b = s[0];
	if (b < 0x80) {
		*cp = b;
		return 1;
	}
	uint8_t lo, hi; /* allowed range of the second byte */
	int len = unicode_utf8_lead(b, &lo, &hi);
	if (!len)
		return 0;
	uint32_t c = b & (0x7Fu >> len); /* the lead's payload bits */
	for (int i = 1; i < len; i++) {
		if ((size_t)i >= n)
			return -1;
		uint8_t x = s[i];
		uint8_t l = i == 1 ? lo : 0x80, h = i == 1 ? hi : 0xBF;
		if (x < l || x > h)
			return 0;
		c = (c << 6) | (x & 0x3F);
	}
	*cp = c;
	return len;
}

int unicode_utf8_put(uint32_t cp, uint8_t *out)
{
	if (cp < 0x80) {
		out[0] = (uint8_t)cp;
		return 1;
	}
	if (cp < 0x800) {
		out[0] = (uint8_t)(0xC0 | (cp >> 6));
		out[1] = (uint8_t)(0x80 | (cp & 0x3F));
		return 2;
	}
	if (cp < 0x10000) {
		out[0] = (uint8_t)(0xE0 | (cp >> 12));
		out[1] = (uint8_t)(0x80 | ((cp >> 6) & 0x3F));
		out[2] = (uint8_t)(0x80 | (cp & 0x3F));
		return 3;
	}
	out[0] = (uint8_t)(0xF0 | (cp >> 18));
	out[1] = (uint8_t)(0x80 | ((cp >> 12) & 0x3F));
	out[2] = (uint8_t)(0x80 | ((cp >> 6) & 0x3F));
	out[3] = (uint8_t)(0x80 | (cp & 0x3F));
	return 4;
}

/* Number of bytes forming the maximal subpart of an ill-formed sequence at
 * s: the lead byte plus the continuation bytes that were still acceptable
 * before the offending byte. The WHATWG decoder emits one U+FFFD for it. */
static size_t maximal_subpart(const uint8_t *s, size_t n)
{
	uint8_t lo, hi;
	int len = unicode_utf8_lead(s[0], &lo, &hi);
	if (len < 2)
		return 1;
	size_t i = 1;
	for (; i < (size_t)len && i < n; i++) {
		uint8_t l = i == 1 ? lo : 0x80, h = i == 1 ? hi : 0xBF;
		if (s[i] < l || s[i] > h)
			break;
	}
	return i;
}

size_t unicode_utf8_lossy(const uint8_t *in, size_t n, int final, uint8_t *out,
			  size_t *consumed)
{
	size_t i = 0, o = 0;
	while (i < n) {
		uint32_t cp;
		int r = unicode_utf8_next(in + i, n - i, &cp);
		if (r > 0) {
			memcpy(out + o, in + i, (size_t)r);
			o += (size_t)r;
			i += (size_t)r;
			continue;
		}
		if (r < 0 && !final)
			break; /* truncated: wait for more bytes */
		/* invalid, or truncated at the end of the stream */
		i += maximal_subpart(in + i, n - i);
		out[o++] = 0xEF;
		out[o++] = 0xBF;
		out[o++] = 0xBD;
	}
	if (consumed)
		*consumed = i;
	return o;
}

int unicode_utf8_valid(const uint8_t *s, size_t n)
{
	size_t i = 0;
	while (i < n) {
		if (s[i] < 0x80) {
			i++;
			continue;
		}
		uint32_t cp;
		int r = unicode_utf8_next(s + i, n - i, &cp);
		if (r <= 0)
			return 0;
		i += (size_t)r;
	}
	return 1;
}

int unicode_is_white_space(uint32_t c)
{
	return (c >= 0x09 && c <= 0x0D) || c == 0x20 || c == 0x85 || c == 0xA0 ||
	       c == 0x1680 || (c >= 0x2000 && c <= 0x200A) || c == 0x2028 ||
	       c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

/* GPT-2: printable Latin-1 bytes map to themselves, the other 68 bytes to
 * 256, 257, ... in byte order. */
static int byte_printable(unsigned b)
{
	return (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
}

/* The 68 unprintable bytes, in order: 0x00-0x20 (33), 0x7F-0xA0 (34),
 * 0xAD (1); they map to 256 + their rank. */
uint32_t unicode_byte_to_cp(uint8_t b)
{
	if (byte_printable(b))
		return b;
	if (b <= 0x20)
		return 256u + b;
	if (b >= 0x7F && b <= 0xA0)
		return 256u + 33u + (b - 0x7Fu);
	return 256u + 67u; /* 0xAD */
}

int unicode_cp_to_byte(uint32_t cp)
{
	if (cp < 256)
		return byte_printable(cp) ? (int)cp : -1;
	uint32_t k = cp - 256;
	if (k < 33)
		return (int)k;
	if (k < 67)
		return (int)(0x7F + (k - 33));
	return k == 67 ? 0xAD : -1;
}
