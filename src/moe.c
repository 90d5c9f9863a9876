/* moe.c - routing and routed/shared experts for a chunk of positions.
 *
 * The chunk's routed experts are unioned so each expert record is fetched
 * once per step however many positions chose it, and each expert runs one
 * small matmul over the positions routed to it. Every position sums its
 * experts' outputs in ascending expert order, so the result does not depend
 * on the chunk size, the thread count or where a record came from. */
#include "config.h"

#include <errno.h>
#include <float.h>
#include <math.h>
#include <string.h>

#include "forward_ops.h"
#include "moe.h"
#include "state.h"

/* Index of the largest value among n not yet taken; ties -> lowest index. */
static int argmax_untaken(const float *v, const unsigned char *taken, int n)
{
	int best = -1;
	for (int i = 0; i < n; i++)
		if (!taken[i] && (best < 0 || v[i] > v[best]))
			best = i;
	return best;
}

void moe_route(const coli_config *c, const float *logits, const float *bias, int *sel,
	       float *weights, float *tmp)
{
	const int E = c->n_routed_experts, K = c->num_experts_per_tok;
	float *score = tmp, *choice = tmp + E;
	unsigned char taken[1024];
	for (int e = 0; e < E; e++) {
		score[e] = 1.0f / (1.0f + expf(-logits[e]));
		choice[e] = score[e] + (bias ? bias[e] : 0.0f);
	}
	if (c->n_group > 1 && c->topk_group < c->n_group) {
		const int G = c->n_group, per = E / G;
		float gscore[64];
		unsigned char gtaken[64] = { 0 };
		for (int g = 0; g < G; g++) {
			float b1 = -FLT_MAX, b2 = -FLT_MAX;
			for (int i = 0; i < per; i++) {
				float v = choice[g * per + i];
				if (v > b1) {
					b2 = b1;
					b1 = v;
				} else if (v > b2) {
					b2 = v;
				}
			}
			gscore[g] = per > 1 ? b1 + b2 : b1;
		}
		for (int k = 0; k < c->topk_group; k++) {
			int g = argmax_untaken(gscore, gtaken, G);
			gtaken[g] = 1;
		}
		for (int g = 0; g < G; g++)
			if (!gtaken[g])
				for (int i = 0; i < per; i++)
					choice[g * per + i] = -FLT_MAX;
	}
	memset(taken, 0, (size_t)E);
	double sum = 0.0;
	for (int k = 0; k < K; k++) {
		int e = argmax_untaken(choice, taken, E);
		taken[e] = 1;
		sum += score[e];
	}
	/* emit in ascending expert order */
	int k = 0;
	for (int e = 0; e < E && k < K; e++) {
		if (!taken[e])
			continue;
		float wgt = score[e];
		if (c->norm_topk_prob)
			wgt = (float)(wgt / (sum + 1e-20));
		sel[k] = e;
		weights[k] = wgt * c->routed_scaling_factor;
		k++;
	}
}

/* Guess the next MoE layer's experts for the last position by applying its
 * norm and router to the current residual stream, and start reading them.
 * Called by moe_forward once this layer's own reads are queued (so they go
 * first), and by forward.c after a dense layer's attention, so the first
 * MoE layer's reads overlap the dense FFN. */
void moe_prefetch_next(coli_model *m, coli_state *s, int layer, int n)
{
	const coli_config *c = &m->cfg;
	int next = layer + 1;
	if (next >= c->num_hidden_layers || !m->layers[next].is_moe || n != 1)
		return;
	const coli_layer_weights *w = &m->layers[next];
	const int H = c->hidden_size;
	fwd_rmsnorm(s->logits_h, s->x, w->ffn_norm, H, c->rms_norm_eps);
	coli_model_matmul(m, s, &w->router, s->logits_h, 1, s->pred_scores);
	moe_route(c, s->pred_scores, w->router_bias, s->predict, s->pred_w, s->route_tmp);
	expert_store_prefetch(m->store, next, s->predict, c->num_experts_per_tok);
}

/* Run one expert (its three matrices) on the positions that chose it. */
static void moe_run_expert(coli_model *m, coli_state *s, const coli_qmat *gate, const coli_qmat *up,
			   const coli_qmat *down, int expert, int n)
{
	const coli_config *c = &m->cfg;
	const int H = c->hidden_size, K = c->num_experts_per_tok, I = c->moe_intermediate_size;
	int ne = 0;
	for (int slot = 0; slot < n * K; slot++) {
		if (s->sel[slot] != expert)
			continue;
		s->tok_slot[ne] = slot;
		memcpy(s->exp_in + (size_t)ne * H, s->xn + (size_t)(slot / K) * H, sizeof(float) * H);
		ne++;
	}
	coli_model_matmul(m, s, gate, s->exp_in, ne, s->exp_a);
	coli_model_matmul(m, s, up, s->exp_in, ne, s->exp_b);
	for (int i = 0; i < ne; i++)
		fwd_swiglu(s->exp_a + (size_t)i * I, s->exp_b + (size_t)i * I, I);
	coli_model_matmul(m, s, down, s->exp_a, ne, s->exp_out);
	for (int i = 0; i < ne; i++)
		memcpy(s->moe_out + (size_t)s->tok_slot[i] * H, s->exp_out + (size_t)i * H,
		       sizeof(float) * H);
}

