/* util_array.h - growing a malloc'd array by doubling, written once for
 * the whole tree (the byte string is util_buf).
 *
 *   if (util_array_grow(&v, &cap, n + 1, 16))
 *           return -ENOMEM;
 *   v[n++] = x;
 *
 * makes room for NEED elements at *P: when *CAP is below NEED the
 * capacity doubles, from *CAP or from MIN when *CAP is 0, until it holds
 * NEED (the sequence MIN, 2 MIN, 4 MIN, ... of the loops it replaces),
 * and the block is realloc'd. The element size is taken from the pointer
 * (sizeof **P), so it cannot disagree with the array; CAP is a size_t or
 * an int (an int capacity never passes INT_MAX). 0, or -ENOMEM when the
 * allocation fails or NEED elements cannot be represented (NEED * size
 * over SIZE_MAX, NEED over INT_MAX for an int capacity): then *P and
 * *CAP are as they were and the old block stays the caller's. Not for
 * the engine thread's per-token path, which allocates nothing. */
#ifndef COLI_UTIL_ARRAY_H
#define COLI_UTIL_ARRAY_H

#include <stddef.h>

#define util_array_grow(p, cap, need, min)                                          \
	_Generic((cap), size_t *: util_array_grow_size, int *: util_array_grow_int)(   \
		(p), (cap), (need), sizeof **(p), (min))

/* What util_array_grow calls: PP is the address of the array pointer
 * (any object pointer type), ELEM the size of one element. */
int util_array_grow_size(void *pp, size_t *cap, size_t need, size_t elem, size_t min);
int util_array_grow_int(void *pp, int *cap, size_t need, size_t elem, size_t min);

#endif
