/* matmul_rows_bench.c - what one more input row costs in a matrix product:
 * thread CPU time per (64-weight block, input) of coli_matmul (f32
 * activations) or coli_matmul_q8 (int8 activations) for n = 1..8 inputs,
 * on one thread, and each as a fraction of n = 1. The MTP verify step
 * (n = drafts + 1) and prefill chunks live on these figures; n = 1 is
 * decode. Figures, not assertions: never run by make check.
 *
 *   matmul_rows_bench ROWS COLS TYPE [f32|q8 [ISA]]
 *   matmul_rows_bench ROWS COLS TYPE gemm [PATH...]
 *   matmul_rows_bench peak
 *
 * TYPE int4-g64 or int8; ISA as $COLI_KERNELS_ISA (avx512, avx2,
 * generic). The best of 7 interleaved passes over n is reported, so
 * other processes' bursts drop out. Prints one line.
 *
 * gemm: the q8 paths named (coli_kernels_q8_force_path names; default
 * avx512vnni amx avx2, those this CPU lacks left out) at n = 4..256 inputs,
 * one thread, interleaved: int8 Gop/s (2 ops per weight and input), the
 * ratio to the first path, and the fraction of the one-thread peak of
 * the instruction the path sums with (peak: vpdpbusd zmm, and tdpbusd
 * on tiles held in registers where the CPU has AMX; see
 * matmul_rows_peak.h). The path "amx-vector" is the AMX kernel with its
 * tile instructions turned into no-ops (the sums it scales are garbage):
 * its vector and memory work alone, which bounds the AMX path's rate
 * where the tile unit keeps up; it runs on any AVX-512 CPU. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "quant_kernels.h"
#include "quant_kernels_q8.h"
#include "quant.h"
#include "matmul_rows_peak.h"
#include "util_time.h"

#define N_MAX 64
static const int n_list[] = { 1, 2, 3, 4, 5, 6, 7, 8, 16, 32, 64 };
#define N_COUNT ((int)(sizeof n_list / sizeof n_list[0]))
#define PASSES 7

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
/* quant_kernels_q8_amx.c without its tile instructions ("amx-vector") */
#undef _tile_loadconfig
#undef _tile_release
#undef _tile_loadd
#undef _tile_stored
#undef _tile_zero
#undef _tile_dpbssd
#undef _tile_dpbsud
#define _tile_loadconfig(c) ((void)(c))
#define _tile_release() ((void)0)
#define _tile_loadd(t, base, stride) ((void)(base), (void)(stride))
#define _tile_stored(t, base, stride) ((void)(base), (void)(stride))
#define _tile_zero(t) ((void)0)
#define _tile_dpbssd(c, a, b) ((void)0)
#define _tile_dpbsud(c, a, b) ((void)0)
#define coli_kernels_q8_amx_rows vec_kernels_q8_amx_rows
#include "quant_kernels_q8_amx.c"
#undef coli_kernels_q8_amx_rows
static coli_q8_rows_fn vector_rows(int qtype)
{
	if (!coli_kernels_avx512_rows(COLI_Q_F32))
		return NULL;
	return qtype == COLI_Q_INT4 ? rows_q4_amx : qtype == COLI_Q_INT8 ? rows_q8_amx : NULL;
}
#else
static coli_q8_rows_fn vector_rows(int qtype)
{
	(void)qtype;
	return NULL;
}
#endif

/* gemm mode: int8 ops per second of coli_matmul_q8 per path and n */
static const int g_list[] = { 4, 8, 12, 16, 24, 32, 40, 64, 128, 256 };
#define G_COUNT ((int)(sizeof g_list / sizeof g_list[0]))
#define G_MAX 256
#define G_PATHS 6

