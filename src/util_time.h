/* util_time.h - the clocks of the project, written once: monotonic seconds,
 * for intervals, deadlines and rates (never for dates), and the CPU time
 * of the process or of the calling thread. Header-only: they are read in
 * the per-token loop (tokens per second, request deadlines, the step's
 * breakdown). */
#ifndef COLI_UTIL_TIME_H
#define COLI_UTIL_TIME_H

#include <time.h>

static inline double coli_now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* CPU seconds of the process, every thread (a system call: read a few
 * times per layer, never per head). */
static inline double coli_cpu_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* CPU seconds of the calling thread. */
static inline double coli_thread_cpu_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

#endif
