/* quant.c - weight formats (see quant.h for the byte layouts), quantizers,
 * and the error measurement that convert publishes in the manifest.
 *
 * INT4 detail that matters: d and m are rounded to IEEE half BEFORE the
 * nibbles are chosen, so each nibble is the best one for the grid the
 * kernels actually decode (d_half * q + m_half), not for the unrounded
 * grid. */
#include "config.h"

#include "quant.h"
#include "util_bits.h"

#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

uint16_t coli_float_to_half(float f)
{
	uint32_t x = coli_f32_bits(f);
	uint16_t sign = (uint16_t)((x >> 16) & 0x8000);

	x &= 0x7fffffffu;
	if (x >= 0x7f800000u) /* inf stays inf; NaN stays a quiet NaN */
		return sign | (x > 0x7f800000u ? 0x7e00 : 0x7c00);
	if (x >= 0x477ff000u) /* >= 65520 rounds to infinity */
		return sign | 0x7c00;
	if (x < 0x38800000u) {
		/* Below the smallest normal half: adding 0.5f aligns the
		 * binary point so the FPU's own round-to-nearest-even picks
		 * the subnormal (or 0x0400 when it rounds up). */
		float v = coli_bits_f32(x) + 0.5f;
		return sign | (uint16_t)(coli_f32_bits(v) - 0x3f000000u);
	}
	/* Normal: rebias the exponent and round the 13 dropped bits to
	 * nearest, ties to even (carry into the exponent is correct). */
	uint32_t odd = (x >> 13) & 1;
	x += ((uint32_t)(15 - 127) << 23) + 0xfff + odd;
	return sign | (uint16_t)(x >> 13);
}

const char *coli_qtype_name(int qtype)
{
	switch (qtype) {
	case COLI_Q_F32: return "f32";
	case COLI_Q_INT8: return "int8";
	case COLI_Q_INT4: return "int4-g64";
	default: return NULL;
	}
}

int coli_qtype_parse(const char *name)
{
	if (!name)
		return -1;
	if (!strcmp(name, "f32"))
		return COLI_Q_F32;
	if (!strcmp(name, "int8"))
		return COLI_Q_INT8;
	if (!strcmp(name, "int4-g64") || !strcmp(name, "int4"))
		return COLI_Q_INT4;
	return -1;
}

size_t coli_qtype_row_bytes(int qtype, int cols)
{
	if (cols < 0)
		return 0;
	switch (qtype) {
	case COLI_Q_F32: return (size_t)cols * sizeof(float);
	case COLI_Q_INT8: return (size_t)(cols / COLI_QK) * sizeof(coli_block_q8);
	case COLI_Q_INT4: return (size_t)(cols / COLI_QK) * sizeof(coli_block_q4);
	default: return 0;
	}
}

size_t coli_qtype_bytes(int qtype, int rows, int cols)
{
	if (rows < 0)
		return 0;
	return (size_t)rows * coli_qtype_row_bytes(qtype, cols);
}

/* Bit tests instead of isfinite(): the bytes may be anything, and the
 * loops stay branch-free per block. */
static int f32_bad(const uint32_t *w, size_t n)
{
	uint32_t bad = 0;
	for (size_t i = 0; i < n; i++)
		bad |= (w[i] & 0x7f800000u) == 0x7f800000u;
	return bad != 0;
}

int coli_quant_check_rows(int qtype, const void *data, int rows, int cols)
{
	const size_t nb = (size_t)(cols / COLI_QK);
	for (int r = 0; r < rows; r++) {
		uint32_t bad = 0;
		if (qtype == COLI_Q_F32) {
			const uint32_t *w = (const uint32_t *)data + (size_t)r * (size_t)cols;
			bad = (uint32_t)f32_bad(w, (size_t)cols);
		} else if (qtype == COLI_Q_INT8) {
			const coli_block_q8 *b = (const coli_block_q8 *)data + (size_t)r * nb;
			for (size_t i = 0; i < nb; i++) {
				uint32_t d;
				memcpy(&d, &b[i].d, sizeof d);
				/* sign set, or exponent all ones (Inf/NaN); -0.0 is refused too,
				 * the quantizer never writes it */
				bad |= (d >> 31) | ((d & 0x7f800000u) == 0x7f800000u);
			}
		} else if (qtype == COLI_Q_INT4) {
			const coli_block_q4 *b = (const coli_block_q4 *)data + (size_t)r * nb;
			for (size_t i = 0; i < nb; i++)
				bad |= (uint32_t)(b[i].d >> 15) | ((b[i].d & 0x7c00u) == 0x7c00u) |
				       ((b[i].m & 0x7c00u) == 0x7c00u);
		} else {
			return r;
		}
		if (bad)
			return r;
	}
	return -1;
}

