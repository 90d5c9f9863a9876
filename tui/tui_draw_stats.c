/* tui_draw_stats.c - the Cache pane (hit rates, residency by tier vs
 * budget, prefetch quality, per-layer hit rates) and the I/O pane (read
 * bandwidth per drive with 1 s and 10 s sparklines, bytes per token,
 * reads/s, direct or buffered I/O). Every figure without data shows n/a. */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "tui_app.h"
#include "tui_text.h"
#include "tui_theme.h"

static void pct(char *out, size_t cap, int valid, double v)
{
	if (valid)
		snprintf(out, cap, "%.1f%%", v * 100.0);
	else
		snprintf(out, cap, "n/a");
}

static void resident_line(tui_app *a, WINDOW *w, int y, const char *label, int64_t used,
			  int64_t budget, int width)
{
	char u[32], b[32], line[512], bar[256];
	tui_fmt_bytes((double)used, u, sizeof u);
	if (budget > 0)
		tui_fmt_bytes((double)budget, b, sizeof b);
	else
		snprintf(b, sizeof b, "none");
	snprintf(line, sizeof line, "%-7s %9s / %-9s", label, u, b);
	tui_draw_text(a, w, y, 2, width, line, A_NORMAL);
	int bw = width - 2 - (int)strlen(line) - 2;
	if (bw >= 4 && budget > 0) {
		tui_bar((double)used / (double)budget, bw, a->ascii, bar, sizeof bar);
		tui_draw_text(a, w, y, 2 + (int)strlen(line) + 1, bw, bar, tui_attr(TUI_R_BAR));
	}
}

void tui_draw_cache(tui_app *a, WINDOW *w)
{
	int h = getmaxy(w), wd = getmaxx(w), inner = wd - 3;
	tui_draw_box(a, w, TUI_PANE_CACHE, NULL);
	if (!a->xs) {
		tui_draw_text(a, w, 1, 2, inner, "n/a (no expert store)", tui_attr(TUI_R_DIM));
		return;
	}
	const expert_stats_summary *s = &a->sum;
	char l1[256], p1[32], p2[32], line[512], spark[1024];
	int y = 1;
	pct(p1, sizeof p1, s->hit_rate_valid, s->hit_rate);
	pct(p2, sizeof p2, s->hit_rate_10s_valid, s->hit_rate_10s);
	snprintf(l1, sizeof l1, "hit rate %s  (10 s: %s)  loads/token %.2f", p1, p2,
		 s->experts_loaded_per_token);
	if ((int)strlen(l1) > inner)   /* 80 columns: the 10 s rate is the sparkline's */
		snprintf(l1, sizeof l1, "hit rate %s  loads/token %.2f", p1, s->experts_loaded_per_token);
	tui_draw_text(a, w, y++, 2, inner, l1, A_BOLD);
	if (y < h - 1) {
		double v[TUI_HIST_SECONDS];
		int n = tui_series_last(&a->s_hit, inner - 10 > 0 ? inner - 10 : 0, v);
		tui_sparkline(v, n, 1.0, a->ascii, spark, sizeof spark);
		tui_draw_text(a, w, y, 2, 8, "hits/s", tui_attr(TUI_R_DIM));
		tui_draw_text(a, w, y++, 10, inner - 8, spark, tui_attr(TUI_R_SPARK));
	}
	if (y < h - 1) {
		snprintf(line, sizeof line, "pinned %llu  cached %llu  prefetched %llu  misses %llu",
			 (unsigned long long)s->hits_pinned, (unsigned long long)s->hits_cached,
			 (unsigned long long)s->hits_prefetched, (unsigned long long)s->misses);
		tui_draw_text(a, w, y++, 2, inner, line, A_NORMAL);
	}
	if (y < h - 1)
		resident_line(a, w, y++, "pinned", s->resident_pinned, s->budget_pin, inner);
	if (y < h - 1)
		resident_line(a, w, y++, "cached", s->resident_cached + s->resident_inflight, s->budget_cache,
			      inner);
	if (y < h - 1) {
		/* MTP drafting: the decision and what it yields */
		coli_draft_stats ds;
		coli_engine_draft_stats(a->eng, &ds);
		if (!ds.available)
			snprintf(line, sizeof line, "draft %s", ds.reason);
		else if (ds.drafted)
			snprintf(line, sizeof line, "draft %s  accept %.0f%%  %.2f tok/fwd  %s",
				 ds.on ? "on" : "off", 100.0 * ds.acceptance, ds.tokens_per_forward, ds.reason);
		else
			snprintf(line, sizeof line, "draft %s  accept n/a  %s", ds.on ? "on" : "off", ds.reason);
		tui_draw_text(a, w, y++, 2, inner, line, A_NORMAL);
	}
	if (y < h - 1) {
		pct(p1, sizeof p1, s->prefetch_valid, s->prefetch_precision);
		pct(p2, sizeof p2, s->prefetch_valid, s->prefetch_recall);
		snprintf(line, sizeof line, "prefetch precision %s  recall %s  (%llu issued)", p1, p2,
			 (unsigned long long)s->prefetch_issued);
		tui_draw_text(a, w, y++, 2, inner, line, A_NORMAL);
	}
	/* per-layer hit rates, as many columns as fit */
	int col_w = 12, cols = inner / col_w;
	if (cols < 1)
		cols = 1;
	int l = a->first_moe;
	for (; y < h - 1 && l < a->n_layers; y++)
		for (int c = 0; c < cols && l < a->n_layers; c++, l++) {
			const expert_stats_layer *L = &a->layers[l];
			pct(p1, sizeof p1, L->hits + L->misses > 0, L->hit_rate);
			snprintf(line, sizeof line, "L%-3d %6s", l, p1);
			tui_draw_text(a, w, y, 2 + c * col_w, col_w - 1, line, tui_attr(TUI_R_DIM));
		}
}

