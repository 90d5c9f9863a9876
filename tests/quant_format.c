/* quant_format.c - the container's block layouts decode as quant.h says,
 * half conversion rounds to nearest even, and the quantizers stay within
 * their error bounds (element-wise and as relative RMS). */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "quant.h"
#include "test_util.h"

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static double urand(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (double)(rng >> 11) * 0x1p-53;
}

static float grand(void)
{
	double u = urand() + 1e-12, v = urand();
	return (float)(sqrt(-2.0 * log(u)) * cos(6.283185307179586 * v));
}

static void test_half(void)
{
	/* every finite half survives half -> float -> half */
	for (uint32_t h = 0; h < 0x10000; h++) {
		if ((h & 0x7c00) == 0x7c00 && (h & 0x3ff))
			continue; /* NaN payloads are not preserved */
		uint16_t back = coli_float_to_half(coli_half_to_float((uint16_t)h));
		CHECK(back == h, "half 0x%04x came back as 0x%04x", h, back);
	}
	CHECK(coli_half_to_float(0x3c00) == 1.0f, "1.0");
	CHECK(coli_half_to_float(0xc000) == -2.0f, "-2.0");
	CHECK(coli_half_to_float(0x0001) == 0x1p-24f, "smallest subnormal");
	CHECK(coli_half_to_float(0x7bff) == 65504.0f, "max half");
	/* ties go to even */
	CHECK(coli_float_to_half(1.0f + 0x1p-11f) == 0x3c00, "tie down to even");
	CHECK(coli_float_to_half(1.0f + 3 * 0x1p-11f) == 0x3c02, "tie up to even");
	CHECK(coli_float_to_half(1.0f + 0x1p-11f + 0x1p-20f) == 0x3c01, "above tie");
	CHECK(coli_float_to_half(0x1p-25f) == 0x0000, "subnormal tie to 0");
	CHECK(coli_float_to_half(3 * 0x1p-25f) == 0x0002, "subnormal tie to 2");
	CHECK(coli_float_to_half(0x1p-14f - 0x1p-26f) == 0x0400, "round up into normals");
	CHECK(coli_float_to_half(65519.0f) == 0x7bff, "65519 stays finite");
	CHECK(coli_float_to_half(65520.0f) == 0x7c00, "65520 overflows");
	CHECK(coli_float_to_half(-INFINITY) == 0xfc00, "-inf");
	CHECK((coli_float_to_half(NAN) & 0x7e00) == 0x7e00, "nan");
	CHECK(coli_float_to_half(-0.0f) == 0x8000, "-0");
#ifdef __FLT16_MAX__
	/* the compiler's own conversion is correctly rounded: compare */
	for (int i = 0; i < 2000000; i++) {
		uint32_t u = (uint32_t)(rng >> 32);
		(void)urand();
		float f;
		memcpy(&f, &u, sizeof f);
		if (isnan(f))
			continue;
		_Float16 r = (_Float16)f;
		uint16_t want;
		memcpy(&want, &r, sizeof want);
		uint16_t got = coli_float_to_half(f);
		CHECK(got == want, "float %a: half 0x%04x, compiler says 0x%04x", (double)f, got, want);
		if (got != want)
			break;
	}
#endif
}

