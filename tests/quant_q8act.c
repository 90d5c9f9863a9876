/* quant_q8act.c - coli_matmul_q8 (int8 activations) on every code path
 * this CPU has (AMX, AVX-512 VNNI, AVX-VNNI, AVX2, portable; a missing one
 * is skipped, or fails when $COLI_TEST_ISA_REQUIRED names it).
 *
 * What it proves:
 *  - the quantizer follows quant_kernels_q8.h: d = absmax / 127, q in [-127,
 *    127], |d q - x| within half a step, ties to even, zero and non-finite
 *    blocks;
 *  - tight: each output is within (nb + 10) * 2^-24 * T of a double-
 *    precision evaluation of the same q8 arithmetic (same integer q's,
 *    same scales), T = sum over blocks of |d_w d_x| sum_e |qw_e qx_e| +
 *    |m sx| (the a-priori bound of one rounding for s_b, the chains of
 *    nb FMAs and the final add, with room to spare);
 *  - loose, against the f32-activation coli_matmul: each element of x
 *    moves by at most half a quantization step, d/2 = absmax_b / 254 (plus
 *    a few ulps of d * (127/absmax) != 1), so
 *      |y_q8 - y_f32| <= sum_b absmax_b (1/254 + 2^-20) sum_{j in b} |w_j|
 *                        + tight bound above + quant_kernels.h's f32 bound;
 *  - the first path's outputs are, bit for bit, quant_kernels_q8.h's arithmetic
 *    as written out here (spec_output);
 *  - every path gives the SAME bits (the arithmetic is specified exactly),
 *    quantized x included; the q8 path follows quant_kernels.c's choice;
 *  - matmul row k == the n = 1 call of input k, bit for bit, n = 1..9;
 *  - no pool and pools of 1, 2, 3 threads give the same bits;
 *  - more inputs than the scratch holds are done in passes, same bits;
 *  - F32 weights give coli_matmul's bits; a too-small scratch gives NaN. */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coli_log.h"
#include "quant_kernels_q8.h"
#include "test_util.h"

static double worst_tight, worst_loose;

struct shape {
	int rows, cols, n;
};

static const struct shape shapes[] = {
	{ 1, 64, 1 },     { 3, 64, 2 },      { 5, 128, 9 },     { 13, 640, 4 },
	{ 37, 2048, 5 },  { 7, 18432, 2 },   { 96, 2048, 3 },   { 301, 1024, 9 },
	{ 19, 6144, 7 },  { 130, 4096, 1 },
	/* more rows than a matmul panel and more inputs than a tile of the
	 * 256-bit kernels (quant_kernels_q8_avx2_rows.h), ragged at the end */
	{ 700, 512, 18 },
	/* the AMX path's tiles of 16 inputs and panels of 32 rows, ragged
	 * (tests/quant_q8act_amx.c checks it on many more shapes) */
	{ 45, 1088, 33 },
	/* the AVX2 int4 product's passes of 64 rows and 32 inputs
	 * (quant_kernels_q8_avx2_gemm.c), ragged: a last quad of 3 rows, an
	 * odd last pass of inputs */
	{ 131, 2048, 67 },
};
#define N_SHAPES ((int)(sizeof shapes / sizeof shapes[0]))

/* quant_kernels.c's paths, and the q8 paths (coli_kernels_q8_force_path) */
static const char *const isas[] = { "generic", "avx2", "avx512" };
static const char *const paths[] = { "generic", "avx2", "avxvnni", "avx512vnni", "amx" };
#define N_PATHS ((int)(sizeof paths / sizeof paths[0]))

/* x with uneven block magnitudes, an all-zero block and exact ties */
static void make_x(float *x, int n, int cols)
{
	for (int k = 0; k < n; k++)
		for (int b = 0; b < cols / 64; b++) {
			float mag = (float)(1 + (b * 7 + k) % 5) * ((b % 3) ? 1.0f : 0.01f);
			for (int j = 0; j < 64; j++) {
				float *v = &x[(size_t)k * cols + b * 64 + j];
				*v = (b == 1 && k == 0) ? 0.0f : frand() * mag;
			}
		}
}

