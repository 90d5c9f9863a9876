/* vec_ops.c - see vec_ops.h. Plain C whose inner loops have a constant
 * trip count (16 or 64), so GCC vectorizes them at -O2 in every clone. */
#include "config.h"

#include <string.h>

#include "vec_ops.h"

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && defined(__has_attribute)
#if __has_attribute(target_clones)
#define VEC_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#endif
#endif
#ifndef VEC_CLONES
#define VEC_CLONES
#endif

#define G COLI_QK /* columns per group (the quantization block) */

VEC_CLONES
float coli_vec_dot(const float *a, const float *b, int n)
{
	float acc[COLI_VEC_LANES] = { 0 };
	int i = 0;
	for (; i + COLI_VEC_LANES <= n; i += COLI_VEC_LANES)
		for (int k = 0; k < COLI_VEC_LANES; k++)
			acc[k] += a[i + k] * b[i + k];
	for (int w = COLI_VEC_LANES / 2; w > 0; w /= 2)
		for (int k = 0; k < w; k++)
			acc[k] += acc[k + w];
	float s = acc[0];
	for (; i < n; i++)
		s += a[i] * b[i];
	return s;
}

VEC_CLONES
void coli_vec_axpy(float *y, float a, const float *x, int n)
{
	int i = 0;
	for (; i + G <= n; i += G)
		for (int k = 0; k < G; k++)
			y[i + k] += a * x[i + k];
	for (; i < n; i++)
		y[i] += a * x[i];
}

/* Columns [g*64, g*64 + 64) of a quantized row, as floats (the same values as
 * coli_dequantize_rows). Not cloned: inlined into each clone. */
static inline void group_row(int qtype, const char *row, int g, float *out)
{
	if (qtype == COLI_Q_INT8) {
		const coli_block_q8 *b = (const coli_block_q8 *)row + g;
		const float d = b->d;
		for (int j = 0; j < G; j++)
			out[j] = d * (float)b->q[j];
	} else {
		const coli_block_q4 *b = (const coli_block_q4 *)row + g;
		const float d = coli_half_to_float(b->d), m = coli_half_to_float(b->m);
		for (int j = 0; j < G / 2; j++) {
			out[j] = d * (float)(b->q[j] & 0x0f) + m;
			out[j + G / 2] = d * (float)(b->q[j] >> 4) + m;
		}
	}
}

VEC_CLONES
void coli_qrows_tmul(const coli_qmat *w, int r0, int nrows, const float *a, size_t a_stride, int n,
		     float *y, size_t y_stride, float *tile)
{
	const int groups = (w->cols + G - 1) / G;
	const size_t rb = coli_qtype_row_bytes(w->qtype, w->cols);
	const char *rows = (const char *)w->data + (size_t)r0 * rb;
	for (int g = 0; g < groups; g++) {
		const int c0 = g * G, width = w->cols - c0 < G ? w->cols - c0 : G;
		const float *t = tile;
		size_t t_stride = G;
		if (w->qtype == COLI_Q_F32) {
			/* rows are floats already: no copy */
			t = (const float *)w->data + (size_t)r0 * w->cols + c0;
			t_stride = (size_t)w->cols;
		} else {
			for (int i = 0; i < nrows; i++)
				group_row(w->qtype, rows + (size_t)i * rb, g, tile + (size_t)i * G);
		}
		for (int b = 0; b < n; b++) {
			const float *ab = a + (size_t)b * a_stride;
			float acc[G] = { 0 };
			if (width == G) {
				for (int i = 0; i < nrows; i++) {
					const float ai = ab[i], *ti = t + (size_t)i * t_stride;
					for (int k = 0; k < G; k++)
						acc[k] += ai * ti[k];
				}
			} else {
				for (int i = 0; i < nrows; i++)
					for (int k = 0; k < width; k++)
						acc[k] += ab[i] * t[(size_t)i * t_stride + k];
			}
			memcpy(y + (size_t)b * y_stride + c0, acc, sizeof(float) * (size_t)width);
		}
	}
}
