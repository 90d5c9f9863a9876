/* coli_log.h - diagnostics for the engine and server.
 *
 * The sink is chosen once by main(): stderr for `coli`, a log file plus an
 * in-memory ring for `colitop` (which must never write to the terminal it
 * owns), the --log-file (or a stderr ring) of `coli serve`. This sink is the one piece of
 * process-wide state besides the statistics block. Thread-safe.
 *
 * Any thread logs, the engine's included, so logging never waits for I/O:
 * the level is checked before the message is formatted, and a sink that
 * writes a file only appends to a util_log_ring (util_log_ring.h) whose
 * own writer thread does the writing. A sink runs under the logging lock
 * (coli_log_set_sink returning means nobody is still in the old one), so
 * it must not block. */
#ifndef COLI_LOG_H
#define COLI_LOG_H

enum coli_log_level { COLI_LOG_DEBUG = 0, COLI_LOG_INFO, COLI_LOG_WARN, COLI_LOG_ERROR };

typedef void (*coli_log_sink)(void *opaque, int level, const char *line);

/* Replace the sink (NULL restores stderr). Minimum level printed. */
void coli_log_set_sink(coli_log_sink sink, void *opaque);
void coli_log_set_level(int min_level);

void coli_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define coli_debug(...) coli_log(COLI_LOG_DEBUG, __VA_ARGS__)
#define coli_info(...) coli_log(COLI_LOG_INFO, __VA_ARGS__)
#define coli_warn(...) coli_log(COLI_LOG_WARN, __VA_ARGS__)
#define coli_error(...) coli_log(COLI_LOG_ERROR, __VA_ARGS__)

#endif
