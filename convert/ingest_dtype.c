/* ingest_dtype.c - see ingest_dtype.h.
 *
 * All f32 -> narrow conversions round to nearest, ties to even, by the
 * classic integer trick: add (half-ulp - 1) plus the lowest kept bit, then
 * truncate. A carry out of the mantissa bumps the exponent, which is exactly
 * the right rounding across binade boundaries. Results below the narrow
 * format's normal range are handled separately by scaling with a power of
 * two (exact) and rounding with rintf (nearest-even in the default mode). */
#include "config.h"

#include "ingest_dtype.h"
#include "ingest_safetensors.h"
#include "quant.h"
#include "util_bits.h"

#include <math.h>
#include <string.h>

float dtype_bf16_to_f32(uint16_t v)
{
	return coli_bits_f32((uint32_t)v << 16);
}

uint16_t dtype_f32_to_bf16(float f)
{
	uint32_t u = coli_f32_bits(f);
	if ((u & 0x7fffffffu) > 0x7f800000u)  /* NaN: keep sign, force quiet */
		return (uint16_t)((u >> 16) | 0x0040u);
	u += 0x7fffu + ((u >> 16) & 1u);  /* overflow rounds to inf, as RNE must */
	return (uint16_t)(u >> 16);
}

/* binary16 is the runtime's codec (quant.c, quant.h: the int4 scales use
 * it): one implementation, round to nearest even. The two that existed
 * agreed on all 2^32 float inputs and all 65,536 halves before this one
 * was removed. */
float dtype_f16_to_f32(uint16_t v)
{
	return coli_half_to_float(v);
}

uint16_t dtype_f32_to_f16(float f)
{
	return coli_float_to_half(f);
}

float dtype_fp8_e4m3_to_f32(uint8_t v)
{
	uint32_t exp = (v >> 3) & 0xfu;
	uint32_t man = v & 0x7u;
	float mag;
	if (exp == 15 && man == 7)
		mag = NAN;
	else if (exp == 0)
		mag = ldexpf((float)man, -9);       /* subnormal: man/8 * 2^-6 */
	else
		mag = coli_bits_f32(((exp + 120u) << 23) | (man << 20));
	return (v & 0x80u) ? -mag : mag;
}

uint8_t dtype_f32_to_fp8_e4m3(float f)
{
	uint32_t u = coli_f32_bits(f);
	uint8_t sign = (uint8_t)((u >> 24) & 0x80u);
	uint32_t a = u & 0x7fffffffu;
	if (a > 0x7f800000u)
		return sign | 0x7fu;
	if (a >= 0x3c800000u) {                 /* >= 2^-6: normal result */
		uint32_t r = (a + 0x7ffffu + ((a >> 20) & 1u)) >> 20;
		r -= (127u - 7u) << 3;
		/* e4m3fn has no infinity: saturate to the largest finite
		 * value, 448 (0x7e); 0x7f is NaN. */
		if (r > 0x7eu)
			r = 0x7eu;
		return sign | (uint8_t)r;
	}
	float q = rintf(coli_bits_f32(a) * 512.0f);  /* quantum 2^-9 */
	return sign | (uint8_t)q;
}

void dtype_apply_block_scales(float *w, int64_t rows, int64_t cols,
			      const float *scale_inv, int block)
{
	int64_t bcols = (cols + block - 1) / block;
	for (int64_t r = 0; r < rows; r++) {
		const float *srow = scale_inv + (r / block) * bcols;
		float *wrow = w + r * cols;
		for (int64_t b = 0; b < bcols; b++) {
			float s = srow[b];
			int64_t end = (b + 1) * block < cols ? (b + 1) * block : cols;
			for (int64_t c = b * block; c < end; c++)
				wrow[c] *= s;
		}
	}
}

float dtype_fp8_e5m2_to_f32(uint8_t v)
{
	return dtype_f16_to_f32((uint16_t)(v << 8));
}

int dtype_to_f32(int st_dtype, const void *src, float *dst, size_t n)
{
	const unsigned char *s = src;
	/* Element-wise loads through memcpy: unaligned and alias-safe in the
	 * tail layout described in ingest_dtype.h. */
	switch (st_dtype) {
	case ST_F32:
		memmove(dst, src, n * sizeof(float));
		return 0;
	case ST_F16:
	case ST_BF16:
		for (size_t i = 0; i < n; i++) {
			uint16_t v;
			memcpy(&v, s + 2 * i, 2);
			dst[i] = st_dtype == ST_F16 ? dtype_f16_to_f32(v) : dtype_bf16_to_f32(v);
		}
		return 0;
	case ST_F8_E4M3:
	case ST_F8_E5M2: {
		/* a 256-entry table per call: cheap next to any real tensor,
		 * and no shared state to initialise across threads */
		float lut[256];
		for (int c = 0; c < 256; c++)
			lut[c] = st_dtype == ST_F8_E4M3 ? dtype_fp8_e4m3_to_f32((uint8_t)c)
							: dtype_fp8_e5m2_to_f32((uint8_t)c);
		for (size_t i = 0; i < n; i++)
			dst[i] = lut[s[i]];
		return 0;
	}
	case ST_F64:
		/* never aliased: 8-byte elements do not fit the tail layout */
		for (size_t i = 0; i < n; i++) {
			double d;
			memcpy(&d, s + 8 * i, 8);
			dst[i] = (float)d;
		}
		return 0;
	default:
		return -1;
	}
}