/* Round to nearest, ties to even, for |v| < 2^22: adding 1.5 * 2^23
 * leaves no fraction bits, so the FPU rounds (in the default mode), and
 * subtracting it back is exact. Several times faster than a roundf() call
 * and branch-free, which matters when convert quantizes ~10^12 weights.
 * Relies on float arithmetic in float precision (FLT_EVAL_METHOD 0, as on
 * x86-64 SSE and AArch64). */
static inline float round_even(float v)
{
	const float magic = 0x1.8p23f;
	return (v + magic) - magic;
}

static int quantize_block_q8(const float *w, coli_block_q8 *b)
{
	float amax = 0.0f;
	for (int j = 0; j < COLI_QK; j++) {
		float a = fabsf(w[j]);
		if (!(a <= FLT_MAX)) /* inf or NaN */
			return -ERANGE;
		if (a > amax)
			amax = a;
	}
	float d = amax / 127.0f;
	float id = d > 0.0f ? 1.0f / d : 0.0f;
	b->d = d;
	for (int j = 0; j < COLI_QK; j++) {
		float v = w[j] * id;
		/* clamp first (also turns NaN into 0) so round_even's range holds */
		v = v > 127.0f ? 127.0f : v < -127.0f ? -127.0f : v == v ? v : 0.0f;
		b->q[j] = (int8_t)round_even(v);
	}
	return 0;
}

static uint8_t nibble(float w, float m, float id)
{
	float v = (w - m) * id;
	if (!(v > 0.0f)) /* also catches NaN */
		return 0;
	if (v > 15.0f)
		return 15;
	return (uint8_t)round_even(v);
}

/* Largest finite half. */
#define HALF_MAX 65504.0f

static int quantize_block_q4(const float *w, coli_block_q4 *b)
{
	float lo = w[0], hi = w[0];
	for (int j = 0; j < COLI_QK; j++) {
		if (!(fabsf(w[j]) <= HALF_MAX)) /* NaN, inf, or beyond half's m */
			return -ERANGE;
		if (w[j] < lo)
			lo = w[j];
		if (w[j] > hi)
			hi = w[j];
	}
	if ((hi - lo) / 15.0f > HALF_MAX)
		return -ERANGE;
	b->d = coli_float_to_half((hi - lo) / 15.0f);
	b->m = coli_float_to_half(lo);
	float d = coli_half_to_float(b->d);
	float m = coli_half_to_float(b->m);
	/* d == 0 (constant group, or a range below half's resolution):
	 * every nibble is 0 and the group decodes to m. */
	float id = d > 0.0f ? 1.0f / d : 0.0f;
	for (int j = 0; j < COLI_QK / 2; j++)
		b->q[j] = (uint8_t)(nibble(w[j], m, id) | (nibble(w[j + 32], m, id) << 4));
	return 0;
}

int coli_quantize_rows(int qtype, const float *src, int n_rows, int cols, void *dst)
{
	if (n_rows < 0 || cols < 0 || (!src && n_rows && cols) || (!dst && n_rows && cols))
		return -EINVAL;
	if (qtype == COLI_Q_F32) {
		memcpy(dst, src, (size_t)n_rows * (size_t)cols * sizeof(float));
		return 0;
	}
	if (qtype != COLI_Q_INT8 && qtype != COLI_Q_INT4)
		return -EINVAL;
	if (cols % COLI_QK)
		return -EINVAL;
	size_t nb = (size_t)n_rows * (size_t)(cols / COLI_QK);
	for (size_t i = 0; i < nb; i++) {
		const float *w = src + i * COLI_QK;
		int rc = qtype == COLI_Q_INT8 ? quantize_block_q8(w, (coli_block_q8 *)dst + i)
					      : quantize_block_q4(w, (coli_block_q4 *)dst + i);
		if (rc < 0)
			return rc;
	}
	return 0;
}

