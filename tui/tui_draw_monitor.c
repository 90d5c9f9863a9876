/* tui_draw_monitor.c - the Routing pane (experts chosen for the latest
 * token per MoE layer, gate-weight bars, the shared expert, and for DSA
 * models the keys the indexer kept out of the context) and the Expert
 * map (layers x experts, folded to the width; colour = tier, brightness =
 * heat, reverse = routed in the current turn; columns in id order, the
 * recorded history's clusters or the live co-activation order). The
 * Expert map's conversation view is tui_draw_atlas.c's. */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "tui_app.h"
#include "tui_text.h"
#include "tui_theme.h"

static int digits(int n)
{
	int d = 1;
	while (n >= 10) {
		n /= 10;
		d++;
	}
	return d;
}

static void no_data(tui_app *a, WINDOW *w, const char *why)
{
	tui_draw_text(a, w, 1, 2, getmaxx(w) - 4, why, tui_attr(TUI_R_DIM));
}

void tui_draw_routing(tui_app *a, WINDOW *w)
{
	int h = getmaxy(w), wd = getmaxx(w);
	char extra[64] = "";
	int n_moe = a->n_layers - a->first_moe;
	if (a->xs)
		snprintf(extra, sizeof extra, "token %llu", (unsigned long long)a->sum.tokens);
	tui_draw_box(a, w, TUI_PANE_ROUTING, extra);
	if (!a->xs || n_moe <= 0)
	{
		no_data(a, w, "n/a (no routed experts)");
		return;
	}
	if (!a->sum.tokens)
	{
		no_data(a, w, "no token routed yet");
		return;
	}
	int rows = h - 2, inner = wd - 2;
	tui_clamp_scroll(&a->routing_scroll, n_moe, rows);
	const int dg = digits(a->n_experts - 1), lg = digits(a->n_layers - 1);
	char buf[1024], bar[256];
	for (int y = 0; y < rows && a->first_moe + a->routing_scroll + y < a->n_layers; y++) {
		int l = a->first_moe + a->routing_scroll + y;
		const expert_stats_layer *L = &a->layers[l];
		snprintf(buf, sizeof buf, "L%0*d%s", lg & 7, l, a->has_shared ? " S" : "  ");
		tui_draw_text(a, w, 1 + y, 1, inner, buf, tui_attr(TUI_R_TITLE));
		int x = 1 + lg + 4;
		/* DSA models: keys the indexer kept for the latest row out of
		 * its context, right-aligned (kept == context up to index_topk) */
		int right = wd - 1;
		if (L->index_context > 0) {
			char kb[32];
			int kl = snprintf(kb, sizeof kb, " %d/%d", L->index_kept, L->index_context);
			if (kl < inner / 3) {
				right -= kl;
				tui_draw_text(a, w, 1 + y, right, kl, kb, tui_attr(TUI_R_DIM));
			}
		}
		if (L->n <= 0)
			continue;
		/* experts by descending gate weight; bars relative to the largest
		 * weight of the layer, the share of the layer's weight as a number
		 * when there is room */
		int idx[EXPERT_STATS_MAX_TOPK];
		float sum = 0, mx = 0;
		for (int i = 0; i < L->n; i++) {
			idx[i] = i;
			sum += L->weights[i];
			if (L->weights[i] > mx)
				mx = L->weights[i];
		}
		for (int i = 1; i < L->n; i++)
			for (int j = i; j > 0 && L->weights[idx[j]] > L->weights[idx[j - 1]]; j--) {
				int t = idx[j];
				idx[j] = idx[j - 1];
				idx[j - 1] = t;
			}
		int room = right - 1 - (x - 1);
		int per = room / L->n;               /* columns per expert */
		int bw = per - dg - 2;
		if (bw < 1) {
			/* too narrow for bars: ids only */
			for (int i = 0; i < L->n && x + dg < right; i++) {
				snprintf(buf, sizeof buf, "%*d", dg, L->experts[idx[i]]);
				tui_draw_text(a, w, 1 + y, x, right - x, buf, A_NORMAL);
				x += dg + 1;
			}
			continue;
		}
		int pct = bw >= 7;   /* "nn%" after a bar of at least 3 cells */
		if (pct)
			bw -= 4;
		if (bw > 12)
			bw = 12;
		for (int i = 0; i < L->n; i++) {
			int k = idx[i];
			snprintf(buf, sizeof buf, "%*d", dg, L->experts[k]);
			tui_draw_text(a, w, 1 + y, x, dg, buf, A_NORMAL);
			tui_bar(mx > 0 ? L->weights[k] / mx : 0, bw, a->ascii, bar, sizeof bar);
			tui_draw_text(a, w, 1 + y, x + dg + 1, bw, bar, tui_attr(TUI_R_BAR));
			x += dg + bw + 2;
			if (pct) {
				snprintf(buf, sizeof buf, "%2.0f%%", sum > 0 ? 100.0 * L->weights[k] / sum : 0.0);
				tui_draw_text(a, w, 1 + y, x - 1, 3, buf, tui_attr(TUI_R_DIM));
				x += 4;
			}
		}
	}
}

