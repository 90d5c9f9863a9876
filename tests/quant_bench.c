/* quant_bench.c - print coli_bench_kernels() as JSON (a measuring tool,
 * not a test): quant_bench [SECONDS [THREADS [generic]]] */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "quant_kernel_bench.h"

int main(int argc, char **argv)
{
	double secs = argc > 1 ? atof(argv[1]) : 3.0;
	int threads = argc > 2 ? atoi(argv[2]) : 0;
	if (argc > 3 && !strcmp(argv[3], "generic"))
		coli_kernels_force_generic(1);
	coli_pool *p = coli_pool_new(threads);
	if (!p) {
		fprintf(stderr, "quant_bench: cannot start the pool\n");
		return 1;
	}
	json_t *j = coli_bench_kernels(p, secs);
	coli_pool_free(p);
	if (!j) {
		fprintf(stderr, "quant_bench: out of memory\n");
		return 1;
	}
	json_dumpf(j, stdout, JSON_INDENT(2) | JSON_REAL_PRECISION(4));
	putchar('\n');
	json_decref(j);
	return 0;
}
