/* util_err.c - see coli_err.h. */
#include "config.h"

#include "coli_err.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

int coli_err_set(coli_err *e, int code, const char *fmt, ...)
{
	if (code > 0)
		code = -code;
	if (code == 0)
		code = -EIO;
	if (e) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(e->msg, sizeof e->msg, fmt, ap);
		va_end(ap);
		e->code = code;
	}
	return code;
}

int coli_err_wrap(coli_err *e, const char *fmt, ...)
{
	if (!e)
		return -EIO;
	char prefix[256], old[sizeof e->msg];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(prefix, sizeof prefix, fmt, ap);
	va_end(ap);
	memcpy(old, e->msg, sizeof old);
	/* Truncation is acceptable: the message is one diagnostic line. */
	size_t n = strlen(prefix);
	if (n > sizeof e->msg - 3)
		n = sizeof e->msg - 3;
	memcpy(e->msg, prefix, n);
	memcpy(e->msg + n, ": ", 2);
	size_t room = sizeof e->msg - n - 3;
	size_t m = strnlen(old, room);
	memcpy(e->msg + n + 2, old, m);
	e->msg[n + 2 + m] = '\0';
	return e->code ? e->code : -EIO;
}

void coli_err_clear(coli_err *e)
{
	if (e) {
		e->code = 0;
		e->msg[0] = '\0';
	}
}
