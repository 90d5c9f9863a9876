/* tui_log.c - see tui_log.h. */
#include "config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "coli_log.h"
#include "tui_log.h"

/* the file's level names: one letter, as in the Log pane */
static const char *const file_levels[4] = { "D", "I", "W", "E" };

int tui_log_init(tui_log *l, const char *path)
{
	memset(l, 0, sizeof *l);
	l->lines = calloc(TUI_LOG_LINES, sizeof *l->lines);
	l->levels = calloc(TUI_LOG_LINES, 1);
	if (!l->lines || !l->levels) {
		free(l->lines);
		free(l->levels);
		return -ENOMEM;
	}
	pthread_mutex_init(&l->lock, NULL);
	if (path)
		tui_log_open_file(l, path);
	return 0;
}

void tui_log_open_file(tui_log *l, const char *path)
{
	coli_err err = { 0 };
	util_log_ring *f = NULL;
	if (util_log_ring_new(path, file_levels, 0, &f, &err)) {
		tui_log_add(l, COLI_LOG_WARN, "%s (logging to the Log pane only)", err.msg);
		return;
	}
	pthread_mutex_lock(&l->lock);
	/* ring lines are "HH:MM:SS L message": the file gets the message,
	 * stamped now */
	for (int i = 0; i < l->n; i++) {
		const int slot = (l->head + i) % TUI_LOG_LINES;
		const char *line = l->lines[slot];
		util_log_ring_append(f, l->levels[slot], strlen(line) > 11 ? line + 11 : line);
	}
	l->file = f;
	pthread_mutex_unlock(&l->lock);
}

void tui_log_free(tui_log *l)
{
	if (!l->lines)
		return;
	util_log_ring_free(l->file);   /* drains: nothing logged is lost */
	pthread_mutex_destroy(&l->lock);
	free(l->lines);
	free(l->levels);
	memset(l, 0, sizeof *l);
}

static const char level_letter[] = "DIWE";

static void record(tui_log *l, int level, const char *msg)
{
	char stamp[16];
	time_t now = time(NULL);
	struct tm tm;
	localtime_r(&now, &tm);
	strftime(stamp, sizeof stamp, "%H:%M:%S", &tm);
	if (level < COLI_LOG_DEBUG || level > COLI_LOG_ERROR)
		level = COLI_LOG_INFO;
	/* one line per record: a multi-line message is flattened */
	char flat[TUI_LOG_WIDTH * 2];
	snprintf(flat, sizeof flat, "%s", msg);
	for (char *p = flat; *p; p++)
		if (*p == '\n' || *p == '\r')
			*p = ' ';
	pthread_mutex_lock(&l->lock);
	int slot = (l->head + l->n) % TUI_LOG_LINES;
	if (l->n == TUI_LOG_LINES)
		l->head = (l->head + 1) % TUI_LOG_LINES;
	else
		l->n++;
	snprintf(l->lines[slot], TUI_LOG_WIDTH, "%.10s %c %.280s", stamp, level_letter[level], flat);
	l->levels[slot] = (unsigned char)level;
	if (l->file)   /* a copy into its ring: the writer thread writes */
		util_log_ring_append(l->file, level, flat);
	pthread_mutex_unlock(&l->lock);
	atomic_fetch_add_explicit(&l->version, 1, memory_order_release);
}

void tui_log_sink(void *opaque, int level, const char *line)
{
	record(opaque, level, line);
}

void tui_log_add(tui_log *l, int level, const char *fmt, ...)
{
	char msg[TUI_LOG_WIDTH];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	record(l, level, msg);
}

int tui_log_count(tui_log *l)
{
	pthread_mutex_lock(&l->lock);
	int n = l->n;
	pthread_mutex_unlock(&l->lock);
	return n;
}

int tui_log_get(tui_log *l, int i, char *out, size_t cap)
{
	int level = -1;
	pthread_mutex_lock(&l->lock);
	if (i >= 0 && i < l->n) {
		int slot = (l->head + i) % TUI_LOG_LINES;
		snprintf(out, cap, "%s", l->lines[slot]);
		level = l->levels[slot];
	}
	pthread_mutex_unlock(&l->lock);
	return level;
}

unsigned tui_log_version(tui_log *l)
{
	return atomic_load_explicit(&l->version, memory_order_acquire);
}

void tui_log_replay(tui_log *l, FILE *f, int n)
{
	char line[TUI_LOG_WIDTH];
	int total = tui_log_count(l);
	for (int i = total > n ? total - n : 0; i < total; i++)
		if (tui_log_get(l, i, line, sizeof line) >= 0)
			fprintf(f, "colitop: %s\n", line);
}
