/* tui_sample.c - telemetry snapshots for the monitor panes.
 *
 * Every frame (10 Hz) reads the lock-free summary and the per-layer
 * routing of the latest token; per-expert tiers and heat (n_layers x
 * n_experts) are copied at most twice a second and only while counters
 * move. Once a second the rolling series behind the sparklines advance.
 * Each comparison sets the dirty bit of the panes that show it, so nothing
 * is redrawn while nothing changes. */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "tui_app.h"

void tui_series_push(tui_series *s, double v)
{
	s->v[s->head] = v;
	s->head = (s->head + 1) % TUI_HIST_SECONDS;
	if (s->n < TUI_HIST_SECONDS)
		s->n++;
}

int tui_series_last(const tui_series *s, int n, double *out)
{
	if (n > s->n)
		n = s->n;
	for (int i = 0; i < n; i++)
		out[i] = s->v[(s->head - n + i + TUI_HIST_SECONDS) % TUI_HIST_SECONDS];
	return n;
}

static int series_active(const tui_series *s)
{
	for (int i = 0; i < s->n; i++)
		if (s->v[i] != 0)
			return 1;
	return 0;
}

int tui_sample_init(tui_app *a)
{
	const coli_config *c = coli_engine_config(a->eng);
	a->xs = coli_engine_expert_stats(a->eng);
	a->n_layers = c->num_hidden_layers;
	a->n_experts = c->n_routed_experts;
	a->first_moe = c->first_k_dense_replace;
	a->has_shared = c->n_shared_experts > 0;
	if (!a->xs || a->n_layers <= 0 || a->n_experts <= 0) {
		a->xs = NULL;
		return 0;
	}
	size_t le = (size_t)a->n_layers * (size_t)a->n_experts;
	a->layers = calloc((size_t)a->n_layers, sizeof *a->layers);
	a->experts = calloc(le, sizeof *a->experts);
	a->routed_turn = calloc(le, 1);
	if (!a->layers || !a->experts || !a->routed_turn)
		return -ENOMEM;
	int rc = tui_affinity_init(&a->aff, a->n_layers, a->n_experts);
	return rc ? rc : tui_atlas_init(&a->atlas, a->n_layers, a->n_experts, coli_engine_cache_dir(a->eng));
}

void tui_sample_free(tui_app *a)
{
	free(a->layers);
	free(a->experts);
	free(a->routed_turn);
	tui_affinity_free(&a->aff);
	tui_atlas_free(&a->atlas);
	a->layers = NULL;
	a->experts = NULL;
	a->routed_turn = NULL;
}

static void sample_experts(tui_app *a)
{
	const int E = a->n_experts;
	int changed = 0;
	float mx = 0;
	expert_stats_expert tmp[512];
	for (int l = 0; l < a->n_layers; l++) {
		expert_stats_expert *dst = a->experts + (size_t)l * E;
		if (E <= 512) {
			int n = expert_stats_experts_get(a->xs, l, tmp, E);
			if (n == E && memcmp(tmp, dst, sizeof *tmp * (size_t)E)) {
				memcpy(dst, tmp, sizeof *tmp * (size_t)E);
				changed = 1;
			}
		} else if (expert_stats_experts_get(a->xs, l, dst, E) == E) {
			changed = 1;
		}
		for (int e = 0; e < E; e++)
			if (dst[e].heat > mx)
				mx = dst[e].heat;
	}
	a->heat_max = mx;
	if (changed)
		a->dirty |= 1u << TUI_PANE_EXPERTS;
}

void tui_order_next(tui_app *a)
{
	a->order_mode = (a->order_mode + 1) % 3;
	a->dirty |= 1u << TUI_PANE_EXPERTS;
	if (a->order_mode == TUI_ORDER_HISTORY) {
		/* clustered on a thread of its own: the map keeps its id order
		 * until the result is there (atlas_sample) */
		int rc = tui_atlas_hist_start(&a->atlas);
		if (rc && rc != -EBUSY) {
			tui_app_message(a, "expert map: cannot cluster the recorded history (%s)", strerror(-rc));
			a->order_mode = TUI_ORDER_LIVE;
		} else {
			tui_app_message(a, "expert map: clustering the recorded routing history...");
			return;
		}
	}
	if (a->order_mode == TUI_ORDER_LIVE) {
		tui_affinity_reorder(&a->aff);
		tui_app_message(a, "expert map: affinity order (co-activation since colitop started)");
	} else {
		tui_app_message(a, "expert map: id order");
	}
}

/* The recorded profiles: a finished history clustering, and the
 * conversation view's files (at most once a second while shown). */
static void atlas_sample(tui_app *a, double now)
{
	if (tui_atlas_hist_poll(&a->atlas)) {
		tui_log_add(a->log, 1, "expert map: %s", a->atlas.hist_msg);
		if (a->order_mode == TUI_ORDER_HISTORY && a->atlas.hist_clusters > 0) {
			tui_app_message(a, "expert map: %s", a->atlas.hist_msg);
		} else if (a->order_mode == TUI_ORDER_HISTORY) {
			a->order_mode = TUI_ORDER_LIVE;
			tui_affinity_reorder(&a->aff);
			tui_app_message(a, "expert map: %s; live co-activation order instead", a->atlas.hist_msg);
		}
		a->dirty |= 1u << TUI_PANE_EXPERTS;
	}
	if (a->conv_on && (a->t_conv == 0 || now - a->t_conv >= 1.0)) {
		a->t_conv = now;
		if (tui_atlas_conv_refresh(&a->atlas, a->chat.session))
			a->dirty |= 1u << TUI_PANE_EXPERTS;
	}
}

