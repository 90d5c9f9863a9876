/* forward_moe.h - routed-expert layers: routing and expert evaluation. */
#ifndef COLI_MOE_H
#define COLI_MOE_H

#include "model.h"


/* Start reading the experts that layer+1 (if MoE) will likely route the
 * last position to, predicted from the residual stream s->x now; only for
 * n == 1 (decode). */
void moe_prefetch_next(coli_model *m, coli_state *s, int layer, int n);

/* The MoE block for a chunk of n positions: reads s->xn, adds into s->x. */
int moe_forward(coli_model *m, coli_state *s, int layer, int n, coli_err *err);

#endif