static int heat_level(float heat, float mx)
{
	if (mx <= 0 || heat <= mx * 0.02f)
		return 0;
	float r = heat / mx;
	return r < 0.25f ? 1 : r < 0.6f ? 2 : 3;
}

void tui_draw_experts(tui_app *a, WINDOW *w)
{
	if (a->conv_on) {
		tui_draw_conv(a, w);
		return;
	}
	int h = getmaxy(w), wd = getmaxx(w);
	int n_moe = a->n_layers - a->first_moe;
	const int E = a->n_experts;
	const int lg = digits(a->n_layers - 1);
	int avail = wd - 2 - (lg + 2);
	int group = avail > 0 ? (E + avail - 1) / avail : 1;
	int cells = (E + group - 1) / group;
	char extra[96];
	const int hist = a->order_mode == TUI_ORDER_HISTORY && a->atlas.hist_clusters > 0;
	snprintf(extra, sizeof extra, "%s%d/cell",
		 a->order_mode == TUI_ORDER_LIVE ? "affinity order, "
		 : hist ? "history affinity order, "
		 : a->order_mode == TUI_ORDER_HISTORY ? "history order: computing, " : "", group);
	tui_draw_box(a, w, TUI_PANE_EXPERTS, extra);
	if (!a->xs || n_moe <= 0)
	{
		no_data(a, w, "n/a (no routed experts)");
		return;
	}
	/* legend: all four tiers (in flight = a read under way), most
	 * resident first; the rest of the key when there is room */
	static const char *const tn[4] = { "disk", "cached", "pinned", "in flight" };
	static const int order[4] = { EXPERT_TIER_PINNED, EXPERT_TIER_CACHED, EXPERT_TIER_INFLIGHT,
				      EXPERT_TIER_DISK };
	int x = 1;
	for (int i = 0; i < 4 && x < wd - 6; i++) {
		int t = order[i];
		char g[8];
		int at = tui_cell_attr(t, 3, 0, a->ascii, g);
		tui_draw_text(a, w, 1, x, 2, g, at);
		tui_draw_text(a, w, 1, x + 1, wd - 2 - x, tn[t], tui_attr(TUI_R_DIM));
		x += (int)strlen(tn[t]) + 2;
	}
	if (wd - 1 - x >= 14)
		tui_draw_text(a, w, 1, x, wd - 1 - x, "reverse=routed", tui_attr(TUI_R_DIM));
	int rows = h - 3;
	tui_clamp_scroll(&a->experts_scroll, n_moe, rows);
	char buf[32];
	for (int y = 0; y < rows && a->first_moe + a->experts_scroll + y < a->n_layers; y++) {
		int l = a->first_moe + a->experts_scroll + y;
		snprintf(buf, sizeof buf, "L%0*d", lg & 7, l);
		tui_draw_text(a, w, 2 + y, 1, lg + 1, buf, tui_attr(TUI_R_TITLE));
		const expert_stats_expert *ex = a->experts + (size_t)l * E;
		const unsigned char *rt = a->routed_turn + (size_t)l * E;
		const int *ord = a->order_mode == TUI_ORDER_LIVE ? a->aff.order + (size_t)l * E
				 : hist ? a->atlas.hist_order + (size_t)l * E : NULL;
		for (int c = 0; c < cells; c++) {
			int tier = EXPERT_TIER_DISK, routed = 0;
			float heat = 0;
			for (int p = c * group; p < (c + 1) * group && p < E; p++) {
				int e = ord ? ord[p] : p;
				/* the most resident tier of the cell wins */
				static const int rank[4] = { 0, 2, 3, 1 };
				int t = ex[e].tier >= 0 && ex[e].tier < 4 ? ex[e].tier : 0;
				if (rank[t] > rank[tier])
					tier = t;
				if (ex[e].heat > heat)
					heat = ex[e].heat;
				routed |= rt[e];
			}
			char g[8];
			int at = tui_cell_attr(tier, heat_level(heat, a->heat_max), routed, a->ascii, g);
			wattrset(w, at);
			mvwaddstr(w, 2 + y, lg + 3 + c, g);
		}
		wattrset(w, A_NORMAL);
	}
}
