/* util_bits.h - a float's bits and back (memcpy: no aliasing, no UB; a
 * register move once compiled). Header-only. */
#ifndef COLI_UTIL_BITS_H
#define COLI_UTIL_BITS_H

#include <stdint.h>
#include <string.h>

static inline uint32_t coli_f32_bits(float f)
{
	uint32_t u;
	memcpy(&u, &f, sizeof u);
	return u;
}

static inline float coli_bits_f32(uint32_t u)
{
	float f;
	memcpy(&f, &u, sizeof f);
	return f;
}

#endif
