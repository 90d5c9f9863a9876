/* util_log.c - see coli_log.h. */
#include "config.h"

#include "coli_log.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
static coli_log_sink log_sink;
static void *log_opaque;
/* -1 until first use: then COLI_LOG_LEVEL (debug|info|warning|error) or
 * warning, so commands print only what needs attention unless asked. */
static int log_min_level = -1;

static const char *const level_names[] = { "debug", "info", "warning", "error" };

void coli_log_set_sink(coli_log_sink sink, void *opaque)
{
	pthread_mutex_lock(&log_lock);
	log_sink = sink;
	log_opaque = opaque;
	pthread_mutex_unlock(&log_lock);
}

void coli_log_set_level(int min_level)
{
	pthread_mutex_lock(&log_lock);
	log_min_level = min_level;
	pthread_mutex_unlock(&log_lock);
}

void coli_log(int level, const char *fmt, ...)
{
	char line[1024];
	va_list ap;
	if (level < COLI_LOG_DEBUG)
		level = COLI_LOG_DEBUG;
	if (level > COLI_LOG_ERROR)
		level = COLI_LOG_ERROR;
	va_start(ap, fmt);
	vsnprintf(line, sizeof line, fmt, ap);
	va_end(ap);
	pthread_mutex_lock(&log_lock);
	if (log_min_level < 0) {
		const char *env = getenv("COLI_LOG_LEVEL");
		log_min_level = COLI_LOG_WARN;
		for (int i = 0; env && i <= COLI_LOG_ERROR; i++)
			if (!strcmp(env, level_names[i]) || (i == COLI_LOG_WARN && !strcmp(env, "warn")))
				log_min_level = i;
	}
	if (level >= log_min_level) {
		if (log_sink)
			log_sink(log_opaque, level, line);
		else
			fprintf(stderr, "coli: %s: %s\n", level_names[level], line);
	}
	pthread_mutex_unlock(&log_lock);
}
