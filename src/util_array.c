/* util_array.c - see util_array.h. */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "util_array.h"

/* MAX: the most elements the capacity's type may count. The array
 * pointer is read and written through memcpy because its type is the
 * caller's (an int *, a struct *), not void *. */
static int grow(void *pp, size_t *cap, size_t need, size_t elem, size_t min, size_t max)
{
	if (need <= *cap)
		return 0;
	size_t limit = SIZE_MAX / (elem ? elem : 1);
	if (limit > max)
		limit = max;
	if (need > limit)
		return -ENOMEM;
	size_t c = *cap ? *cap : min ? min : 1;
	while (c < need)
		c = c > limit / 2 ? need : c * 2;
	if (c > limit)
		c = need;   /* MIN itself past the limit */
	void *old, *p;
	memcpy(&old, pp, sizeof old);
	p = realloc(old, c * elem);
	if (!p)
		return -ENOMEM;
	memcpy(pp, &p, sizeof p);
	*cap = c;
	return 0;
}

int util_array_grow_size(void *pp, size_t *cap, size_t need, size_t elem, size_t min)
{
	return grow(pp, cap, need, elem, min, SIZE_MAX);
}

int util_array_grow_int(void *pp, int *cap, size_t need, size_t elem, size_t min)
{
	size_t c = *cap > 0 ? (size_t)*cap : 0;
	int rc = grow(pp, &c, need, elem, min, INT_MAX);
	if (!rc)
		*cap = (int)c;
	return rc;
}
