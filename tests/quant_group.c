/* quant_group.c - coli_matmul_group and coli_matmul_q8_group give each
 * product exactly the bits of the product run alone.
 *
 * What it proves, on the kernel path this CPU picks and on the portable
 * one, with no pool and pools of 1, 2 and 3 threads:
 *  - a group of mixed products (f32, int8, int4 weights; shapes from one
 *    row to 16384 x 2048; 1..9 inputs) equals coli_matmul / coli_matmul_q8
 *    of each product, bit for bit;
 *  - products sharing one input (a layer's experts at decode) share its
 *    block sums / quantized copy and still give their own results;
 *  - more products than one dispatch holds (COLI_GROUP_SEGS) and inputs
 *    larger than the stack's block sums or the q8 scratch are split into
 *    several runs, same bits;
 *  - an unsupported product in a group gets NaN and leaves the others
 *    exact;
 *  - coli_matmul_rows / coli_matmul_q8_rows (a caller's own split of one
 *    product: attention's per-head rows of q_b) give those rows of
 *    coli_matmul / coli_matmul_q8 bit for bit, for ranges that do not
 *    start on a multiple of 8 and n > 1, and touch no other row. */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coli_log.h"
#include "quant_kernels_q8.h"
#include "test_util.h"

struct prod {
	coli_qmat w;
	void *wdata;
	float *x;      /* owned, or NULL when sharing input `share` */
	int share;     /* index of the product whose x this one uses, or -1 */
	int n;
	float *y, *ref;
};

static void make_w(coli_qmat *w, void **data, int qtype, int rows, int cols)
{
	float *f = malloc(sizeof(float) * (size_t)rows * (size_t)cols);
	for (size_t i = 0; i < (size_t)rows * (size_t)cols; i++)
		f[i] = frand() * 0.1f;
	size_t bytes = coli_qtype_bytes(qtype, rows, cols);
	*data = malloc(bytes);
	CHECK(coli_quantize_rows(qtype, f, rows, cols, *data) == 0,
		"quantize %d x %d", rows, cols);
	free(f);
	*w = (coli_qmat){ .qtype = qtype, .rows = rows, .cols = cols, .data = *data };
}

static const float *prod_x(const struct prod *p, int i)
{
	return p[i].share >= 0 ? p[p[i].share].x : p[i].x;
}

/* A group of count products; every third shares the input of product 0
 * when the widths agree. */
static struct prod *make_group(int count, int n_big)
{
	static const int shapes[][2] = { { 1, 64 },     { 37, 2048 }, { 301, 1024 }, { 13, 640 },
					 { 2048, 6144 }, { 96, 2048 }, { 19, 6144 },  { 130, 4096 } };
	const int ns = (int)(sizeof shapes / sizeof shapes[0]);
	struct prod *p = calloc((size_t)count, sizeof *p);
	for (int i = 0; i < count; i++) {
		const int qtype = i % 3 == 0 ? COLI_Q_INT4 : i % 3 == 1 ? COLI_Q_INT8 : COLI_Q_F32;
		int rows = shapes[i % ns][0], cols = shapes[i % ns][1];
		if (i == 1) {
			rows = 16384;
			cols = 2048;
		}
		p[i].n = i == 2 ? n_big : 1 + (i * 5) % 9;
		if (i % 3 == 0 && i > 0 && p[i].n == p[0].n && p[0].w.cols == cols)
			p[i].share = 0;
		else
			p[i].share = -1;
		make_w(&p[i].w, &p[i].wdata, qtype, rows, cols);
		if (p[i].share < 0) {
			p[i].x = malloc(sizeof(float) * (size_t)p[i].n * (size_t)cols);
			for (size_t k = 0; k < (size_t)p[i].n * (size_t)cols; k++)
				p[i].x[k] = frand();
		}
		p[i].y = malloc(sizeof(float) * (size_t)p[i].n * (size_t)rows);
		p[i].ref = malloc(sizeof(float) * (size_t)p[i].n * (size_t)rows);
	}
	return p;
}

static void free_group(struct prod *p, int count)
{
	for (int i = 0; i < count; i++) {
		free(p[i].wdata);
		free(p[i].x);
		free(p[i].y);
		free(p[i].ref);
	}
	free(p);
}

static void check_group(const char *what, struct prod *p, int count, coli_pool *pool, coli_q8act *scr)
{
	coli_mm *g = calloc((size_t)count, sizeof *g);
	for (int i = 0; i < count; i++) {
		if (scr)
			coli_matmul_q8(NULL, &p[i].w, prod_x(p, i), p[i].n, p[i].ref, scr);
		else
			coli_matmul(NULL, &p[i].w, prod_x(p, i), p[i].n, p[i].ref);
		memset(p[i].y, 0xff, sizeof(float) * (size_t)p[i].n * (size_t)p[i].w.rows);
		g[i] = (coli_mm){ &p[i].w, prod_x(p, i), p[i].y, p[i].n };
	}
	if (scr)
		coli_matmul_q8_group(pool, g, count, scr);
	else
		coli_matmul_group(pool, g, count);
	for (int i = 0; i < count; i++) {
		size_t cnt = (size_t)p[i].n * (size_t)p[i].w.rows;
		CHECK(!memcmp(p[i].y, p[i].ref, sizeof(float) * cnt),
		      "%s: product %d (type %d, %d x %d, n %d) differs from its own matmul", what, i,
		      p[i].w.qtype, p[i].w.rows, p[i].w.cols, p[i].n);
	}
	free(g);
}

