/* model_weight_mem.h - memory for model weights: anonymous mappings backed by
 * transparent huge pages where the kernel allows.
 *
 * A decode step streams every resident weight once (~800 MB a token on a
 * GLM-5 slice). With 4 KiB pages that is a TLB miss every 4 KiB; on this
 * project's reference machine (THP "madvise" mode) the same int4 matvecs
 * stream 15-20% faster from 2 MiB pages (bench/README.md, "huge pages").
 * The advice is best effort: where THP is off or the kernel lacks it the
 * memory is ordinary pages and nothing else changes. */
#ifndef COLI_WEIGHT_MEM_H
#define COLI_WEIGHT_MEM_H

#include <stddef.h>

/* n bytes (n > 0) of zeroed, page-aligned memory advised for huge pages;
 * NULL when the mapping fails. Release with coli_weight_mem_free(p, n). */
void *coli_weight_mem_alloc(size_t n);
void coli_weight_mem_free(void *p, size_t n);

/* Advise an existing mapping [p, p + n) for huge pages (best effort). */
void coli_weight_mem_advise(void *p, size_t n);

#endif
