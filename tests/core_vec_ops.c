/* core_vec_ops.c - the attention loops of forward_vec_ops.h.
 *
 * What it proves:
 *  - coli_vec_dot_rows gives coli_vec_dot's bits for every row (lengths
 *    1..600, row counts 1..9, strides wider than the rows), and so does
 *    coli_vec_dot_gather over the same rows through pointers;
 *  - coli_vec_wsum adds each column's terms in ascending order onto its
 *    starting value: equal, bit for bit, to the plain scalar loop
 *    (widths 1..700, so the 128-, 64-column and scalar paths all run),
 *    coli_vec_wsum_gather too;
 *  - coli_qrows_tmul for int4, int8 and f32 rows: n = 1 (read in place,
 *    in row chunks) equals row b of an n > 1 call (the unpacked tile)
 *    bit for bit, and both are within a float-rounding bound of a double
 *    evaluation of sum_i a_i * dequant(W)[r0 + i][k]. */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "forward_vec_ops.h"
#include "test_util.h"

static void test_dot_rows(void)
{
	static const int lens[] = { 1, 15, 16, 17, 64, 100, 512, 576, 600 };
	for (size_t li = 0; li < sizeof lens / sizeof lens[0]; li++) {
		const int n = lens[li];
		const size_t stride = (size_t)n + 7;
		for (int np = 1; np <= 9; np++) {
			float *a = malloc(sizeof(float) * (size_t)n);
			float *x = malloc(sizeof(float) * stride * (size_t)np);
			float out[9];
			for (int i = 0; i < n; i++)
				a[i] = frand();
			for (size_t i = 0; i < stride * (size_t)np; i++)
				x[i] = frand();
			coli_vec_dot_rows(a, x, stride, np, n, out);
			/* the gathered variant over the rows in reverse order */
			const float *rows[9];
			float gout[9];
			for (int p = 0; p < np; p++)
				rows[p] = x + (size_t)(np - 1 - p) * stride;
			coli_vec_dot_gather(a, rows, np, n, gout);
			for (int p = 0; p < np; p++) {
				float ref = coli_vec_dot(a, x + (size_t)p * stride, n);
				CHECK(!memcmp(&ref, &out[p], sizeof ref), "dot_rows n=%d np=%d row %d: %a vs %a",
				      n, np, p, out[p], ref);
				CHECK(!memcmp(&ref, &gout[np - 1 - p], sizeof ref), "dot_gather n=%d np=%d row %d", n, np, p);
			}
			free(a);
			free(x);
		}
	}
}

static void test_wsum(void)
{
	static const int widths[] = { 1, 63, 64, 65, 128, 129, 192, 512, 700 };
	for (size_t wi = 0; wi < sizeof widths / sizeof widths[0]; wi++) {
		const int n = widths[wi], np = 37;
		const size_t stride = (size_t)n + 3;
		float *x = malloc(sizeof(float) * stride * np), w[37];
		float *y = malloc(sizeof(float) * (size_t)n), *ref = malloc(sizeof(float) * (size_t)n);
		for (size_t i = 0; i < stride * np; i++)
			x[i] = frand();
		for (int p = 0; p < np; p++)
			w[p] = frand();
		for (int c = 0; c < n; c++)
			y[c] = ref[c] = frand();
		for (int c = 0; c < n; c++)
			for (int p = 0; p < np; p++)
				ref[c] += w[p] * x[(size_t)p * stride + c];
		float *yg = malloc(sizeof(float) * (size_t)n);
		memcpy(yg, y, sizeof(float) * (size_t)n);
		coli_vec_wsum(y, w, x, stride, np, n);
		CHECK(!memcmp(y, ref, sizeof(float) * (size_t)n), "wsum width %d differs from the scalar loop", n);
		/* gathered: the same rows through pointers give the same bits */
		const float *rows[37];
		for (int p = 0; p < np; p++)
			rows[p] = x + (size_t)p * stride;
		coli_vec_wsum_gather(yg, w, rows, np, n);
		CHECK(!memcmp(yg, ref, sizeof(float) * (size_t)n), "wsum_gather width %d differs", n);
		free(yg);
		free(x);
		free(y);
		free(ref);
	}
}

static void test_tmul(int qtype)
{
	const int rows = 70, cols = 512, r0 = 5, nrows = 61, n = 3;
	float *wf = malloc(sizeof(float) * rows * cols), *deq = malloc(sizeof(float) * rows * cols);
	for (int i = 0; i < rows * cols; i++)
		wf[i] = frand();
	void *data = wf;
	if (qtype != COLI_Q_F32) {
		data = malloc(coli_qtype_bytes(qtype, rows, cols));
		coli_quantize_rows(qtype, wf, rows, cols, data);
		coli_dequantize_rows(qtype, data, rows, cols, deq);
	} else {
		memcpy(deq, wf, sizeof(float) * rows * cols);
	}
	coli_qmat w = { .qtype = qtype, .rows = rows, .cols = cols, .data = data };
	const size_t a_stride = 80, y_stride = cols + 16;
	float a[3 * 80], *y = malloc(sizeof(float) * n * y_stride), *y1 = malloc(sizeof(float) * y_stride);
	float *tile = malloc(sizeof(float) * nrows * COLI_QK);
	for (int i = 0; i < 3 * 80; i++)
		a[i] = frand();
	coli_qrows_tmul(&w, r0, nrows, a, a_stride, n, y, y_stride, tile);
	for (int b = 0; b < n; b++) {
		coli_qrows_tmul(&w, r0, nrows, a + b * a_stride, a_stride, 1, y1, y_stride, tile);
		CHECK(!memcmp(y1, y + b * y_stride, sizeof(float) * cols), "tmul type %d: n=1 != row %d of n=%d",
		      qtype, b, n);
		for (int k = 0; k < cols; k++) {
			double ref = 0.0, mag = 0.0;
			for (int i = 0; i < nrows; i++) {
				double t = (double)a[b * a_stride + i] * deq[(size_t)(r0 + i) * cols + k];
				ref += t;
				mag += fabs(t);
			}
			/* two float sums of <= 61 terms (plus the scales' product):
			 * (2 * 61 + 4) ulps of the magnitude, generously */
			double tol = (2.0 * nrows + 4.0) * 0x1p-24 * (mag + 1.0) * 4.0;
			CHECK(fabs(y1[k] - ref) <= tol, "tmul type %d b %d col %d: %g vs %g (tol %g)", qtype, b,
			      k, y1[k], ref, tol);
		}
	}
	if (data != wf)
		free(data);
	free(wf);
	free(deq);
	free(y);
	free(y1);
	free(tile);
}

int main(void)
{
	test_rng = 0x853c49e6748fea9bull;
	test_dot_rows();
	test_wsum();
	test_tmul(COLI_Q_INT4);
	test_tmul(COLI_Q_INT8);
	test_tmul(COLI_Q_F32);
	return test_summary(__FILE__);
}