/* double-precision evaluation of the q8 arithmetic, and its bounds */
static void reference(const coli_qmat *w, const float *wd, const coli_q8act *a, const float *x,
		      int k, int r, double *ref, double *tight, double *qerr, double *sf)
{
	int nb = w->cols / 64;
	double s = 0.0, t = 0.0, e = 0.0, f = 0.0;
	for (int b = 0; b < nb; b++) {
		const int8_t *qx = a->q + ((size_t)k * nb + b) * 64;
		double dx = a->d[(size_t)k * nb + b], isum = 0.0, iabs = 0.0, dw, m = 0.0;
		for (int j = 0; j < 64; j++) {
			int qw;
			if (w->qtype == COLI_Q_INT4) {
				const coli_block_q4 *blk = (const coli_block_q4 *)w->data + (size_t)r * nb + b;
				qw = j < 32 ? (blk->q[j] & 15) : (blk->q[j - 32] >> 4);
			} else {
				qw = ((const coli_block_q8 *)w->data)[(size_t)r * nb + b].q[j];
			}
			isum += (double)qw * qx[j];
			iabs += fabs((double)qw * qx[j]);
		}
		if (w->qtype == COLI_Q_INT4) {
			const coli_block_q4 *blk = (const coli_block_q4 *)w->data + (size_t)r * nb + b;
			dw = coli_half_to_float(blk->d);
			m = coli_half_to_float(blk->m);
		} else {
			dw = ((const coli_block_q8 *)w->data)[(size_t)r * nb + b].d;
		}
		double sx = a->sx[(size_t)k * nb + b];
		s += dw * dx * isum + m * sx;
		t += fabs(dw * dx) * iabs + fabs(m * sx);
		double amax = 0.0, wabs = 0.0;
		for (int j = 0; j < 64; j++) {
			double xj = fabs(x[(size_t)k * w->cols + b * 64 + j]);
			double wj = fabs(wd[(size_t)r * w->cols + b * 64 + j]);
			amax = fmax(amax, xj);
			wabs += wj;
			f += (wj + 2.0 * fabs(m)) * xj;
		}
		e += amax * (1.0 / 254.0 + 0x1p-20) * wabs;
	}
	*ref = s;
	*tight = (nb + 10) * 0x1p-24 * t;
	*qerr = e;
	*sf = f;
}

