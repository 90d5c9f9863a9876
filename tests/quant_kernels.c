/* quant_kernels.c - matvec/matmul against a double-precision reference,
 * for F32, INT8 and INT4, through every code path this CPU has (AVX-512,
 * AVX2, portable; a path the CPU lacks is reported and skipped, or fails
 * when $COLI_TEST_ISA_REQUIRED names it).
 *
 * What it proves:
 *  - accuracy: |y - y_ref| <= (k + 80) * 2^-24 * S for every output, where
 *    y_ref is the double-precision product of the DEQUANTIZED weights with
 *    x, S = sum_j |w_j x_j| (for INT4 sum_j (|w_j| + 2|m|)|x_j|, because the
 *    kernel splits w = d*q + m), and k = cols for the portable path,
 *    cols / 8 for AVX2, cols / 16 for AVX-512 (bounds on their longest
 *    sequential chains). This is the a-priori
 *    rounding bound of the summation trees used, so activations are not
 *    quantized (that would add ~1e-3 relative error and fail it);
 *  - matmul row k is bit-identical to matvec of input k, for n = 1..17;
 *  - results are bit-identical with no pool and pools of 1, 2, 3 threads;
 *  - a row's bits do not depend on where it sits: every row computed as a
 *    one-row matrix (matvec, and matmul of all inputs) equals its row of
 *    the whole product (the vector kernels take rows in groups of four
 *    and sum the lanes of four outputs at once; leftover rows one by one);
 *  - block sums for INT4 split into several passes (huge cols * n) give
 *    the same bits as one pass would (row k == matvec);
 *  - coli_kernels_isa() names the path in use, and forcing a path the CPU
 *    lacks is refused without changing the path. */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "quant_kernels.h"
#include "test_util.h"

static double worst_ratio;

struct shape {
	int rows, cols, nmax;
};

static void reference(int qtype, const void *q, const float *wd, int rows, int cols,
		      const float *x, int n, double *ref, double *scale)
{
	int nb = cols / 64;
	for (int k = 0; k < n; k++) {
		for (int r = 0; r < rows; r++) {
			double s = 0.0, a = 0.0;
			const float *row = wd + (size_t)r * cols;
			const float *xk = x + (size_t)k * cols;
			for (int j = 0; j < cols; j++) {
				s += (double)row[j] * xk[j];
				double wabs = fabs(row[j]);
				if (qtype == COLI_Q_INT4) {
					const coli_block_q4 *b = (const coli_block_q4 *)q + (size_t)r * nb + j / 64;
					wabs += 2.0 * fabs(coli_half_to_float(b->m));
				}
				a += wabs * fabs(xk[j]);
			}
			ref[(size_t)k * rows + r] = s;
			scale[(size_t)k * rows + r] = a;
		}
	}
}

/* Longest sequential chain of each path, relative to cols (see quant_kernels.h). */
static double chain_div(const char *isa)
{
	if (!strcmp(isa, "avx512"))
		return 16.0;
	return !strcmp(isa, "avx2") ? 8.0 : 1.0;
}

static void check_shape(coli_pool *pools[3], const char *isa, int qtype, struct shape sh)
{
	int rows = sh.rows, cols = sh.cols, nmax = sh.nmax;
	size_t nw = (size_t)rows * cols;
	float *w = malloc(nw * sizeof *w), *wd = malloc(nw * sizeof *wd);
	void *q = malloc(coli_qtype_bytes(qtype, rows, cols) + 1);
	float *x = malloc((size_t)nmax * cols * sizeof *x);
	float *y = malloc((size_t)nmax * rows * sizeof *y);
	float *y2 = malloc((size_t)nmax * rows * sizeof *y2);
	float *yv = malloc((size_t)rows * sizeof *yv);
	double *ref = malloc((size_t)nmax * rows * sizeof *ref);
	double *scale = malloc((size_t)nmax * rows * sizeof *scale);
	if (!w || !wd || !q || !x || !y || !y2 || !yv || !ref || !scale) {
		fprintf(stderr, "out of memory\n");
		exit(1);
	}
	for (size_t i = 0; i < nw; i++)
		w[i] = frand() * 0.1f + (i % 5 == 0 ? 0.02f : 0.0f);
	for (size_t i = 0; i < (size_t)nmax * cols; i++)
		x[i] = frand() * 2.0f;
	coli_quantize_rows(qtype, w, rows, cols, q);
	coli_dequantize_rows(qtype, q, rows, cols, wd);
	reference(qtype, q, wd, rows, cols, x, nmax, ref, scale);
	coli_qmat m = { qtype, rows, cols, q };
	double k = cols / chain_div(isa);
	double tol = (k + 80.0) * 0x1p-24;

	for (int n = 1; n <= nmax; n++) {
		if (nmax > 5 && n > 5 && n < nmax && (size_t)rows * cols > 200000)
			continue; /* big shapes: n = 1..5 and nmax only */
		coli_matmul(NULL, &m, x, n, y);
		for (int kk = 0; kk < n; kk++) {
			coli_matvec(NULL, &m, x + (size_t)kk * cols, yv);
			CHECK(!memcmp(yv, y + (size_t)kk * rows, (size_t)rows * sizeof *yv),
				"%s %s %dx%d n=%d: matmul row %d != matvec",
					isa, coli_qtype_name(qtype), rows, cols, n, kk);
			for (int r = 0; r < rows; r++) {
				size_t i = (size_t)kk * rows + r;
				double err = fabs((double)y[i] - ref[i]);
				double ratio = scale[i] > 0 ? err / (0x1p-24 * scale[i]) : 0.0;
				if (ratio > worst_ratio)
					worst_ratio = ratio;
				if (!(err <= tol * scale[i] + 1e-30)) {
					FAIL("%s %s %dx%d n=%d: y[%d][%d] = %.9g, ref %.9g (err %.3g, bound %.3g)",
						isa, coli_qtype_name(qtype), rows, cols, n,
						kk, r, (double)y[i], ref[i], err, tol * scale[i]);
					goto next;
				}
			}
		}
		for (int p = 0; p < 3; p++) {
			coli_matmul(pools[p], &m, x, n, y2);
			CHECK(!memcmp(y, y2, (size_t)n * rows * sizeof *y),
				"%s %s %dx%d n=%d: pool of %d threads changed bits",
					isa, coli_qtype_name(qtype), rows, cols, n,
					coli_pool_size(pools[p]));
			coli_matvec(pools[p], &m, x, yv);
			CHECK(!memcmp(y, yv, (size_t)rows * sizeof *yv),
				"%s %s %dx%d: matvec on a pool of %d changed bits",
					isa, coli_qtype_name(qtype), rows, cols,
					coli_pool_size(pools[p]));
		}
next:;
	}
	/* placement: each row alone */
	size_t rb = coli_qtype_row_bytes(qtype, cols);
	int n_all = rows * cols > 200000 ? 2 : nmax;
	coli_matmul(NULL, &m, x, n_all, y);
	for (int r = 0; r < rows; r++) {
		coli_qmat one = { qtype, 1, cols, (const char *)q + (size_t)r * rb };
		float y1[17];
		coli_matvec(NULL, &one, x, y1);
		int bad = memcmp(y1, &y[r], sizeof *y1) != 0;
		coli_matmul(NULL, &one, x, n_all, y1);
		for (int kk = 0; kk < n_all; kk++)
			bad |= memcmp(&y1[kk], &y[(size_t)kk * rows + r], sizeof *y1) != 0;
		if (bad) {
			FAIL("%s %s %dx%d: row %d alone != its row of the whole product", isa,
			     coli_qtype_name(qtype), rows, cols, r);
			break;
		}
	}
	free(w);
	free(wd);
	free(q);
	free(x);
	free(y);
	free(y2);
	free(yv);
	free(ref);
	free(scale);
}