void coli_dequantize_rows(int qtype, const void *src, int n_rows, int cols, float *dst)
{
	if (n_rows <= 0 || cols <= 0)
		return;
	if (qtype == COLI_Q_F32) {
		memcpy(dst, src, (size_t)n_rows * (size_t)cols * sizeof(float));
		return;
	}
	size_t nb = (size_t)n_rows * (size_t)(cols / COLI_QK);
	for (size_t i = 0; i < nb; i++) {
		float *o = dst + i * COLI_QK;
		if (qtype == COLI_Q_INT8) {
			const coli_block_q8 *b = (const coli_block_q8 *)src + i;
			for (int j = 0; j < COLI_QK; j++)
				o[j] = b->d * (float)b->q[j];
		} else if (qtype == COLI_Q_INT4) {
			const coli_block_q4 *b = (const coli_block_q4 *)src + i;
			float d = coli_half_to_float(b->d), m = coli_half_to_float(b->m);
			for (int j = 0; j < COLI_QK / 2; j++) {
				o[j] = d * (float)(b->q[j] & 0x0f) + m;
				o[j + 32] = d * (float)(b->q[j] >> 4) + m;
			}
		}
	}
}

/* ||a - b|| / ||a|| in double; 0 for an all-zero a that b matches. */
static double rel_rms(const float *a, const float *b, size_t n)
{
	double num = 0.0, den = 0.0;
	for (size_t i = 0; i < n; i++) {
		double e = (double)a[i] - (double)b[i];
		num += e * e;
		den += (double)a[i] * (double)a[i];
	}
	if (den == 0.0)
		return num == 0.0 ? 0.0 : INFINITY;
	return sqrt(num / den);
}

double coli_quant_rel_rms(int qtype, const float *w, int rows, int cols)
{
	if (rows <= 0 || cols <= 0)
		return 0.0;
	if (qtype == COLI_Q_F32)
		return 0.0;
	size_t n = (size_t)rows * (size_t)cols;
	void *q = malloc(coli_qtype_bytes(qtype, rows, cols) + 1);
	float *back = malloc(n * sizeof *back);
	double r = -1.0;
	if (!q || !back)
		goto out;
	if (coli_quantize_rows(qtype, w, rows, cols, q) < 0)
		goto out;
	coli_dequantize_rows(qtype, q, rows, cols, back);
	r = rel_rms(w, back, n);
out:
	free(q);
	free(back);
	return r;
}

/* The symmetric int4 grid we compare against: the same 16 levels and the
 * same 2 bytes of scale per group as affine, d = (signed absmax) / -8 and
 * q in [-8, 7], so the extreme value lands exactly on -8 * d. */
static void roundtrip_q4_symmetric(const float *w, float *o)
{
	float amax = 0.0f, vmax = 0.0f;
	for (int j = 0; j < COLI_QK; j++) {
		if (fabsf(w[j]) > amax) {
			amax = fabsf(w[j]);
			vmax = w[j];
		}
	}
	float d = coli_half_to_float(coli_float_to_half(vmax / -8.0f));
	float id = d != 0.0f ? 1.0f / d : 0.0f;
	for (int j = 0; j < COLI_QK; j++) {
		float v = w[j] * id;
		v = v < -8.0f ? -8.0f : v > 7.0f ? 7.0f : v == v ? v : 0.0f;
		o[j] = d * round_even(v);
	}
}

double coli_quant_rel_rms_int4_symmetric(const float *w, int rows, int cols)
{
	if (rows <= 0 || cols <= 0 || cols % COLI_QK)
		return rows <= 0 || cols <= 0 ? 0.0 : -1.0;
	size_t n = (size_t)rows * (size_t)cols;
	float *back = malloc(n * sizeof *back);
	if (!back)
		return -1.0;
	for (size_t i = 0; i < n; i += COLI_QK)
		roundtrip_q4_symmetric(w + i, back + i);
	double r = rel_rms(w, back, n);
	free(back);
	return r;
}
