/* forward_matmul.c - see forward_matmul.h. */
#include "config.h"

#include "forward_matmul.h"
#include "forward_state.h"

void coli_model_product(const coli_model *m, coli_pool *p, const coli_qmat *w, const float *x, int n,
			float *y, coli_q8act *scr)
{
	if (m->act_quant == COLI_ACT_Q8)
		coli_matmul_q8(p, w, x, n, y, scr);
	else
		coli_matmul(p, w, x, n, y);
}

void coli_model_matmul(const coli_model *m, coli_state *s, const coli_qmat *w, const float *x,
		       int n, float *y)
{
	coli_model_product(m, m->pool, w, x, n, y, &s->q8act);
}

void coli_model_matmul_group(const coli_model *m, coli_state *s, const coli_mm *g, int count)
{
	if (m->act_quant == COLI_ACT_Q8)
		coli_matmul_q8_group(m->pool, g, count, &s->q8act);
	else
		coli_matmul_group(m->pool, g, count);
}