static void test_names(void)
{
	CHECK(!strcmp(coli_qtype_name(COLI_Q_INT4), "int4-g64"), "int4 name");
	CHECK(!strcmp(coli_qtype_name(COLI_Q_INT8), "int8"), "int8 name");
	CHECK(!strcmp(coli_qtype_name(COLI_Q_F32), "f32"), "f32 name");
	CHECK(coli_qtype_name(7) == NULL, "unknown name");
	CHECK(coli_qtype_parse("int4") == COLI_Q_INT4, "parse int4");
	CHECK(coli_qtype_parse("int4-g64") == COLI_Q_INT4, "parse int4-g64");
	CHECK(coli_qtype_parse("int8") == COLI_Q_INT8, "parse int8");
	CHECK(coli_qtype_parse("f32") == COLI_Q_F32, "parse f32");
	CHECK(coli_qtype_parse("q4") == -1 && coli_qtype_parse(NULL) == -1, "parse unknown");
	CHECK(coli_qtype_row_bytes(COLI_Q_INT4, 6144) == 96 * 36, "int4 row bytes");
	CHECK(coli_qtype_row_bytes(COLI_Q_INT8, 128) == 2 * 68, "int8 row bytes");
	CHECK(coli_qtype_bytes(COLI_Q_F32, 3, 5) == 60, "f32 bytes");
	CHECK(coli_qtype_bytes(COLI_Q_INT4, 2048, 6144) == 2048u * 96 * 36, "int4 bytes");
	CHECK(offsetof(coli_block_q4, d) == 0 && offsetof(coli_block_q4, m) == 2 &&
	      offsetof(coli_block_q4, q) == 4, "q4 field offsets");
	CHECK(offsetof(coli_block_q8, d) == 0 && offsetof(coli_block_q8, q) == 4, "q8 field offsets");
	float w[64] = { 0 };
	unsigned char buf[128];
	CHECK(coli_quantize_rows(COLI_Q_INT4, w, 1, 65, buf) < 0, "cols not multiple of 64");
	CHECK(coli_quantize_rows(9, w, 1, 64, buf) < 0, "unknown type");
	w[5] = NAN;
	CHECK(coli_quantize_rows(COLI_Q_INT4, w, 1, 64, buf) == -ERANGE, "NaN int4");
	CHECK(coli_quantize_rows(COLI_Q_INT8, w, 1, 64, buf) == -ERANGE, "NaN int8");
	w[5] = INFINITY;
	CHECK(coli_quantize_rows(COLI_Q_INT8, w, 1, 64, buf) == -ERANGE, "inf int8");
	w[5] = 70000.0f;
	CHECK(coli_quantize_rows(COLI_Q_INT4, w, 1, 64, buf) == -ERANGE, "beyond half int4");
	CHECK(coli_quantize_rows(COLI_Q_INT8, w, 1, 64, buf) == 0, "large is fine for int8");
	w[5] = 0.0f;
}

/* Hand-built blocks decode to known values: the layout is the contract. */
static void test_layout(void)
{
	coli_block_q4 b4;
	b4.d = 0x3800; /* 0.5 */
	b4.m = 0xbc00; /* -1.0 */
	for (int j = 0; j < 32; j++)
		b4.q[j] = (uint8_t)((j & 15) | ((15 - (j & 15)) << 4));
	float o[64];
	coli_dequantize_rows(COLI_Q_INT4, &b4, 1, 64, o);
	for (int j = 0; j < 32; j++) {
		CHECK(o[j] == 0.5f * (float)(j & 15) - 1.0f, "q4 element %d = %g", j, (double)o[j]);
		CHECK(o[j + 32] == 0.5f * (float)(15 - (j & 15)) - 1.0f, "q4 element %d = %g",
		      j + 32, (double)o[j + 32]);
	}

	coli_block_q8 b8;
	b8.d = 0.25f;
	for (int j = 0; j < 64; j++)
		b8.q[j] = (int8_t)(j - 32);
	coli_dequantize_rows(COLI_Q_INT8, &b8, 1, 64, o);
	for (int j = 0; j < 64; j++)
		CHECK(o[j] == 0.25f * (float)(j - 32), "q8 element %d = %g", j, (double)o[j]);

	/* Quantizer writes the exact bytes: values 0..15 in order -> d = 1,
	 * m = 0, element j = j % 16, little-endian halves first. */
	float w[64];
	for (int j = 0; j < 64; j++)
		w[j] = (float)(j % 16);
	unsigned char raw[36];
	CHECK(coli_quantize_rows(COLI_Q_INT4, w, 1, 64, raw) == 0, "quantize");
	CHECK(raw[0] == 0x00 && raw[1] == 0x3c && raw[2] == 0x00 && raw[3] == 0x00,
	      "q4 header bytes %02x %02x %02x %02x", raw[0], raw[1], raw[2], raw[3]);
	for (int j = 0; j < 32; j++)
		CHECK(raw[4 + j] == (unsigned char)((j % 16) * 17), "q4 byte %d = %02x", j, raw[4 + j]);

	/* int8: absmax 127 gives d = 1 and q = w exactly */
	for (int j = 0; j < 64; j++)
		w[j] = (float)(j * 4 - 127 > 127 ? 127 : j * 4 - 127);
	unsigned char raw8[68];
	CHECK(coli_quantize_rows(COLI_Q_INT8, w, 1, 64, raw8) == 0, "quantize q8");
	float d;
	memcpy(&d, raw8, 4);
	CHECK(d == 1.0f, "q8 d = %g", (double)d);
	for (int j = 0; j < 64; j++)
		CHECK((signed char)raw8[4 + j] == (signed char)w[j], "q8 byte %d", j);

	/* d == 0: a constant group decodes to the half-rounded constant */
	for (int j = 0; j < 64; j++)
		w[j] = 0.1f;
	coli_quantize_rows(COLI_Q_INT4, w, 1, 64, raw);
	coli_dequantize_rows(COLI_Q_INT4, raw, 1, 64, o);
	for (int j = 0; j < 64; j++)
		CHECK(o[j] == coli_half_to_float(coli_float_to_half(0.1f)), "constant group");
	memset(w, 0, sizeof w);
	coli_quantize_rows(COLI_Q_INT4, w, 1, 64, raw);
	coli_quantize_rows(COLI_Q_INT8, w, 1, 64, raw8);
	coli_dequantize_rows(COLI_Q_INT4, raw, 1, 64, o);
	for (int j = 0; j < 64; j++)
		CHECK(o[j] == 0.0f, "zero group int4");
	coli_dequantize_rows(COLI_Q_INT8, raw8, 1, 64, o);
	for (int j = 0; j < 64; j++)
		CHECK(o[j] == 0.0f, "zero group int8");
}