static void per_second(tui_app *a)
{
	const expert_stats_summary *s = &a->sum;
	uint64_t lookups = s->hits_pinned + s->hits_cached + s->hits_prefetched + s->misses;
	uint64_t hits = lookups - s->misses;
	uint64_t d_look = lookups - a->last_lookups;
	uint64_t d_hits = hits - a->last_hits;
	a->last_hits = hits;
	tui_series_push(&a->s_hit, d_look ? (double)d_hits / (double)d_look : 0.0);
	for (int d = 0; d < EXPERT_STATS_MAX_DRIVES; d++)
		tui_series_push(&a->s_bw[d], d < s->n_drives ? s->drives[d].bw_1s : 0.0);
	uint64_t d_tok = s->tokens - a->last_tokens;
	uint64_t d_bytes = s->bytes_read - a->last_bytes;
	tui_series_push(&a->s_tok, (double)d_tok);
	if (d_tok)
		a->bytes_per_token = (double)d_bytes / (double)d_tok;
	/* one io_uring read per expert record: reads/s = bytes/s / record */
	a->iops_1s = s->record_size > 0 ? (double)d_bytes / (double)s->record_size : 0.0;
	a->last_lookups = lookups;
	a->last_tokens = s->tokens;
	a->last_bytes = s->bytes_read;
	if (d_look || d_bytes || d_tok || series_active(&a->s_hit) || series_active(&a->s_tok))
		a->dirty |= 1u << TUI_PANE_CACHE | 1u << TUI_PANE_IO;
}

void tui_sample(tui_app *a, double now)
{
	if (!a->xs)
		return;
	a->prev_sum = a->sum;
	expert_stats_snapshot(a->xs, &a->sum);
	const expert_stats_summary *s = &a->sum, *p = &a->prev_sum;
	int moved = !a->have_sum || s->tokens != p->tokens || s->misses != p->misses ||
		    s->hits_pinned != p->hits_pinned || s->hits_cached != p->hits_cached ||
		    s->hits_prefetched != p->hits_prefetched || s->bytes_read != p->bytes_read ||
		    s->resident_pinned != p->resident_pinned || s->resident_cached != p->resident_cached ||
		    s->resident_inflight != p->resident_inflight || s->prefetch_issued != p->prefetch_issued;
	if (!a->have_sum) {
		a->last_tokens = s->tokens;
		a->last_bytes = s->bytes_read;
		a->last_lookups = s->hits_pinned + s->hits_cached + s->hits_prefetched + s->misses;
		a->last_hits = a->last_lookups - s->misses;
		a->t_second = now;
	}
	a->have_sum = 1;
	if (moved)
		a->dirty |= 1u << TUI_PANE_CACHE | 1u << TUI_PANE_IO | TUI_DIRTY_STATUS;
	/* rolling figures the store computes itself (1 s / 10 s windows) can
	 * change while counters stand still: compare them too */
	if (s->hit_rate_10s_valid != p->hit_rate_10s_valid || s->hit_rate_10s != p->hit_rate_10s)
		a->dirty |= 1u << TUI_PANE_CACHE;
	for (int d = 0; d < s->n_drives && d < EXPERT_STATS_MAX_DRIVES; d++)
		if (s->drives[d].bw_1s != p->drives[d].bw_1s || s->drives[d].bw_10s != p->drives[d].bw_10s)
			a->dirty |= 1u << TUI_PANE_IO;
	const int E = a->n_experts;
	for (int l = 0; l < a->n_layers; l++) {
		expert_stats_layer cur;
		if (expert_stats_layer_get(a->xs, l, &cur))
			continue;
		expert_stats_layer *old = &a->layers[l];
		if (cur.token != old->token || cur.n != old->n || cur.hits != old->hits ||
		    cur.misses != old->misses) {
			a->dirty |= 1u << TUI_PANE_ROUTING | 1u << TUI_PANE_EXPERTS;
			for (int i = 0; i < cur.n; i++)
				if (cur.experts[i] >= 0 && cur.experts[i] < E)
					a->routed_turn[(size_t)l * E + cur.experts[i]] = 1;
			tui_affinity_note(&a->aff, l, cur.token, cur.experts, cur.n);
		}
		*old = cur;
	}
	if ((moved && now - a->t_experts >= 0.5) || a->t_experts == 0) {
		a->t_experts = now;
		sample_experts(a);
	}
	atlas_sample(a, now);
	if (a->order_mode == TUI_ORDER_LIVE && a->aff.changed && now - a->t_aff >= 1.0) {
		a->t_aff = now;
		tui_affinity_reorder(&a->aff);
		a->dirty |= 1u << TUI_PANE_EXPERTS;
	}
	if (now - a->t_second >= 1.0) {
		a->t_second += 1.0;
		if (now - a->t_second > 5.0)   /* after a stall, do not replay missed seconds */
			a->t_second = now;
		per_second(a);
	}
}
