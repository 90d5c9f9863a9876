/* grammar_ref.c - a compiled grammar as a shared object: its references
 * and the process's count of compilations (see grammar.h). A grammar is
 * immutable once compiled, so references are the only state that
 * changes after publication. */
#include "config.h"

#include <stdatomic.h>

#include "grammar_impl.h"

/* relaxed: a count for tests and statistics, ordering nothing */
static atomic_ulong compiles;

void grammar_note_compiled(void)
{
	atomic_fetch_add_explicit(&compiles, 1, memory_order_relaxed);
}

unsigned long grammar_compile_count(void)
{
	return atomic_load_explicit(&compiles, memory_order_relaxed);
}

coli_grammar *grammar_ref(coli_grammar *g)
{
	/* relaxed: the new owner already holds a reference that keeps g */
	if (g)
		atomic_fetch_add_explicit(&g->refs, 1, memory_order_relaxed);
	return g;
}

void grammar_free(coli_grammar *g)
{
	/* acq_rel: every owner's use happens before the last one frees */
	if (g && atomic_fetch_sub_explicit(&g->refs, 1, memory_order_acq_rel) == 1)
		grammar_destroy(g);
}
