/* ingest_dtype.c - dtype conversions checked against values computed here
 * independently (by formula, in double precision). */
#include "config.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "ingest_dtype.h"
#include "ingest_safetensors.h"
#include "test_util.h"

/* OCP FP8 E4M3FN by definition: bias 7, 3 mantissa bits, no infinities,
 * S.1111.111 NaN, exponent field 0 subnormal. */
static double fp8_ref(int code)
{
	int s = code >> 7, e = (code >> 3) & 15, m = code & 7;
	double v;
	if (e == 15 && m == 7)
		return NAN;
	if (e == 0)
		v = m / 8.0 * pow(2, -6);
	else
		v = (1 + m / 8.0) * pow(2, e - 7);
	return s ? -v : v;
}

static double f16_ref(int code)
{
	int s = code >> 15, e = (code >> 10) & 31, m = code & 1023;
	double v;
	if (e == 31)
		v = m ? NAN : INFINITY;
	else if (e == 0)
		v = m / 1024.0 * pow(2, -14);
	else
		v = (1 + m / 1024.0) * pow(2, e - 15);
	return s ? -v : v;
}

static int same(double a, float b)
{
	if (isnan(a))
		return isnan(b);
	return a == (double)b && !signbit(a) == !signbit(b);
}

static void test_fp8(void)
{
	int nan_count = 0;
	for (int c = 0; c < 256; c++) {
		double want = fp8_ref(c);
		float got = dtype_fp8_e4m3_to_f32((uint8_t)c);
		CHECK(same(want, got),
			"fp8 code 0x%02x: got %g want %g", c, got, want);
		if (isnan(want)) {
			nan_count++;
			continue;
		}
		/* every finite code encodes back to itself */
		CHECK(dtype_f32_to_fp8_e4m3(got) == c);
	}
	CHECK(nan_count == 2);
	CHECK(dtype_fp8_e4m3_to_f32(0x7e) == 448.0f);
	CHECK(dtype_fp8_e4m3_to_f32(0x01) == ldexpf(1, -9));
	/* midpoints between neighbours round to the even code */
	for (int c = 0; c < 0x7e; c++) {
		double mid = (fp8_ref(c) + fp8_ref(c + 1)) / 2;
		int even = (c & 1) ? c + 1 : c;
		CHECK(dtype_f32_to_fp8_e4m3((float)mid) == even);
		CHECK(dtype_f32_to_fp8_e4m3((float)-mid) == (even | 0x80));
		/* just off the midpoint goes to the nearer one */
		CHECK(dtype_f32_to_fp8_e4m3(nextafterf((float)mid, 0)) == c);
		CHECK(dtype_f32_to_fp8_e4m3(nextafterf((float)mid, 1000)) == c + 1);
	}
	/* saturating: beyond 448 (including inf) clamps, NaN stays NaN */
	CHECK(dtype_f32_to_fp8_e4m3(449.0f) == 0x7e);
	CHECK(dtype_f32_to_fp8_e4m3(1e9f) == 0x7e);
	CHECK(dtype_f32_to_fp8_e4m3(INFINITY) == 0x7e);
	CHECK(dtype_f32_to_fp8_e4m3(-INFINITY) == 0xfe);
	CHECK((dtype_f32_to_fp8_e4m3(NAN) & 0x7f) == 0x7f);
	CHECK(dtype_f32_to_fp8_e4m3(ldexpf(1, -11)) == 0x00);  /* below half the smallest subnormal */
	CHECK(dtype_f32_to_fp8_e4m3(ldexpf(3, -11)) == 0x01);  /* 0.75 quantum rounds up */
	CHECK(dtype_f32_to_fp8_e4m3(-0.0f) == 0x80);
	/* e5m2 is the top byte of an f16 */
	for (int c = 0; c < 256; c++)
		CHECK(same(f16_ref(c << 8), dtype_fp8_e5m2_to_f32((uint8_t)c)));
}

