/* matmul_rows_bench.c - what one more input row costs in a matrix product:
 * thread CPU time per (64-weight block, input) of coli_matmul (f32
 * activations) or coli_matmul_q8 (int8 activations) for n = 1..8 inputs,
 * on one thread, and each as a fraction of n = 1. The MTP verify step
 * (n = drafts + 1) and prefill chunks live on these figures; n = 1 is
 * decode. Figures, not assertions: never run by make check.
 *
 *   matmul_rows_bench ROWS COLS TYPE [f32|q8 [ISA]]
 *
 * TYPE int4-g64 or int8; ISA as $COLI_KERNELS_ISA (avx512, avx2,
 * generic). The best of 7 interleaved passes over n is reported, so
 * other processes' bursts drop out. Prints one line. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "quant_kernels.h"
#include "quant_kernels_q8.h"
#include "quant.h"

#define N_MAX 64
static const int n_list[] = { 1, 2, 3, 4, 5, 6, 7, 8, 16, 32, 64 };
#define N_COUNT ((int)(sizeof n_list / sizeof n_list[0]))
#define PASSES 7

static double thread_cpu_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
	if (argc < 4) {
		fprintf(stderr, "usage: matmul_rows_bench ROWS COLS TYPE [f32|q8 [ISA]]\n");
		return 2;
	}
	int rows = atoi(argv[1]), cols = atoi(argv[2]), qt = coli_qtype_parse(argv[3]);
	int q8 = argc > 4 && !strcmp(argv[4], "q8");
	if (rows < 1 || cols < 64 || cols % 64 || qt < 0) {
		fprintf(stderr, "matmul_rows_bench: bad shape or type\n");
		return 2;
	}
	if (argc > 5 && coli_kernels_force_isa(argv[5])) {
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
			double t0 = thread_cpu_s();
			for (int r = 0; r < calls; r++) {
				if (q8)
					coli_matmul_q8(NULL, &w, x, n, y, &a);
				else
					coli_matmul(NULL, &w, x, n, y);
			}
			double ns = (thread_cpu_s() - t0) / calls / blocks / n * 1e9;
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
