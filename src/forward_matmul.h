/* forward_matmul.h - every matrix product of the forward pass, in the
 * model's activation mode (f32, or int8 activations with --act-quant q8).
 * forward.c and forward_moe.c both call these, so neither depends on the
 * other for them. */
#ifndef COLI_FORWARD_MATMUL_H
#define COLI_FORWARD_MATMUL_H

#include "quant_kernels.h"
#include "quant_kernels_q8.h"
#include "model.h"

/* Y[n][rows] = X[n][cols] W^T over pool p (NULL: this thread), with q8
 * scratch scr when the model runs with int8 activations. */
void coli_model_product(const coli_model *m, coli_pool *p, const coli_qmat *w, const float *x, int n,
			float *y, coli_q8act *scr);

/* The same over the model's pool with the state's scratch (engine thread
 * only, not from inside pool tasks). */
void coli_model_matmul(const coli_model *m, coli_state *s, const coli_qmat *w, const float *x,
		       int n, float *y);

/* The products g[0..count) the same way, in one pool run where they fit
 * (coli_matmul_group): the same bits as one coli_model_matmul each. */
void coli_model_matmul_group(const coli_model *m, coli_state *s, const coli_mm *g, int count);

#endif
