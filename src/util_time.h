/* util_time.h - the one wall clock of the project: monotonic seconds, for
 * intervals, deadlines and rates (never for dates). Header-only: it is
 * read in the per-token loop (tokens per second, request deadlines). */
#ifndef COLI_UTIL_TIME_H
#define COLI_UTIL_TIME_H

#include <time.h>

static inline double coli_now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

#endif