static void test_f16(void)
{
	for (int c = 0; c < 65536; c++) {
		double want = f16_ref(c);
		float got = dtype_f16_to_f32((uint16_t)c);
		if (!same(want, got)) {
			FAIL("f16 code 0x%04x: got %g want %g", c, got, want);
			continue;
		}
		if (isnan(want)) {
			CHECK((dtype_f32_to_f16(got) & 0x7c00) == 0x7c00 && (dtype_f32_to_f16(got) & 0x3ff));
			continue;
		}
		CHECK(dtype_f32_to_f16(got) == c);
		/* ties to even between c and c+1 (positive finite, below max) */
		if (c < 0x7bff) {
			double mid = (want + f16_ref(c + 1)) / 2;  /* exact in f32 */
			int even = (c & 1) ? c + 1 : c;
			CHECK(dtype_f32_to_f16((float)mid) == even);
			CHECK(dtype_f32_to_f16(nextafterf((float)mid, 0)) == c);
			CHECK(dtype_f32_to_f16(nextafterf((float)mid, 1e6f)) == c + 1);
		}
	}
	CHECK(dtype_f32_to_f16(65504.0f) == 0x7bff);
	CHECK(dtype_f32_to_f16(65519.0f) == 0x7bff);
	CHECK(dtype_f32_to_f16(65520.0f) == 0x7c00);  /* tie rounds to even = inf */
	CHECK(dtype_f32_to_f16(-INFINITY) == 0xfc00);
	CHECK(dtype_f32_to_f16(ldexpf(1, -25)) == 0);  /* tie with 0 -> even 0 */
	CHECK(dtype_f32_to_f16(ldexpf(3, -26)) == 1);
	CHECK(dtype_f32_to_f16(ldexpf(1, -30)) == 0);
}

static void test_bf16(void)
{
	for (int c = 0; c < 65536; c++) {
		uint32_t bits = (uint32_t)c << 16;
		float want;
		memcpy(&want, &bits, 4);
		float got = dtype_bf16_to_f32((uint16_t)c);
		CHECK(memcmp(&want, &got, 4) == 0);
		if (isnan(want)) {
			CHECK(isnan(dtype_bf16_to_f32(dtype_f32_to_bf16(got))));
			continue;
		}
		CHECK(dtype_f32_to_bf16(got) == c);
		if ((c & 0x7fff) < 0x7f7f) {
			/* midpoint to the next code (away from zero), exact in f32 */
			uint32_t mb = bits | 0x8000u;
			float mid;
			memcpy(&mid, &mb, 4);
			int even = (c & 1) ? c + 1 : c;
			CHECK(dtype_f32_to_bf16(mid) == even);
			CHECK(dtype_f32_to_bf16(nextafterf(mid, 0)) == c);
		}
	}
	CHECK(dtype_f32_to_bf16(3.4028235e38f) == 0x7f80);  /* FLT_MAX rounds to inf */
	CHECK(dtype_f32_to_bf16(1.0f) == 0x3f80);
	float v = 1.00390625f;  /* 1 + 2^-8: exactly halfway, rounds to even 1.0 */
	CHECK(dtype_f32_to_bf16(v) == 0x3f80);
	CHECK(dtype_f32_to_bf16(-1.01171875f) == 0xbf82);  /* 1 + 3*2^-8 ties up to even */
}

static void test_bulk(void)
{
	/* In-place widening with raw bytes at the tail of the output buffer */
	float out[300];
	uint8_t *tail = (uint8_t *)out + sizeof out - 300;
	for (int i = 0; i < 300; i++)
		tail[i] = (uint8_t)(i * 7);
	CHECK(dtype_to_f32(ST_F8_E4M3, tail, out, 300) == 0);
	for (int i = 0; i < 300; i++)
		CHECK(same(fp8_ref((uint8_t)(i * 7)), out[i]));
	uint16_t *t16 = (uint16_t *)((uint8_t *)out + sizeof out - 600);
	for (int i = 0; i < 300; i++)
		t16[i] = (uint16_t)(0x3c00 + i * 3);
	CHECK(dtype_to_f32(ST_F16, t16, out, 300) == 0);
	for (int i = 0; i < 300; i++)
		CHECK(same(f16_ref(0x3c00 + i * 3), out[i]));
	CHECK(dtype_to_f32(ST_I32, tail, out, 1) == -1);

	float w[3 * 5];
	float s[2 * 3] = { 1, 2, 3, 4, 5, 6 };  /* block 2: rows {0,1},{2}; cols {0,1},{2,3},{4} */
	for (int i = 0; i < 15; i++)
		w[i] = 1;
	dtype_apply_block_scales(w, 3, 5, s, 2);
	const float want[15] = { 1, 1, 2, 2, 3, 1, 1, 2, 2, 3, 4, 4, 5, 5, 6 };
	CHECK(memcmp(w, want, sizeof w) == 0);
}

int main(void)
{
	test_fp8();
	test_f16();
	test_bf16();
	test_bulk();
	return test_summary(__FILE__);
}
