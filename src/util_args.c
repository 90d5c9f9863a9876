/* util_args.c - see util_args.h. */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "util_args.h"
#include "util_array.h"

int util_parse_ids(const char *s, int **ids, int *n, coli_err *err)
{
	size_t cap = 16, len = 0;
	int *v = malloc(cap * sizeof *v);
	if (!v)
		return coli_err_set(err, -ENOMEM, "out of memory");
	const char *p = s;
	for (;;) {
		while (*p == ' ' || *p == ',' || *p == '\t' || *p == '\n')
			p++;
		if (!*p)
			break;
		char *end;
		errno = 0;
		long x = strtol(p, &end, 10);
		if (end == p || errno || x < 0 || x > 0x7fffffff) {
			free(v);
			return coli_err_set(err, -EINVAL, "bad token id near '%.20s'", p);
		}
		if (util_array_grow(&v, &cap, len + 1, 16)) {
			free(v);
			return coli_err_set(err, -ENOMEM, "out of memory");
		}
		v[len++] = (int)x;
		p = end;
		if (*p && *p != ' ' && *p != ',' && *p != '\t' && *p != '\n') {
			free(v);
			return coli_err_set(err, -EINVAL, "bad token id near '%.20s'", p);
		}
	}
	if (len == 0) {
		free(v);
		return coli_err_set(err, -EINVAL, "no token ids given");
	}
	*ids = v;
	*n = (int)len;
	return 0;
}

int util_parse_int(const char *s, const char *what, long lo, long hi, long *out, coli_err *err)
{
	char *end;
	errno = 0;
	long v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < lo || v > hi)
		return coli_err_set(err, -EINVAL, "%s: expected an integer in %ld..%ld, got '%s'", what, lo, hi, s);
	*out = v;
	return 0;
}

int util_parse_float(const char *s, const char *what, double lo, double hi, double *out, coli_err *err)
{
	char *end;
	errno = 0;
	double v = strtod(s, &end);
	if (errno || end == s || *end || !isfinite(v) || v < lo || v > hi)
		return coli_err_set(err, -EINVAL, "%s: expected a number in %g..%g, got '%s'", what, lo, hi, s);
	*out = v;
	return 0;
}
