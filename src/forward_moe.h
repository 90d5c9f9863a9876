/* forward_moe.h - routed-expert layers: routing and expert evaluation. */
#ifndef COLI_MOE_H
#define COLI_MOE_H

#include "model.h"

/* Choose experts for one position from router logits (E values).
 * sigmoid scores; selection on scores + bias; with n_group > 1 only the
 * topk_group groups with the largest sum of their two best biased scores
 * are eligible (experts of dropped groups are never chosen, as in
 * DeepSeek's inference code; transformers fills them with 0 instead, which
 * differs only when a kept expert's biased score is negative); weights are
 * the unbiased scores, normalized when norm_topk_prob, times
 * routed_scaling_factor. Output sorted by expert id. tmp: 3*E floats,
 * taken: 2*E bytes (scratch: no limit on E or n_group). */
void moe_route(const coli_config *c, const float *logits, const float *bias, int *sel,
	       float *weights, float *tmp, unsigned char *taken);

/* Start reading the experts that layer+1 (if MoE) will likely route the
 * last position to, predicted from the residual stream s->x now; only for
 * n == 1 (decode). */
void moe_prefetch_next(coli_model *m, coli_state *s, int layer, int n);

/* The MoE block for a chunk of n positions: reads s->xn, adds into s->x. */
int moe_forward(coli_model *m, coli_state *s, int layer, int n, coli_err *err);

#endif
