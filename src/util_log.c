/* util_log.c - see coli_log.h.
 *
 * The level is checked before anything else (an atomic load): a debug line
 * nobody asked for costs no formatting and no lock. The lock is held across
 * the sink call so that coli_log_set_sink(NULL, ...) returning means no
 * thread is still inside the old sink; sinks therefore must not block
 * (colitop's and serve's append to a util_log_ring). */
#include "config.h"

#include "coli_log.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
static coli_log_sink log_sink;
static void *log_opaque;
/* -1 until first use: then COLI_LOG_LEVEL (debug|info|warning|error) or
 * warning, so commands print only what needs attention unless asked. */
static atomic_int log_min_level = -1;
static pthread_once_t log_env_once = PTHREAD_ONCE_INIT;

static const char *const level_names[] = { "debug", "info", "warning", "error" };

static void log_env_read(void)
{
	const char *env = getenv("COLI_LOG_LEVEL");
	int min = COLI_LOG_WARN;
	for (int i = 0; env && i <= COLI_LOG_ERROR; i++)
		if (!strcmp(env, level_names[i]) || (i == COLI_LOG_WARN && !strcmp(env, "warn")))
			min = i;
	/* coli_log_set_level before the first line wins */
	int unset = -1;
	atomic_compare_exchange_strong_explicit(&log_min_level, &unset, min, memory_order_relaxed,
						memory_order_relaxed);
}

void coli_log_set_sink(coli_log_sink sink, void *opaque)
{
	pthread_mutex_lock(&log_lock);
	log_sink = sink;
	log_opaque = opaque;
	pthread_mutex_unlock(&log_lock);
}

void coli_log_set_level(int min_level)
{
	atomic_store_explicit(&log_min_level, min_level, memory_order_relaxed);
}

void coli_log(int level, const char *fmt, ...)
{
	char line[1024];
	va_list ap;
	if (level < COLI_LOG_DEBUG)
		level = COLI_LOG_DEBUG;
	if (level > COLI_LOG_ERROR)
		level = COLI_LOG_ERROR;
	pthread_once(&log_env_once, log_env_read);
	if (level < atomic_load_explicit(&log_min_level, memory_order_relaxed))
		return;
	va_start(ap, fmt);
	vsnprintf(line, sizeof line, fmt, ap);
	va_end(ap);
	pthread_mutex_lock(&log_lock);
	if (log_sink)
		log_sink(log_opaque, level, line);
	else
		fprintf(stderr, "coli: %s: %s\n", level_names[level], line);
	pthread_mutex_unlock(&log_lock);
}