static void check_quantizer(void)
{
	coli_q8act a = { 0 };
	CHECK(coli_q8act_init(&a, 3, 100, NULL) == 0, "init");
	CHECK(a.cols_max == 128, "cols_max rounds up to 64: %d", a.cols_max);
	float x[3 * 128];
	make_x(x, 3, 128);
	x[0] = 127.0f; /* block 0 of input 0: d = 1, ties land on .5 */
	x[1] = 2.5f;
	x[2] = 3.5f;
	x[3] = -2.5f;
	x[4] = 0.5f;
	x[2 * 128 + 70] = NAN;
	CHECK(coli_q8act_quantize(&a, x, 3, 128) == 0, "quantize");
	CHECK(a.d[0] == 1.0f && a.q[1] == 2 && a.q[2] == 4 && a.q[3] == -2 && a.q[4] == 0,
	      "ties to even: d %g q %d %d %d %d", a.d[0], a.q[1], a.q[2], a.q[3], a.q[4]);
	CHECK(a.d[1] == 0.0f && a.sx[1] == 0.0f && a.qs[1] == 0, "zero block");
	CHECK(isnan(a.d[2 * 2 + 1]) && a.qs[2 * 2 + 1] == 0, "NaN block has d = NaN, q = 0");
	for (int k = 0; k < 2; k++)
		for (int b = 0; b < 2; b++) {
			float amax = 0.0f;
			int sum = 0;
			for (int j = 0; j < 64; j++)
				amax = fmaxf(amax, fabsf(x[k * 128 + b * 64 + j]));
			float d = a.d[k * 2 + b];
			CHECK(d == amax / 127.0f, "d = absmax / 127");
			for (int j = 0; j < 64; j++) {
				int q = a.q[(k * 2 + b) * 64 + j];
				sum += q;
				CHECK(q >= -127 && q <= 127, "q range");
				CHECK(fabs((double)d * q - x[k * 128 + b * 64 + j]) <=
					      d * (0.5 + 1e-5),
				      "half a step");
			}
			CHECK(a.sx[k * 2 + b] == d * (float)sum, "sx = d * sum(q)");
			CHECK(a.qs[k * 2 + b] == sum, "qs = sum(q)");
		}
	/* every path quantizes to the same bits (here and in a larger run
	 * with infinities, tiny and huge blocks) */
	float big[5 * 640];
	make_x(big, 5, 640);
	big[7] = INFINITY;
	big[64 * 3 + 5] = -INFINITY;
	for (int j = 0; j < 64; j++) {
		big[64 * 4 + j] *= 1e-32f;
		big[64 * 5 + j] *= 3e37f;
		big[64 * 6 + j] = (float)(j - 32) * 0.5f; /* many exact ties */
	}
	coli_q8act g = { 0 }, o = { 0 };
	CHECK(coli_q8act_init(&g, 5, 640, NULL) == 0 && coli_q8act_init(&o, 5, 640, NULL) == 0, "init");
	coli_kernels_q8_force_path("generic");
	coli_q8act_quantize(&g, big, 5, 640);
	for (int i = 0; i < N_PATHS; i++) {
		if (coli_kernels_q8_force_path(paths[i]))
			continue;
		coli_q8act_quantize(&a, x, 3, 128);
		CHECK(a.q[1] == 2 && a.q[2] == 4 && a.q[3] == -2 && a.q[4] == 0, "%s ties", paths[i]);
		coli_q8act_quantize(&o, big, 5, 640);
		CHECK(!memcmp(g.q, o.q, 5 * 640) && !memcmp(g.d, o.d, 50 * sizeof(float)) &&
			      !memcmp(g.sx, o.sx, 50 * sizeof(float)) &&
			      !memcmp(g.qs, o.qs, 50 * sizeof(int32_t)),
		      "%s quantizes x differently from the portable path", paths[i]);
	}
	coli_kernels_q8_force_path(NULL);
	coli_q8act_free(&g);
	coli_q8act_free(&o);
	CHECK(coli_q8act_quantize(&a, x, 4, 128) == -EINVAL, "too many rows refused");
	CHECK(coli_q8act_quantize(&a, x, 1, 192) == -EINVAL, "too many cols refused");
	coli_q8act_free(&a);
	coli_q8act_free(&a);
	coli_q8act_free(NULL);
}

/* quant_kernels_q8.h's arithmetic written out from its text (one FMA chain per
 * output over the blocks), for an exact comparison with every path */
static float spec_output(const coli_qmat *w, const coli_q8act *a, int k, int r)
{
	int nb = w->cols / 64;
	float acc = 0.0f, accm = 0.0f;
	for (int b = 0; b < nb; b++) {
		const int8_t *qx = a->q + ((size_t)k * nb + b) * 64;
		int32_t isum = 0;
		float dw, m = 0.0f;
		if (w->qtype == COLI_Q_INT4) {
			const coli_block_q4 *blk = (const coli_block_q4 *)w->data + (size_t)r * nb + b;
			for (int j = 0; j < 64; j++)
				isum += (j < 32 ? (blk->q[j] & 15) : (blk->q[j - 32] >> 4)) * qx[j];
			dw = coli_half_to_float(blk->d);
			m = coli_half_to_float(blk->m);
		} else {
			const coli_block_q8 *blk = (const coli_block_q8 *)w->data + (size_t)r * nb + b;
			for (int j = 0; j < 64; j++)
				isum += blk->q[j] * qx[j];
			dw = blk->d;
		}
		float s = dw * a->d[(size_t)k * nb + b];
		acc = fmaf((float)isum, s, acc);
		if (w->qtype == COLI_Q_INT4)
			accm = fmaf(m, a->sx[(size_t)k * nb + b], accm);
	}
	return w->qtype == COLI_Q_INT4 ? acc + accm : acc;
}

static void fill_nan(float *y, size_t n)
{
	for (size_t i = 0; i < n; i++)
		y[i] = __builtin_nanf("");
}

static int same_bits(const float *a, const float *b, size_t n)
{
	return memcmp(a, b, n * sizeof *a) == 0;
}

