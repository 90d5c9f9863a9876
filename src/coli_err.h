/* coli_err.h - error values carried back to the edge (CLI, HTTP, TUI).
 *
 * Convention: functions return 0 on success or a negative errno-style code,
 * and fill an optional `coli_err *` with one human-readable line naming the
 * file/flag/tensor at fault. Only the edge prints it, once. */
#ifndef COLI_ERR_H
#define COLI_ERR_H

#include <stddef.h>

typedef struct coli_err {
	int code;       /* negative errno-style code, 0 when clear */
	char msg[512];  /* one line, no trailing newline */
} coli_err;

/* Record an error (if `e` is not NULL) and return -abs(code) (or -EIO if
 * code is 0) so callers can write `return coli_err_set(e, -EINVAL, ...)`. */
int coli_err_set(coli_err *e, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Prefix an existing message with context: "ctx: old message". */
int coli_err_wrap(coli_err *e, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

void coli_err_clear(coli_err *e);

#endif
