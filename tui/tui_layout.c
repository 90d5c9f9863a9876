/* tui_layout.c - see tui_layout.h. */
#include "config.h"

#include <string.h>

#include "tui_layout.h"

const char *tui_pane_name(int id)
{
	static const char *const names[TUI_PANE_COUNT] = {
		"Chat", "Routing", "Expert map", "Cache", "I/O", "Sessions", "Log",
	};
	return id >= 0 && id < TUI_PANE_COUNT ? names[id] : "?";
}

/* Split `total` rows among n panes in proportion to weights, each getting at
 * least TUI_PANE_MIN_H; the remainder goes round the panes in the order
 * `prio` gives (NULL: first to last) so the sum is exact. Callers
 * guarantee total >= n * TUI_PANE_MIN_H. */
static void split(int total, const int *weights, const int *prio, int n, int *out)
{
	int wsum = 0, used = 0;
	for (int i = 0; i < n; i++)
		wsum += weights[i];
	int spare = total - n * TUI_PANE_MIN_H;
	for (int i = 0; i < n; i++) {
		out[i] = TUI_PANE_MIN_H + spare * weights[i] / wsum;
		used += out[i];
	}
	for (int i = 0; used < total; i = (i + 1) % n, used++)
		out[prio ? prio[i] : i]++;
}

static void column(tui_layout *l, const int *ids, const int *weights, const int *prio, int n, int x, int w,
		   int h)
{
	int hs[TUI_PANE_COUNT];
	split(h, weights, prio, n, hs);
	int y = 0;
	for (int i = 0; i < n; i++) {
		l->pane[ids[i]] = (tui_rect){ y, x, hs[i], w };
		y += hs[i];
	}
}

void tui_layout_compute(int rows, int cols, int zoom, tui_layout *l)
{
	memset(l, 0, sizeof *l);
	l->rows = rows;
	l->cols = cols;
	if (rows < TUI_MIN_ROWS || cols < TUI_MIN_COLS) {
		l->too_small = 1;
		return;
	}
	l->status = (tui_rect){ rows - 2, 0, 1, cols };
	l->keys = (tui_rect){ rows - 1, 0, 1, cols };
	int h = rows - 2;
	if (zoom >= 0 && zoom < TUI_PANE_COUNT) {
		l->pane[zoom] = (tui_rect){ 0, 0, h, cols };
		return;
	}
	if (cols >= 160) {
		int cw = cols * 2 / 5, mw = (cols - cw) / 2, rw = cols - cw - mw;
		l->pane[TUI_PANE_CHAT] = (tui_rect){ 0, 0, h, cw };
		static const int mid[] = { TUI_PANE_ROUTING, TUI_PANE_EXPERTS };
		static const int midw[] = { 1, 1 };
		column(l, mid, midw, NULL, 2, cw, mw, h);
		static const int right[] = { TUI_PANE_CACHE, TUI_PANE_IO, TUI_PANE_SESSIONS, TUI_PANE_LOG };
		static const int rightw[] = { 3, 3, 2, 3 };
		column(l, right, rightw, NULL, 4, cw + mw, rw, h);
	} else {
		int cw = cols / 2;
		l->pane[TUI_PANE_CHAT] = (tui_rect){ 0, 0, h, cw };
		static const int right[] = { TUI_PANE_ROUTING, TUI_PANE_EXPERTS, TUI_PANE_CACHE,
					     TUI_PANE_IO, TUI_PANE_SESSIONS, TUI_PANE_LOG };
		static const int rightw[] = { 3, 3, 2, 2, 2, 2 };
		/* short terminals: the rows left over go first to the panes
		 * whose figures need a second line (Cache: hit rate and its
		 * sparkline; Sessions: a header and the current session) */
		static const int prio[] = { 2, 4, 0, 1, 3, 5 };
		column(l, right, rightw, prio, 6, cw, cols - cw, h);
	}
}

int tui_layout_hit(const tui_layout *l, int y, int x)
{
	for (int i = 0; i < TUI_PANE_COUNT; i++) {
		const tui_rect *r = &l->pane[i];
		if (r->h > 0 && r->w > 0 && y >= r->y && y < r->y + r->h && x >= r->x && x < r->x + r->w)
			return i;
	}
	return -1;
}