static int gemm_main(coli_qmat *w, const char *tname, int argc, char **argv)
{
	const char *want[G_PATHS], *paths[G_PATHS];
	int nwant = 0, np = 0;
	for (int i = 0; i < argc && nwant < G_PATHS; i++)
		want[nwant++] = argv[i];
	if (!nwant) {
		want[nwant++] = "avx512vnni";
		want[nwant++] = "amx";
		want[nwant++] = "avx2";
	}
	for (int i = 0; i < nwant; i++) {
		if (!strcmp(want[i], "amx-vector") ? !vector_rows(w->qtype)
						   : coli_kernels_q8_force_path(want[i]) != 0)
			printf("path %s: not on this CPU or build, left out\n", want[i]);
		else
			paths[np++] = want[i];
	}
	coli_kernels_q8_force_path(NULL);
	if (!np)
		return 1;
	const int cols = w->cols, rows = w->rows;
	float *x = malloc((size_t)G_MAX * (size_t)cols * sizeof *x);
	float *y = malloc((size_t)G_MAX * (size_t)rows * sizeof *y);
	coli_q8act a = { 0 };
	if (!x || !y || coli_q8act_init(&a, G_MAX, cols, NULL)) {
		fprintf(stderr, "matmul_rows_bench: out of memory\n");
		return 1;
	}
	for (size_t i = 0; i < (size_t)G_MAX * (size_t)cols; i++)
		x[i] = (float)rand() / (float)RAND_MAX - 0.5f;
	double peak_vnni = bench_peak_vpdpbusd(), peak_amx = bench_peak_tdpbusd();
	double peak_avx2 = bench_peak_vpmaddubsw();
	double best[G_PATHS][G_COUNT];
	for (int p = 0; p < np; p++)
		for (int i = 0; i < G_COUNT; i++)
			best[p][i] = 1e30;
	const double macs1 = (double)rows * (double)cols;
	for (int pass = 0; pass < PASSES; pass++)
		for (int i = 0; i < G_COUNT; i++)
			for (int p = 0; p < np; p++) {
				const int n = g_list[i];
				const int vec = !strcmp(paths[p], "amx-vector");
				coli_kernels_q8_force_path(vec ? "avx512vnni" : paths[p]);
				/* about 1e9 multiply-adds per timed group (7 ms at
				 * 300 Gop/s) */
				int calls = (int)(1e9 / (macs1 * n)) + 1;
				double t0 = coli_thread_cpu_s();
				for (int r = 0; r < calls; r++) {
					if (vec) { /* what coli_matmul_q8 does, one thread */
						coli_q8act_quantize(&a, x, n, cols);
						vector_rows(w->qtype)(w, &a, n, 0, rows, y);
					} else {
						coli_matmul_q8(NULL, w, x, n, y, &a);
					}
				}
				double t = (coli_thread_cpu_s() - t0) / calls;
				if (t < best[p][i])
					best[p][i] = t;
			}
	coli_kernels_q8_force_path(NULL);
	printf("peak one thread: vpmaddubsw ymm %.1f Gop/s, vpdpbusd zmm %.1f Gop/s, tdpbusd ",
	       peak_avx2 * 1e-9, peak_vnni * 1e-9);
	if (peak_amx > 0)
		printf("%.1f Gop/s\n", peak_amx * 1e-9);
	else
		printf("n/a (no AMX here)\n");
	for (int i = 0; i < G_COUNT; i++) {
		const int n = g_list[i];
		printf("%s %dx%d q8 n=%d:", tname, rows, cols, n);
		for (int p = 0; p < np; p++) {
			double ops = 2.0 * macs1 * n / best[p][i];
			double peak = !strncmp(paths[p], "amx", 3)	? peak_amx
				      : !strcmp(paths[p], "avx512vnni") ? peak_vnni
				      : !strcmp(paths[p], "avx2")	? peak_avx2
									: 0;
			printf(" %s %.1f Gop/s (x%.2f, ", paths[p], ops * 1e-9, best[0][i] / best[p][i]);
			if (peak > 0)
				printf("%.3f of peak)", ops / peak);
			else
				printf("peak n/a)");
		}
		printf("\n");
	}
	coli_q8act_free(&a);
	free(x);
	free(y);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 2 && !strcmp(argv[1], "peak")) {
		double v = bench_peak_vpdpbusd(), t = bench_peak_tdpbusd();
		double m = bench_peak_vpmaddubsw();
		printf("int8 peak one thread: vpmaddubsw ymm %.1f Gop/s, vpdpbusd zmm %.1f Gop/s, "
		       "tdpbusd %.1f Gop/s%s\n",
		       m * 1e-9, v * 1e-9, t * 1e-9, t > 0 ? "" : " (no AMX here)");
		return 0;
	}
	if (argc < 4) {
		fprintf(stderr, "usage: matmul_rows_bench ROWS COLS TYPE [f32|q8 [ISA]]\n"
				"       matmul_rows_bench ROWS COLS TYPE gemm [Q8PATH...]\n"
				"       matmul_rows_bench peak\n");
		return 2;
	}
	int rows = atoi(argv[1]), cols = atoi(argv[2]), qt = coli_qtype_parse(argv[3]);
	int q8 = argc > 4 && !strcmp(argv[4], "q8");
	int gemm = argc > 4 && !strcmp(argv[4], "gemm");
	if (rows < 1 || cols < 64 || cols % 64 || qt < 0) {
		fprintf(stderr, "matmul_rows_bench: bad shape or type\n");
		return 2;
	}
	if (!gemm && argc > 5 && coli_kernels_force_isa(argv[5])) {
		fprintf(stderr, "matmul_rows_bench: path %s not available\n", argv[5]);
		return 1;
	}
	size_t nw = (size_t)rows * (size_t)cols;
	float *wf = malloc(nw * sizeof *wf);
	void *wq = malloc(coli_qtype_bytes(qt, rows, cols));
	float *x = malloc((size_t)N_MAX * (size_t)cols * sizeof *x);
	float *y = malloc((size_t)N_MAX * (size_t)rows * sizeof *y);
	coli_q8act a = { 0 };
	if (!wf || !wq || !x || !y || coli_q8act_init(&a, N_MAX, cols, NULL)) {
		fprintf(stderr, "matmul_rows_bench: out of memory\n");
		return 1;
	}
	srand(1);
	for (size_t i = 0; i < nw; i++)
		wf[i] = (float)rand() / (float)RAND_MAX - 0.5f;
	for (size_t i = 0; i < (size_t)N_MAX * (size_t)cols; i++)
		x[i] = (float)rand() / (float)RAND_MAX - 0.5f;
	coli_quantize_rows(qt, wf, rows, cols, wq);
	coli_qmat w = { qt, rows, cols, wq };
	if (gemm) {
		int rc = gemm_main(&w, argv[3], argc - 5, argv + 5);
		free(wf);
		free(wq);
		free(x);
		free(y);
		coli_q8act_free(&a);
		return rc;
	}
	/* about 2 ms of work per timed call group */
	double blocks = (double)nw / 64.0;
	int reps = (int)(1e6 / blocks) + 1;
	double best[N_COUNT];
	for (int i = 0; i < N_COUNT; i++)
		best[i] = 1e30;
	for (int pass = 0; pass < PASSES; pass++) {
		for (int i = 0; i < N_COUNT; i++) {
			const int n = n_list[i];
			/* the same work per n: fewer calls of more inputs */
			const int calls = reps / n > 0 ? reps / n : 1;
			double t0 = coli_thread_cpu_s();
			for (int r = 0; r < calls; r++) {
				if (q8)
					coli_matmul_q8(NULL, &w, x, n, y, &a);
				else
					coli_matmul(NULL, &w, x, n, y);
			}
			double ns = (coli_thread_cpu_s() - t0) / calls / blocks / n * 1e9;
			if (ns < best[i])
				best[i] = ns;
		}
	}
	printf("%s %dx%d %s %s ns per (block, input):", argv[3], rows, cols, q8 ? "q8" : "f32",
	       q8 ? coli_kernels_q8_isa() : coli_kernels_isa());
	for (int i = 0; i < N_COUNT; i++)
		printf(" n=%d %.2f (%.2f)", n_list[i], best[i], best[i] / best[0]);
	printf("\n");
	coli_q8act_free(&a);
	free(wf);
	free(wq);
	free(x);
	free(y);
	return 0;
}