static void check_shape(coli_pool *pools[3], int qtype, struct shape sh)
{
	size_t ny = (size_t)sh.n * sh.rows, nw = (size_t)sh.rows * sh.cols;
	float *wf = malloc(nw * sizeof *wf), *wd = malloc(nw * sizeof *wd);
	void *wq = malloc(coli_qtype_bytes(qtype, sh.rows, sh.cols));
	float *x = malloc((size_t)sh.n * sh.cols * sizeof *x);
	float *y = malloc(ny * sizeof *y), *y0 = malloc(ny * sizeof *y0);
	float *yf = malloc(ny * sizeof *yf), *y1 = malloc(sh.rows * sizeof *y1);
	coli_q8act a = { 0 }, small = { 0 };
	if (!wf || !wd || !wq || !x || !y || !y0 || !yf || !y1 ||
	    coli_q8act_init(&a, 80, 18432, NULL) || coli_q8act_init(&small, 2, sh.cols, NULL)) {
		CHECK(0, "out of memory");
		goto out;
	}
	for (size_t i = 0; i < nw; i++)
		wf[i] = frand() * 0.05f + (i % 64 == 3 ? 0.02f : 0.0f);
	CHECK(coli_quantize_rows(qtype, wf, sh.rows, sh.cols, wq) == 0, "quantize weights");
	coli_dequantize_rows(qtype, wq, sh.rows, sh.cols, wd);
	make_x(x, sh.n, sh.cols);
	coli_qmat w = { qtype, sh.rows, sh.cols, wq };
	coli_kernels_force_isa("generic");
	coli_matmul(NULL, &w, x, sh.n, yf); /* f32 activations, for the loose bound */
	coli_kernels_force_isa(NULL);
	int first = 1;
	for (int ii = 0; ii < N_PATHS; ii++) {
		if (coli_kernels_q8_force_path(paths[ii]))
			continue;
		/* NaN where an output is not written: no path passes on the
		 * bits an earlier one left */
		fill_nan(y, ny);
		coli_matmul_q8(NULL, &w, x, sh.n, y, &a);
		if (first) {
			memcpy(y0, y, ny * sizeof *y);
			/* a holds the quantized x of this call */
			for (int k = 0; k < sh.n; k++)
				for (int r = 0; r < sh.rows; r++) {
					double ref, tight, qerr, sf;
					reference(&w, wd, &a, x, k, r, &ref, &tight, &qerr, &sf);
					float spec = spec_output(&w, &a, k, r);
					CHECK(!memcmp(&spec, &y[(size_t)k * sh.rows + r], sizeof spec),
					      "%s not quant_kernels_q8.h's arithmetic at %dx%d k%d r%d: %a vs %a",
					      paths[ii], sh.rows, sh.cols, k, r, y[(size_t)k * sh.rows + r], spec);
					double v = y[(size_t)k * sh.rows + r];
					double e = fabs(v - ref);
					CHECK(e <= tight, "%s tight %dx%d k%d r%d: %g vs %g (bound %g)",
					      paths[ii], sh.rows, sh.cols, k, r, v, ref, tight);
					if (tight > 0 && e / tight > worst_tight)
						worst_tight = e / tight;
					/* quant_kernels.h's f32 bound, portable path (the loosest) */
					double lb = qerr + tight + (sh.cols + 80) * 0x1p-24 * sf;
					double el = fabs(v - yf[(size_t)k * sh.rows + r]);
					CHECK(el <= lb, "loose %dx%d: %g vs f32 %g (bound %g)", sh.rows,
					      sh.cols, v, yf[(size_t)k * sh.rows + r], lb);
					if (lb > 0 && el / lb > worst_loose)
						worst_loose = el / lb;
				}
			first = 0;
		}
		CHECK(same_bits(y, y0, ny), "%s differs from the first path at %dx%d n%d", paths[ii],
		      sh.rows, sh.cols, sh.n);
		for (int pi = 0; pi < 3; pi++) {
			fill_nan(y, ny);
			coli_matmul_q8(pools[pi], &w, x, sh.n, y, &a);
			CHECK(same_bits(y, y0, ny), "%s pool %d differs at %dx%d", paths[ii], pi + 1,
			      sh.rows, sh.cols);
		}
		for (int k = 0; k < sh.n; k++) {
			fill_nan(y1, (size_t)sh.rows);
			coli_matmul_q8(pools[1], &w, x + (size_t)k * sh.cols, 1, y1, &a);
			CHECK(same_bits(y1, y0 + (size_t)k * sh.rows, sh.rows),
			      "%s n=1 of input %d differs from matmul row (%dx%d)", paths[ii], k, sh.rows,
			      sh.cols);
		}
		fill_nan(y, ny);
		coli_matmul_q8(pools[2], &w, x, sh.n, y, &small);
		CHECK(same_bits(y, y0, ny), "%s passes of 2 inputs differ", paths[ii]);
	}
out:
	coli_q8act_free(&a);
	coli_q8act_free(&small);
	free(wf);
	free(wd);
	free(wq);
	free(x);
	free(y);
	free(y0);
	free(yf);
	free(y1);
}

