/* forward_attn.h - MLA attention of one layer (forward_attn.c), for the layer
 * driver in forward.c. */
#ifndef COLI_FORWARD_ATTN_H
#define COLI_FORWARD_ATTN_H

#include "coli_err.h"
#include "forward_state.h"

/* Attention of layer l for the chunk's n rows (s->row_seq / s->row_pos):
 * normalizes the residual stream s->x into s->xn, writes the rows' latents
 * into their sequences' caches and adds the output projection into s->x. */
int forward_attention(const coli_model *m, coli_state *s, int l, int n, coli_err *err);

#endif