/* Element-wise bounds: int8 |err| <= d/2; int4 |err| <= d/2 plus what the
 * half rounding of d and m moved the grid by. */
static void test_bounds(void)
{
	enum { ROWS = 64, COLS = 512 };
	static float w[ROWS * COLS], back[ROWS * COLS];
	static unsigned char q[ROWS * COLS * 2];
	for (int i = 0; i < ROWS * COLS; i++)
		w[i] = grand() * (i % 3 == 0 ? 0.02f : 1.5f) + (i % 7 == 0 ? 0.3f : 0.0f);

	CHECK(coli_quantize_rows(COLI_Q_INT8, w, ROWS, COLS, q) == 0, "q8");
	coli_dequantize_rows(COLI_Q_INT8, q, ROWS, COLS, back);
	for (int b = 0; b < ROWS * COLS / 64; b++) {
		const coli_block_q8 *blk = (const coli_block_q8 *)q + b;
		for (int j = 0; j < 64; j++) {
			float e = fabsf(w[b * 64 + j] - back[b * 64 + j]);
			CHECK(e <= 0.5f * blk->d * (1.0f + 1e-5f), "q8 block %d elt %d err %g d %g",
			      b, j, (double)e, (double)blk->d);
		}
	}

	CHECK(coli_quantize_rows(COLI_Q_INT4, w, ROWS, COLS, q) == 0, "q4");
	coli_dequantize_rows(COLI_Q_INT4, q, ROWS, COLS, back);
	for (int b = 0; b < ROWS * COLS / 64; b++) {
		const coli_block_q4 *blk = (const coli_block_q4 *)q + b;
		const float *wb = w + b * 64;
		float lo = wb[0], hi = wb[0];
		for (int j = 1; j < 64; j++) {
			lo = fminf(lo, wb[j]);
			hi = fmaxf(hi, wb[j]);
		}
		float d = coli_half_to_float(blk->d), m = coli_half_to_float(blk->m);
		double bound = 0.5 * d + 15.0 * fabs(d - (hi - lo) / 15.0) + fabs(m - lo) +
			       1e-6 * (fabs(hi) + fabs(lo));
		for (int j = 0; j < 64; j++) {
			double e = fabs((double)wb[j] - back[b * 64 + j]);
			CHECK(e <= bound, "q4 block %d elt %d err %g bound %g", b, j, e, bound);
		}
	}

	/* Relative RMS on Gaussian weights: int8 well under 1 %, affine int4
	 * under 12 % and better than the symmetric grid of the same size. */
	for (int i = 0; i < ROWS * COLS; i++)
		w[i] = grand() * 0.05f;
	double r8 = coli_quant_rel_rms(COLI_Q_INT8, w, ROWS, COLS);
	double r4 = coli_quant_rel_rms(COLI_Q_INT4, w, ROWS, COLS);
	double r4s = coli_quant_rel_rms_int4_symmetric(w, ROWS, COLS);
	double r32 = coli_quant_rel_rms(COLI_Q_F32, w, ROWS, COLS);
	printf("gaussian rel rms: int8 %.5f  int4 affine %.5f  int4 symmetric %.5f\n", r8, r4, r4s);
	CHECK(r32 == 0.0, "f32 rel rms %g", r32);
	CHECK(r8 > 0.0 && r8 < 0.01, "int8 rel rms %g", r8);
	CHECK(r4 > 0.0 && r4 < 0.12, "int4 rel rms %g", r4);
	CHECK(r4s > r4, "symmetric %g should exceed affine %g", r4s, r4);
	CHECK(coli_quant_rel_rms(COLI_Q_INT4, w, 1, 63) < 0, "bad cols");
}

int main(void)
{
	test_half();
	test_names();
	test_layout();
	test_bounds();
	return test_summary(__FILE__);
}