static void check_edges(coli_pool *p)
{
	float wf[16 * 128], x[2 * 128], y[32], y2[32];
	coli_q8act a = { 0 };
	CHECK(coli_q8act_init(&a, 2, 64, NULL) == 0, "init");
	for (int i = 0; i < 16 * 128; i++)
		wf[i] = frand();
	make_x(x, 2, 128);
	coli_qmat w = { COLI_Q_F32, 16, 128, wf };
	coli_matmul(p, &w, x, 2, y);
	coli_matmul_q8(p, &w, x, 2, y2, &a);
	CHECK(same_bits(y, y2, 32), "f32 weights: coli_matmul's bits");
	uint8_t wq[16 * 2 * sizeof(coli_block_q4)];
	coli_quantize_rows(COLI_Q_INT4, wf, 16, 128, wq);
	coli_qmat w4 = { COLI_Q_INT4, 16, 128, wq };
	coli_log_set_level(COLI_LOG_ERROR + 1);
	coli_matmul_q8(p, &w4, x, 2, y2, &a); /* 128 columns > cols_max 64 */
	coli_matmul_q8(p, &w4, x, 1, y, NULL);
	coli_log_set_level(COLI_LOG_WARN);
	CHECK(isnan(y2[0]) && isnan(y2[31]) && isnan(y[0]), "too small scratch gives NaN");
	coli_q8act_free(&a);
}

int main(void)
{
	coli_pool *pools[3];
	for (int i = 0; i < 3; i++)
		pools[i] = coli_pool_new(i + 1);
	check_quantizer();
	/* the q8 path follows quant_kernels.c's choice */
	for (size_t i = 0; i < sizeof isas / sizeof isas[0]; i++)
		if (!coli_kernels_force_isa(isas[i])) {
			const char *q = coli_kernels_q8_isa();
			printf("kernels path %s: q8 path %s\n", isas[i], q);
			CHECK(!strcmp(isas[i], "generic") ? !strcmp(q, "generic")
			      : !strcmp(isas[i], "avx2") ? strcmp(q, "avx512vnni") && strcmp(q, "amx") : 1,
			      "q8 path %s beyond kernels path %s", q, isas[i]);
		}
	coli_kernels_force_isa(NULL);
	CHECK(coli_kernels_q8_force_path("avx9") == -EINVAL, "unknown q8 path refused");
	int ran = 0;
	for (int i = 0; i < N_PATHS; i++)
		if (!coli_kernels_q8_force_path(paths[i])) {
			CHECK(!strcmp(coli_kernels_q8_isa(), paths[i]), "forced %s", paths[i]);
			ran++;
		} else {
			printf("q8 path %s: not on this CPU or build, skipped\n", paths[i]);
			if (test_isa_required(paths[i]))
				FAIL("q8 path %s: named in COLI_TEST_ISA_REQUIRED but not available", paths[i]);
		}
	coli_kernels_q8_force_path(NULL);
	for (int s = 0; s < N_SHAPES; s++) {
		check_shape(pools, COLI_Q_INT4, shapes[s]);
		check_shape(pools, COLI_Q_INT8, shapes[s]);
	}
	coli_kernels_q8_force_path(NULL);
	check_edges(pools[1]);
	printf("%d paths; worst error / tight bound %.3g, vs f32 / loose bound %.3g\n",
	       ran, worst_tight, worst_loose);
	for (int i = 0; i < 3; i++)
		coli_pool_free(pools[i]);
	return test_summary(__FILE__);
}
