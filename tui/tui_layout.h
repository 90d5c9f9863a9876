/* tui_layout.h - terminal size -> pane rectangles (pure, unit-tested).
 *
 * The screen is the key bar (last row, htop's F-key row), the status line
 * above it, and above both the panes tiling the whole area without overlap. Wide terminals (>= 160 columns) get three
 * columns: Chat | Routing over Expert map | Cache, I/O, Sessions, Log.
 * Narrower ones get Chat on the left and the six monitors stacked on the
 * right. Below 80x24 the layout reports too_small and no pane is shown. */
#ifndef COLI_TUI_LAYOUT_H
#define COLI_TUI_LAYOUT_H

#define TUI_MIN_COLS 80
#define TUI_MIN_ROWS 24
#define TUI_PANE_MIN_H 3   /* border + one line + border */

enum tui_pane_id {
	TUI_PANE_CHAT = 0,
	TUI_PANE_ROUTING,
	TUI_PANE_EXPERTS,
	TUI_PANE_CACHE,
	TUI_PANE_IO,
	TUI_PANE_SESSIONS,
	TUI_PANE_LOG,
	TUI_PANE_COUNT
};

typedef struct tui_rect {
	int y, x, h, w;   /* h == 0 or w == 0: not shown */
} tui_rect;

typedef struct tui_layout {
	int rows, cols;
	int too_small;                 /* below TUI_MIN_COLS x TUI_MIN_ROWS */
	tui_rect pane[TUI_PANE_COUNT];
	tui_rect status;               /* one row */
	tui_rect keys;                 /* one row: the F-key bar, always shown */
} tui_layout;

/* zoom: a pane id shown alone over the pane area, or -1. */
void tui_layout_compute(int rows, int cols, int zoom, tui_layout *out);

/* The pane whose rectangle holds (y, x), or -1. */
int tui_layout_hit(const tui_layout *l, int y, int x);

/* Pane title ("Chat", "Routing", ...). */
const char *tui_pane_name(int id);

/* *scroll kept within [0, n - rows] (0 when n lines fit in rows). */
static inline void tui_clamp_scroll(int *scroll, int n, int rows)
{
	const int max = n > rows ? n - rows : 0;
	if (*scroll > max)
		*scroll = max;
	if (*scroll < 0)
		*scroll = 0;
}

#endif
