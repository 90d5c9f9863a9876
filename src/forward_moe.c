/* forward_moe.c - routing and routed/shared experts for a chunk of positions.
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

#include "forward_matmul.h"
#include "forward_ops.h"
#include "forward_moe.h"
#include "forward_state.h"

/* Index of the largest value among n not yet taken; ties -> lowest index. */
static int argmax_untaken(const float *v, const unsigned char *taken, int n)
{
	int best = -1;
	for (int i = 0; i < n; i++)
		if (!taken[i] && (best < 0 || v[i] > v[best]))
			best = i;
	return best;
}

/* Choose experts for one position from router logits (E values).
 * sigmoid scores; selection on scores + bias; with n_group > 1 only the
 * topk_group groups with the largest sum of their two best biased scores
 * are eligible (experts of dropped groups are never chosen, as in
 * DeepSeek's inference code; transformers fills them with 0 instead, which
 * differs only when a kept expert's biased score is negative); weights are
 * the unbiased scores, normalized when norm_topk_prob, times
 * routed_scaling_factor. Output sorted by expert id. tmp: 3*E floats,
 * taken: 2*E bytes (scratch: no limit on E or n_group). */
static void moe_route(const coli_config *c, const float *logits, const float *bias, int *sel,
		      float *weights, float *tmp, unsigned char *taken)
{
	const int E = c->n_routed_experts, K = c->num_experts_per_tok;
	float *score = tmp, *choice = tmp + E;
	for (int e = 0; e < E; e++) {
		score[e] = 1.0f / (1.0f + expf(-logits[e]));
		choice[e] = score[e] + (bias ? bias[e] : 0.0f);
	}
	if (c->n_group > 1 && c->topk_group < c->n_group) {
		const int G = c->n_group, per = E / G; /* G <= E (config check) */
		float *gscore = tmp + 2 * E;
		unsigned char *gtaken = taken + E;
		memset(gtaken, 0, (size_t)G);
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
	const double t0 = coli_cpu_s();
	fwd_rmsnorm(s->logits_h, s->x, w->ffn_norm, H, c->rms_norm_eps);
	coli_model_matmul(m, s, &w->router, s->logits_h, 1, s->pred_scores);
	moe_route(c, s->pred_scores, w->router_bias, s->predict, s->pred_w, s->route_tmp, s->route_taken);
	const double t1 = coli_cpu_s();
	s->timing.part[COLI_PART_ROUTER] += t1 - t0;
	/* queueing the reads (a page-cached read may be copied right here) */
	expert_store_prefetch(m->store, next, s->predict, c->num_experts_per_tok);
	s->timing.part[COLI_PART_EXPERTS] += coli_cpu_s() - t1;
}

/* Experts of one batch: the matrices of each, in batch order. */
#define MOE_BATCH (COLI_GROUP_SEGS / 2 - 1) /* two products each, and the shared expert's */
struct moe_batch {
	int count;
	int experts[MOE_BATCH];
	coli_qmat mats[MOE_BATCH][3]; /* gate, up, down */
};

/* Whether a batch of k experts and rows rows takes one more of more rows:
 * a batch holds MOE_BATCH experts, and their rows must fit the state's
 * max_batch-row buffers unless it is the first (one expert's rows always
 * fit: at most every position chose it). */
static int batch_takes(const coli_state *s, int k, int rows, int more)
{
	return k < MOE_BATCH && (k == 0 || rows + more <= s->max_batch);
}

/* Rows of the chunk that chose `expert` (slots into tok_slot, from off). */
static int moe_gather(coli_state *s, int expert, int n, int K, int off)
{
	int ne = 0;
	for (int slot = 0; slot < n * K; slot++)
		if (s->sel[slot] == expert)
			s->tok_slot[off + ne++] = slot;
	return ne;
}

/* Run a batch of experts on the positions that chose them, and the shared
 * expert with it when `shared`: the gate and up products of all in one
 * pool run, then the down products in another (two waits for the batch
 * instead of three per expert). Expert j's rows are [off_j, off_j + ne_j)
 * of exp_in/exp_a/exp_b/exp_out; an expert that every position of the
 * chunk chose (every expert at decode) reads xn in place, so the batch's
 * inputs are summed or quantized once. Each product gives its own bits
 * (coli_matmul_group), so batching changes nothing in the result. */
static void moe_run_batch(coli_model *m, coli_state *s, const struct moe_batch *bt, int n,
			  const coli_layer_weights *shared)
{
	const coli_config *c = &m->cfg;
	const int H = c->hidden_size, K = c->num_experts_per_tok, I = c->moe_intermediate_size;
	coli_mm up[COLI_GROUP_SEGS], down[COLI_GROUP_SEGS / 2 + 1];
	int ne[MOE_BATCH], off = 0, nu = 0, nd = 0;
	for (int j = 0; j < bt->count; j++) {
		ne[j] = moe_gather(s, bt->experts[j], n, K, off);
		const float *x = s->xn;
		if (ne[j] != n) {
			for (int i = 0; i < ne[j]; i++)
				memcpy(s->exp_in + (size_t)(off + i) * H,
				       s->xn + (size_t)(s->tok_slot[off + i] / K) * H, sizeof(float) * H);
			x = s->exp_in + (size_t)off * H;
		}
		float *a = s->exp_a + (size_t)off * I, *b = s->exp_b + (size_t)off * I;
		up[nu++] = (coli_mm){ &bt->mats[j][0], x, a, ne[j] };
		up[nu++] = (coli_mm){ &bt->mats[j][1], x, b, ne[j] };
		down[nd++] = (coli_mm){ &bt->mats[j][2], a, s->exp_out + (size_t)off * H, ne[j] };
		off += ne[j];
	}
	const int Is = c->moe_intermediate_size * c->n_shared_experts;
	if (shared) {
		up[nu++] = (coli_mm){ &shared->sh_gate, s->xn, s->ffn_a, n };
		up[nu++] = (coli_mm){ &shared->sh_up, s->xn, s->ffn_b, n };
	}
	coli_model_matmul_group(m, s, up, nu);
	for (int i = 0; i < off; i++)
		fwd_swiglu(s->exp_a + (size_t)i * I, s->exp_b + (size_t)i * I, I);
	if (shared) {
		for (int b = 0; b < n; b++)
			fwd_swiglu(s->ffn_a + (size_t)b * Is, s->ffn_b + (size_t)b * Is, Is);
		down[nd++] = (coli_mm){ &shared->sh_down, s->ffn_a, s->ffn_out, n };
	}
	coli_model_matmul_group(m, s, down, nd);
	for (int i = 0; i < off; i++)
		memcpy(s->moe_out + (size_t)s->tok_slot[i] * H, s->exp_out + (size_t)i * H, sizeof(float) * H);
}

/* A step wider than one store group (many sequences): order the union so
 * that each group mixes records to read with records already in RAM, in
 * the proportion of the whole layer. The group's reads are queued first,
 * its resident records computed while they land, so the drive and the
 * cores work at the same time instead of in turns. The sum over a row's
 * experts is in routing order whatever the order here. tmp: nu ints. */
static void moe_interleave(expert_store *st, int layer, int *ue, int nu, int *tmp)
{
	int *res = tmp, *out = tmp + nu, nr = 0, nm = 0;
	for (int i = 0; i < nu; i++) {
		if (expert_store_ready(st, layer, ue[i]))
			res[nr++] = ue[i];
		else
			ue[nm++] = ue[i];
	}
	/* misses are ue[0..nm), resident ones res: merge them so that after
	 * k entries about k * nm / nu are misses */
	for (int k = 0, im = 0, ir = 0; k < nu; k++) {
		const int want_m = (int)(((long long)(k + 1) * nm + nu - 1) / nu);
		out[k] = (im < want_m || ir == nr) ? ue[im++] : res[ir++];
	}
	memcpy(ue, out, sizeof(int) * (size_t)nu);
}

int moe_forward(coli_model *m, coli_state *s, int layer, int n, coli_err *err)
{
	const coli_config *c = &m->cfg;
	const coli_layer_weights *w = &m->layers[layer];
	const int H = c->hidden_size, K = c->num_experts_per_tok, E = c->n_routed_experts;
	int rc = 0;

	const double t0 = coli_cpu_s();
	coli_model_matmul(m, s, &w->router, s->xn, n, s->router_logits);
	for (int b = 0; b < n; b++) {
		moe_route(c, s->router_logits + (size_t)b * E, w->router_bias, s->sel + (size_t)b * K,
			  s->sel_w + (size_t)b * K, s->route_tmp, s->route_taken);
		if (!w->res_experts)
			expert_store_note_routing(m->store, layer, s->sel + (size_t)b * K,
						  s->sel_w + (size_t)b * K, K);
	}
	memcpy(s->routing.experts + (size_t)layer * K, s->sel + (size_t)(n - 1) * K, sizeof(int) * K);
	memcpy(s->routing.weights + (size_t)layer * K, s->sel_w + (size_t)(n - 1) * K, sizeof(float) * K);
	s->timing.part[COLI_PART_ROUTER] += coli_cpu_s() - t0;

	/* rows each expert takes (a batch's rows must fit the buffers), and
	 * the union of the chunk's experts, ascending */
	int *rows_of = s->expert_rows;
	memset(rows_of, 0, sizeof(int) * (size_t)E);
	for (int slot = 0; slot < n * K; slot++)
		rows_of[s->sel[slot]]++;
	int nu = 0;
	for (int e = 0; e < E; e++)
		if (rows_of[e])
			s->union_experts[nu++] = e;
	if (!w->res_experts)
		expert_store_note_rows(m->store, layer, s->union_experts, rows_of, nu);
	const coli_layer_weights *shared = w->has_shared ? w : NULL;
	struct moe_batch bt;
	if (w->res_experts) {
		/* resident experts (the MTP layer): no store involved */
		for (int i = 0; i < nu;) {
			int rows = 0;
			bt.count = 0;
			while (i < nu && batch_takes(s, bt.count, rows, rows_of[s->union_experts[i]])) {
				const int e = s->union_experts[i++];
				const coli_qmat *x = w->res_experts + (size_t)e * 3;
				rows += rows_of[e];
				bt.experts[bt.count] = e;
				memcpy(bt.mats[bt.count++], x, sizeof(coli_qmat) * 3);
			}
			moe_run_batch(m, s, &bt, n, shared);
			shared = NULL;
		}
		goto combine;
	}
	/* Per store group: queue its missing reads (ahead of the next layer's
	 * prefetch), then run the records in batches of those that have
	 * landed, each while the others are still being read. While nothing
	 * has landed yet the shared expert runs alone (its weights are
	 * resident), so its compute hides under the first reads. An expert
	 * writes only its own positions' moe_out rows and the sum below is in
	 * routing order, so neither the batches nor their order change a bit
	 * of x. */
	int group = expert_store_max_batch(m->store);
	if (group < 1)
		group = 1;
	if (nu > group)
		moe_interleave(m->store, layer, s->union_experts, nu, s->union_tmp);
	for (int g = 0; g < nu && !rc; g += group) {
		int gn = nu - g < group ? nu - g : group;
		int *ue = s->union_experts + g;
		expert_store_request(m->store, layer, ue, gn);
		if (g == 0)
			moe_prefetch_next(m, s, layer, n);
		for (int done = 0; done < gn && !rc;) {
			int k = 0, rows = 0;
			for (int i = done; i < gn && k < MOE_BATCH; i++) {
				const int e = ue[i];
				if (!expert_store_ready(m->store, layer, e) || !batch_takes(s, k, rows, rows_of[e]))
					continue;
				ue[i] = ue[done + k];
				ue[done + k++] = e;
				rows += rows_of[e];
			}
			if (k == 0 && shared) {
				bt.count = 0;
				moe_run_batch(m, s, &bt, n, shared);
				shared = NULL;
				continue;
			}
			if (k == 0)
				k = 1; /* wait for the next record */
			rc = expert_store_acquire(m->store, layer, ue + done, k, s->recs, err);
			if (rc)
				break;
			bt.count = k;
			for (int j = 0; j < k; j++) {
				bt.experts[j] = ue[done + j];
				bt.mats[j][0] = coli_container_expert_part(m->container, s->recs[j], COLI_EXPERT_GATE);
				bt.mats[j][1] = coli_container_expert_part(m->container, s->recs[j], COLI_EXPERT_UP);
				bt.mats[j][2] = coli_container_expert_part(m->container, s->recs[j], COLI_EXPERT_DOWN);
			}
			moe_run_batch(m, s, &bt, n, shared);
			shared = NULL;
			done += k;
		}
		expert_store_release(m->store, layer);
	}
	if (rc)
		return rc;
combine:
	if (shared) {
		bt.count = 0;
		moe_run_batch(m, s, &bt, n, shared);
	} else if (!w->has_shared) {
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
