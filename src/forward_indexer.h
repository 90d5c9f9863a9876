/* forward_indexer.h - the DSA lightning indexer inside attention (forward_indexer.c has
 * the definition and the design). Called by forward.c's attention() for
 * a layer that runs its own indexer, after its products (idx_q = wq_b qr,
 * idx_k = wk x, idx_w = weights_proj x for the chunk's rows). */
#ifndef COLI_INDEXER_H
#define COLI_INDEXER_H

#include "model.h"

/* Rope the index queries' rope part and scale the head weights. */
void indexer_queries(const coli_model *m, coli_state *s, int n);
/* Each row's index key (LayerNorm, rope) into its sequence's index keys
 * of layer l (coli_seq_index_keys). */
void indexer_keys(const coli_model *m, coli_state *s, const coli_layer_weights *w, int l, int n);
/* Each row's key selection (s->isel, s->isel_n; -1 = every key). Rows of
 * a sequence with spilled rows read their keys from s->old_ikv (read back
 * for layer l already). */
int indexer_select(const coli_model *m, coli_state *s, int l, int n);
/* The spilled rows (positions before base) the chunk's n rows attend
 * to, as runs (first, length) of consecutive positions: with every row
 * sparse (s->isel in force, isel_n >= 0) the union of their selections,
 * set in s->spill_runs (*runs points there); else every spilled row, the
 * one run *runs holds already ({0, base}). Returns the number of runs. */
int indexer_spill_runs(coli_state *s, int n, int base, int **runs);
/* Record the last row's kept / context counts for layer l (statistics). */
void indexer_note(const coli_model *m, coli_state *s, int l, int n);

#endif
