/* tui_theme.h - colours with fallbacks: 256 colours, 8 colours, or
 * monochrome (NO_COLOR set, or a terminal without colours), and ASCII
 * glyphs when the locale is not UTF-8. Only the TUI thread calls these. */
#ifndef COLI_TUI_THEME_H
#define COLI_TUI_THEME_H

enum tui_color_mode { TUI_MONO = 0, TUI_COLOR8 = 8, TUI_COLOR256 = 256 };

enum tui_role {
	TUI_R_NORMAL = 0,
	TUI_R_BORDER,
	TUI_R_FOCUS,       /* border and title of the focused pane */
	TUI_R_TITLE,
	TUI_R_USER,        /* chat: the user's turns */
	TUI_R_ASSISTANT,
	TUI_R_DIM,         /* secondary text, n/a */
	TUI_R_STATUS,      /* status line */
	TUI_R_WARN,
	TUI_R_ERROR,
	TUI_R_BAR,
	TUI_R_SPARK,
	TUI_R_COUNT
};

/* Pure choice of the mode (unit-tested). no_color: NO_COLOR's value or NULL. */
int tui_theme_pick(const char *no_color, int has_colors, int colors);

/* After initscr: pick the mode from the environment and the terminal and
 * set up colour pairs. Returns the mode. */
int tui_theme_init(void);
int tui_theme_mode(void);
/* Attributes for a role (colour pair | A_BOLD ...), as an int for callers
 * that do not include curses.h. */
int tui_attr(int role);
/* An expert cell: tier (enum expert_tier), heat level 0..3, routed in the
 * current turn. Writes the cell's glyph (UTF-8 or ASCII) into g (8 bytes). */
int tui_cell_attr(int tier, int heat, int routed, int ascii, char g[8]);

#endif