int moe_forward(coli_model *m, coli_state *s, int layer, int n, coli_err *err)
{
	const coli_config *c = &m->cfg;
	const coli_layer_weights *w = &m->layers[layer];
	const int H = c->hidden_size, K = c->num_experts_per_tok, E = c->n_routed_experts;
	int rc = 0;

	coli_model_matmul(m, s, &w->router, s->xn, n, s->router_logits);
	for (int b = 0; b < n; b++) {
		moe_route(c, s->router_logits + (size_t)b * E, w->router_bias, s->sel + (size_t)b * K,
			  s->sel_w + (size_t)b * K, s->route_tmp);
		if (!w->res_experts)
			expert_store_note_routing(m->store, layer, s->sel + (size_t)b * K,
						  s->sel_w + (size_t)b * K, K);
	}
	memcpy(s->routing.experts + (size_t)layer * K, s->sel + (size_t)(n - 1) * K, sizeof(int) * K);
	memcpy(s->routing.weights + (size_t)layer * K, s->sel_w + (size_t)(n - 1) * K, sizeof(float) * K);

	/* union of the chunk's experts, ascending */
	int nu = 0;
	for (int e = 0; e < E; e++)
		for (int slot = 0; slot < n * K; slot++)
			if (s->sel[slot] == e) {
				s->union_experts[nu++] = e;
				break;
			}

	if (w->res_experts) {
		/* resident experts (the MTP layer): no store involved */
		for (int i = 0; i < nu; i++) {
			const coli_qmat *x = w->res_experts + (size_t)s->union_experts[i] * 3;
			moe_run_expert(m, s, &x[0], &x[1], &x[2], s->union_experts[i], n);
		}
		goto shared;
	}
	/* Per group: queue its missing reads (ahead of the next layer's
	 * prefetch), then take the records one at a time, landed ones first,
	 * and run each while the others are still being read. An expert
	 * writes only its own positions' moe_out rows and the sum below is
	 * in routing order, so the running order changes no bit of x. */
	int group = expert_store_max_batch(m->store);
	if (group < 1)
		group = 1;
	for (int g = 0; g < nu && !rc; g += group) {
		int gn = nu - g < group ? nu - g : group;
		int *ue = s->union_experts + g;
		expert_store_request(m->store, layer, ue, gn);
		if (g == 0)
			moe_prefetch_next(m, s, layer, n);
		for (int done = 0; done < gn && !rc; done++) {
			int pick = done;
			for (int i = done; i < gn; i++)
				if (expert_store_ready(m->store, layer, ue[i])) {
					pick = i;
					break;
				}
			int e = ue[pick];
			ue[pick] = ue[done];
			ue[done] = e;
			rc = expert_store_acquire(m->store, layer, &e, 1, s->recs, err);
			if (rc)
				break;
			const void *rec = s->recs[0];
			coli_qmat gate = coli_container_expert_part(m->container, rec, COLI_EXPERT_GATE);
			coli_qmat up = coli_container_expert_part(m->container, rec, COLI_EXPERT_UP);
			coli_qmat down = coli_container_expert_part(m->container, rec, COLI_EXPERT_DOWN);
			moe_run_expert(m, s, &gate, &up, &down, e, n);
		}
		expert_store_release(m->store, layer);
	}
	if (rc)
		return rc;
shared:
	if (w->has_shared) {
		const int Is = c->moe_intermediate_size * c->n_shared_experts;
		coli_model_matmul(m, s, &w->sh_gate, s->xn, n, s->ffn_a);
		coli_model_matmul(m, s, &w->sh_up, s->xn, n, s->ffn_b);
		for (int b = 0; b < n; b++)
			fwd_swiglu(s->ffn_a + (size_t)b * Is, s->ffn_b + (size_t)b * Is, Is);
		coli_model_matmul(m, s, &w->sh_down, s->ffn_a, n, s->ffn_out);
	} else {
		memset(s->ffn_out, 0, sizeof(float) * (size_t)n * H);
	}
	for (int b = 0; b < n; b++) {
		float *x = s->x + (size_t)b * H;
		const float *sh = s->ffn_out + (size_t)b * H;
		const float *wk = s->sel_w + (size_t)b * K;
		const float *out = s->moe_out + (size_t)b * K * H;
		for (int i = 0; i < H; i++) {
			float acc = 0.0f;
			for (int k = 0; k < K; k++)
				acc += wk[k] * out[(size_t)k * H + i];
			x[i] += acc + sh[i];
		}
	}
	return 0;
}