int main(void)
{
	test_rng = 0x2545f4914f6cdd1dull;
	coli_log_set_level(COLI_LOG_ERROR);
	/* 60 products: more than one dispatch; product 2 has 200 inputs of
	 * 640 columns (2000 block sums) and the q8 scratch holds 16 x 6144 */
	const int count = 60;
	struct prod *p = make_group(count, 200);
	coli_q8act scr = { 0 };
	if (coli_q8act_init(&scr, 16, 6144, NULL)) {
		printf("FAIL: q8 scratch\n");
		return 1;
	}
	const char *isas[] = { NULL, "generic" };
	for (int ii = 0; ii < 2; ii++) {
		if (isas[ii]) {
			coli_kernels_force_isa(isas[ii]);
			coli_kernels_q8_force_path(isas[ii]);
		}
		for (int t = 0; t <= 3; t++) {
			coli_pool *pool = t ? coli_pool_new(t) : NULL;
			char what[64];
			snprintf(what, sizeof what, "f32 act, %s, %d threads", coli_kernels_isa(), t);
			check_group(what, p, count, pool, NULL);
			snprintf(what, sizeof what, "q8 act, %s, %d threads", coli_kernels_q8_isa(), t);
			check_group(what, p, count, pool, &scr);
			coli_pool_free(pool);
		}
	}
	coli_kernels_force_isa(NULL);
	coli_kernels_q8_force_path(NULL);

	/* an unsupported product (int4 with 100 columns) amid good ones */
	coli_pool *pool = coli_pool_new(2);
	struct prod *q = make_group(4, 3);
	coli_qmat bad = { .qtype = COLI_Q_INT4, .rows = 8, .cols = 100, .data = q[0].wdata };
	float xb[300] = { 0 }, yb[24];
	coli_mm g[5];
	for (int i = 0; i < 4; i++) {
		coli_matmul(NULL, &q[i].w, prod_x(q, i), q[i].n, q[i].ref);
		g[i] = (coli_mm){ &q[i].w, prod_x(q, i), q[i].y, q[i].n };
	}
	g[4] = (coli_mm){ &bad, xb, yb, 3 };
	coli_matmul_group(pool, g, 5);
	for (int i = 0; i < 4; i++)
		CHECK(!memcmp(q[i].y, q[i].ref, sizeof(float) * (size_t)q[i].n * (size_t)q[i].w.rows),
		      "product %d beside a bad one", i);
	int nan = 1;
	for (int i = 0; i < 24; i++)
		nan &= isnan(yb[i]);
	CHECK(nan, "the unsupported product is not NaN");
	coli_matmul_q8_group(pool, g + 4, 1, &scr);
	nan = 1;
	for (int i = 0; i < 24; i++)
		nan &= isnan(yb[i]);
	CHECK(nan, "the unsupported q8 product is not NaN");
	coli_pool_free(pool);
	free_group(q, 4);

	/* row ranges of one product, computed by the caller */
	static const int qtypes[] = { COLI_Q_INT4, COLI_Q_INT8, COLI_Q_F32 };
	for (int qi = 0; qi < 3; qi++) {
		const int rows = 300, cols = 2048, n = 5;
		coli_qmat w;
		void *wd;
		make_w(&w, &wd, qtypes[qi], rows, cols);
		float *x = malloc(sizeof(float) * n * cols), *ref = malloc(sizeof(float) * n * rows);
		float *y = malloc(sizeof(float) * n * rows), *ref8 = malloc(sizeof(float) * n * rows);
		float *xs = malloc(sizeof(float) * (coli_matmul_xsum_len(&w, n) + 1));
		for (int i = 0; i < n * cols; i++)
			x[i] = frand();
		coli_matmul(NULL, &w, x, n, ref);
		coli_matmul_xsum(&w, x, n, xs);
		memset(y, 0xff, sizeof(float) * n * rows);
		static const int cuts[] = { 0, 13, 77, 78, 192, 300 };
		for (int c = 0; c + 1 < 6; c++)
			coli_matmul_rows(&w, x, n, xs, cuts[c], cuts[c + 1], y);
		CHECK(!memcmp(y, ref, sizeof(float) * n * rows), "coli_matmul_rows type %d", qtypes[qi]);
		/* a range leaves the rows outside it alone */
		memset(y, 0, sizeof(float) * n * rows);
		coli_matmul_rows(&w, x, n, xs, 13, 77, y);
		CHECK(y[12] == 0.0f && y[77] == 0.0f && y[rows + 12] == 0.0f, "rows outside the range written");
		if (qtypes[qi] != COLI_Q_F32) {
			coli_matmul_q8(NULL, &w, x, n, ref8, &scr);
			coli_q8act a = { 0 };
			CHECK(coli_q8act_init(&a, n, cols, NULL) == 0 && coli_q8act_quantize(&a, x, n, cols) == 0,
			      "q8 scratch for the rows check");
			memset(y, 0xff, sizeof(float) * n * rows);
			for (int c = 0; c + 1 < 6; c++)
				coli_matmul_q8_rows(&w, &a, cuts[c], cuts[c + 1], y);
			CHECK(!memcmp(y, ref8, sizeof(float) * n * rows), "coli_matmul_q8_rows type %d", qtypes[qi]);
			coli_q8act_free(&a);
		}
		free(x);
		free(ref);
		free(ref8);
		free(y);
		free(xs);
		free(wd);
	}
	free_group(p, count);
	coli_q8act_free(&scr);
	return test_summary(__FILE__);
}