int main(int argc, char **argv)
{
	test_rng = 0x2545f4914f6cdd1dull; /* the cases this test has always drawn */
	/* tests/avx512_env.sh: which path the process chose on its own */
	if (argc > 1 && !strcmp(argv[1], "--print-isa")) {
		printf("%s\n", coli_kernels_isa());
		return 0;
	}
	const struct shape quant_shapes[] = {
		{ 1, 64, 17 }, { 7, 128, 17 }, { 33, 640, 17 }, { 250, 2048, 17 },
		{ 1003, 1024, 9 }, { 9, 64 * 600, 17 }, { 14, 256, 17 },
	};
	const struct shape f32_shapes[] = {
		{ 1, 1, 3 }, { 5, 100, 17 }, { 17, 7, 17 }, { 37, 64, 4 }, { 300, 1000, 6 },
		{ 1003, 1024, 3 },
	};
	coli_pool *pools[3] = { coli_pool_new(1), coli_pool_new(2), coli_pool_new(3) };
	if (!pools[0] || !pools[1] || !pools[2])
		return 1;
	const char *paths[] = { "avx512", "avx2", "generic" };
	for (size_t pi = 0; pi < sizeof paths / sizeof paths[0]; pi++) {
		const char *isa = paths[pi];
		int rc = coli_kernels_force_isa(isa);
		if (rc == -ENOTSUP) {
			printf("%s path: not available on this CPU/build, skipped\n", isa);
			if (test_isa_required(isa))
				FAIL("%s path: named in COLI_TEST_ISA_REQUIRED but not available", isa);
			CHECK(strcmp(coli_kernels_isa(), isa),
				"refused path %s is in use", isa);
			continue;
		}
		if (rc || strcmp(coli_kernels_isa(), isa)) {
			FAIL("forcing %s: rc %d, isa %s", isa, rc, coli_kernels_isa());
			continue;
		}
		for (size_t s = 0; s < sizeof quant_shapes / sizeof quant_shapes[0]; s++) {
			check_shape(pools, isa, COLI_Q_INT4, quant_shapes[s]);
			if (quant_shapes[s].cols < 64 * 100)
				check_shape(pools, isa, COLI_Q_INT8, quant_shapes[s]);
		}
		for (size_t s = 0; s < sizeof f32_shapes / sizeof f32_shapes[0]; s++)
			check_shape(pools, isa, COLI_Q_F32, f32_shapes[s]);
		printf("%s path: worst error %.2f x 2^-24 x sum|w x|\n", isa, worst_ratio);
		worst_ratio = 0.0;
	}
	CHECK(coli_kernels_force_isa("no-such-path") == -EINVAL,
		"an unknown path name was not refused");
	/* the old switch still works and reports its previous setting */
	coli_kernels_force_isa(NULL);
	CHECK(!(coli_kernels_force_generic(1) != 0 || strcmp(coli_kernels_isa(), "generic") ||
	    coli_kernels_force_generic(0) != 1),
		"coli_kernels_force_generic misbehaves");
	printf("process path: %s\n", coli_kernels_isa());

	/* A matrix the kernels cannot handle gives NaN, not garbage. */
	{
		static unsigned char junk[64 * 36];
		float xb[100] = { 0 }, yb[2] = { 0, 0 };
		coli_qmat bad = { COLI_Q_INT4, 2, 100, junk };
		printf("expect one error line below:\n");
		fflush(stdout);
		coli_matvec(NULL, &bad, xb, yb);
		CHECK(isnan(yb[0]) && isnan(yb[1]),
			"bad matrix did not give NaN");
	}
	for (int p = 0; p < 3; p++)
		coli_pool_free(pools[p]);
	return test_summary(__FILE__);
}
