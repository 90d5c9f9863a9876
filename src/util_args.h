/* util_args.h - small parsing helpers shared by the cmd_*.c files. */
#ifndef COLI_UTIL_ARGS_H
#define COLI_UTIL_ARGS_H

#include "coli_err.h"

/* Parse "1,2,3" or "1 2 3" into a malloc'd array. */
int util_parse_ids(const char *s, int **ids, int *n, coli_err *err);
/* Strict integer / float parsing; 0 or -EINVAL with err naming `what`. */
int util_parse_int(const char *s, const char *what, long lo, long hi, long *out, coli_err *err);
int util_parse_float(const char *s, const char *what, double lo, double hi, double *out, coli_err *err);

#endif