/* The 10 s sparkline: the 1 s samples averaged over aligned 10 s buckets. */
static int tens(const tui_series *s, double *out, int cap)
{
	double v[TUI_HIST_SECONDS];
	int n = tui_series_last(s, TUI_HIST_SECONDS, v), k = 0;
	for (int i = n % 10; i + 10 <= n && k < cap; i += 10, k++) {
		double sum = 0;
		for (int j = 0; j < 10; j++)
			sum += v[i + j];
		out[k] = sum / 10.0;
	}
	return k;
}

void tui_draw_io(tui_app *a, WINDOW *w)
{
	int h = getmaxy(w), wd = getmaxx(w), inner = wd - 3;
	tui_draw_box(a, w, TUI_PANE_IO, a->xs ? (a->sum.direct ? "O_DIRECT" : "buffered") : NULL);
	if (!a->xs) {
		tui_draw_text(a, w, 1, 2, inner, "n/a (no expert store)", tui_attr(TUI_R_DIM));
		return;
	}
	const expert_stats_summary *s = &a->sum;
	char line[512], b1[32], b2[32], b3[32], spark[1024];
	int y = 1;
	tui_fmt_bytes(a->bytes_per_token, b1, sizeof b1);
	tui_fmt_bytes((double)s->bytes_read, b2, sizeof b2);
	snprintf(line, sizeof line, "%s/token  %.0f reads/s  total %s  disk wait %.2f s",
		 a->last_tokens ? b1 : "n/a", a->iops_1s, b2, s->wait_seconds);
	if ((int)strlen(line) > inner)
		snprintf(line, sizeof line, "%s/token  %.0f reads/s  wait %.1f s", a->last_tokens ? b1 : "n/a",
			 a->iops_1s, s->wait_seconds);
	tui_draw_text(a, w, y++, 2, inner, line, A_BOLD);
	for (int d = 0; d < s->n_drives && d < EXPERT_STATS_MAX_DRIVES && y < h - 1; d++) {
		const expert_stats_drive *dr = &s->drives[d];
		if (!dr->name[0] && !dr->bytes)
			continue;   /* a mirror slot not configured */
		tui_fmt_bytes(dr->bw_1s, b1, sizeof b1);
		tui_fmt_bytes(dr->bw_10s, b2, sizeof b2);
		tui_fmt_bytes((double)dr->bytes, b3, sizeof b3);
		const char *base = strrchr(dr->name, '/');
		snprintf(line, sizeof line, "%-10.10s %9s/s 1s  %9s/s 10s  %s%s", base ? base + 1 : dr->name,
			 b1, b2, b3, dr->enabled ? "" : "  DISABLED");
		tui_draw_text(a, w, y++, 2, inner, line, dr->enabled ? (int)A_NORMAL : tui_attr(TUI_R_ERROR));
		int sw = inner - 9;
		if (sw > 0 && y < h - 1) {
			double v[TUI_HIST_SECONDS];
			int n = tui_series_last(&a->s_bw[d], sw, v);
			tui_sparkline(v, n, 0, a->ascii, spark, sizeof spark);
			tui_draw_text(a, w, y, 3, 6, "1s", tui_attr(TUI_R_DIM));
			tui_draw_text(a, w, y++, 9, sw, spark, tui_attr(TUI_R_SPARK));
		}
		if (sw > 0 && y < h - 1) {
			double v[TUI_HIST_SECONDS / 10];
			int n = tens(&a->s_bw[d], v, TUI_HIST_SECONDS / 10);
			tui_sparkline(v, n, 0, a->ascii, spark, sizeof spark);
			tui_draw_text(a, w, y, 3, 6, "10s", tui_attr(TUI_R_DIM));
			tui_draw_text(a, w, y++, 9, sw, spark, tui_attr(TUI_R_SPARK));
		}
	}
}
