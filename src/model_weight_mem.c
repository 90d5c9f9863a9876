/* model_weight_mem.c - see model_weight_mem.h. */
#include "config.h"

#include "model_weight_mem.h"

#include <sys/mman.h>

void coli_weight_mem_advise(void *p, size_t n)
{
#ifdef MADV_HUGEPAGE
	/* EINVAL where THP is not built in: ordinary pages, same result */
	(void)madvise(p, n, MADV_HUGEPAGE);
#else
	(void)p;
	(void)n;
#endif
}

void *coli_weight_mem_alloc(size_t n)
{
	if (n == 0)
		return NULL;
	void *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	coli_weight_mem_advise(p, n);
	return p;
}

void coli_weight_mem_free(void *p, size_t n)
{
	if (p)
		munmap(p, n);
}
