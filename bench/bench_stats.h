/* bench_stats.h - the order statistics the benches report: sorting a
 * sample of doubles and its median. Header-only (each bench is one
 * program of its own). */
#ifndef COLI_BENCH_STATS_H
#define COLI_BENCH_STATS_H

#include <stdlib.h>

static inline int bench_cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* v[0..n) ascending, in place */
static inline void bench_sort(double *v, int n)
{
	qsort(v, (size_t)n, sizeof *v, bench_cmp_double);
}

/* The median of v[0..n) (n > 0), sorting v in place. */
static inline double bench_median(double *v, int n)
{
	bench_sort(v, n);
	return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

#endif
