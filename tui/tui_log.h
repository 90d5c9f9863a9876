/* tui_log.h - where diagnostics go while colitop owns the terminal: a
 * coli_log sink appending to CACHE_DIR/logs/colitop.log and to an
 * in-memory ring the Log pane shows. After the screen is released the last
 * lines are replayed on stderr.
 *
 * Threads: the sink runs on whichever thread logs (engine, HTTP, TUI) and
 * never waits for the disk: the pane's ring is guarded by a mutex held for
 * a copy, and the file is a util_log_ring whose own writer thread writes
 * it (a full ring drops lines and says how many, util_log_ring.h);
 * `version` (atomic) tells the TUI thread that something new arrived
 * without taking the lock. */
#ifndef COLI_TUI_LOG_H
#define COLI_TUI_LOG_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>

#include "util_log_ring.h"

#define TUI_LOG_LINES 1000
#define TUI_LOG_WIDTH 300

typedef struct tui_log {
	pthread_mutex_t lock;
	char (*lines)[TUI_LOG_WIDTH];   /* ring of TUI_LOG_LINES */
	unsigned char *levels;
	int head, n;                    /* oldest at head */
	util_log_ring *file;            /* NULL when the log file could not be opened */
	_Atomic unsigned version;
} tui_log;

/* path may be NULL (ring only). A file that cannot be opened is not an
 * error: the ring still works and a line in it says why. */
int tui_log_init(tui_log *l, const char *path);
/* Writes every line logged so far to the file, then stops its writer. */
void tui_log_free(tui_log *l);
/* Start appending to the file at path, beginning with the lines already in
 * the ring (colitop creates its log file only once the model is open).
 * Starts the file's writer thread. */
void tui_log_open_file(tui_log *l, const char *path);
/* A coli_log_sink (opaque = the tui_log). */
void tui_log_sink(void *opaque, int level, const char *line);
/* Log from the TUI itself (printf-style, always recorded). */
void tui_log_add(tui_log *l, int level, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
int tui_log_count(tui_log *l);
/* Line i (0 = oldest kept). Returns its level, or -1 when out of range. */
int tui_log_get(tui_log *l, int i, char *out, size_t cap);
unsigned tui_log_version(tui_log *l);
/* Write the last n lines to f (stderr after endwin). */
void tui_log_replay(tui_log *l, FILE *f, int n);

#endif
