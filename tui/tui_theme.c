/* tui_theme.c - see tui_theme.h. */
#include "config.h"

#include <curses.h>
#include <stdlib.h>
#include <string.h>

#include "expert_store_stats.h"
#include "tui_theme.h"

static int mode = TUI_MONO;

int tui_theme_pick(const char *no_color, int has_colors, int colors)
{
	/* https://no-color.org: any non-empty value disables colour */
	if ((no_color && *no_color) || !has_colors || colors < 8)
		return TUI_MONO;
	return colors >= 256 ? TUI_COLOR256 : TUI_COLOR8;
}

/* Pairs: 1..TUI_R_COUNT for roles, then 4 tiers x 4 heat levels. */
#define PAIR_ROLE(r) ((short)(1 + (r)))
#define PAIR_CELL(t, h) ((short)(1 + TUI_R_COUNT + (t) * 4 + (h)))

int tui_theme_init(void)
{
	const char *nc = getenv("NO_COLOR");
	if ((nc && *nc) || !has_colors()) {
		mode = TUI_MONO;
		return mode;
	}
	start_color();   /* COLORS is known only after this */
	mode = tui_theme_pick(nc, 1, COLORS);
	if (mode == TUI_MONO)
		return mode;
	use_default_colors();
	static const short fg8[TUI_R_COUNT] = {
		-1, COLOR_BLUE, COLOR_CYAN, COLOR_CYAN, COLOR_GREEN, -1,
		COLOR_BLUE, COLOR_BLACK, COLOR_YELLOW, COLOR_RED, COLOR_CYAN, COLOR_GREEN,
	};
	static const short fg256[TUI_R_COUNT] = {
		-1, 244, 45, 117, 114, -1, 243, 16, 220, 203, 39, 78,
	};
	for (int r = 0; r < TUI_R_COUNT; r++) {
		short fg = mode == TUI_COLOR256 ? fg256[r] : fg8[r];
		short bg = r == TUI_R_STATUS ? (mode == TUI_COLOR256 ? 111 : COLOR_CYAN) : -1;
		init_pair(PAIR_ROLE(r), fg, bg);
	}
	/* tiers: disk (grey/blue), cached (green), pinned (magenta), in flight
	 * (yellow); four brightness steps for heat in 256 colours */
	static const short c256[4][4] = {
		{ 237, 240, 246, 252 },
		{ 22, 28, 34, 46 },
		{ 53, 91, 129, 201 },
		{ 136, 178, 220, 226 },
	};
	static const short c8[4] = { COLOR_BLUE, COLOR_GREEN, COLOR_MAGENTA, COLOR_YELLOW };
	for (int t = 0; t < 4; t++)
		for (int h = 0; h < 4; h++)
			init_pair(PAIR_CELL(t, h), mode == TUI_COLOR256 ? c256[t][h] : c8[t], -1);
	return mode;
}

int tui_theme_mode(void)
{
	return mode;
}

int tui_attr(int role)
{
	if (mode == TUI_MONO) {
		switch (role) {
		case TUI_R_FOCUS:
		case TUI_R_TITLE:
		case TUI_R_USER:
		case TUI_R_ERROR:
			return A_BOLD;
		case TUI_R_DIM:
		case TUI_R_BORDER:
			return A_DIM;
		case TUI_R_STATUS:
			return A_REVERSE;
		default:
			return A_NORMAL;
		}
	}
	int a = (int)COLOR_PAIR(PAIR_ROLE(role));
	if (role == TUI_R_FOCUS || role == TUI_R_TITLE || role == TUI_R_USER || role == TUI_R_ERROR)
		a |= A_BOLD;
	return a;
}

int tui_cell_attr(int tier, int heat, int routed, int ascii, char g[8])
{
	static const char *const heat_u[4] = { "\u00b7", "\u2591", "\u2592", "\u2588" };
	static const char heat_a[4] = { '.', ':', '+', '#' };
	static const char tier_a[4] = { '.', '+', '#', '~' };
	if (tier < 0 || tier > 3)
		tier = EXPERT_TIER_DISK;
	heat = heat < 0 ? 0 : heat > 3 ? 3 : heat;
	int a;
	if (mode == TUI_MONO) {
		/* no colour: the glyph says the tier, bold says hot */
		g[0] = tier_a[tier];
		g[1] = 0;
		a = heat >= 2 ? A_BOLD : heat == 0 ? A_DIM : A_NORMAL;
	} else {
		if (ascii) {
			g[0] = heat_a[heat];
			g[1] = 0;
		} else {
			strcpy(g, heat_u[heat]);
		}
		a = (int)COLOR_PAIR(PAIR_CELL(tier, heat));
		if (mode == TUI_COLOR8)
			a |= heat >= 3 ? A_BOLD : heat == 0 ? A_DIM : A_NORMAL;
	}
	if (routed)
		a |= A_REVERSE;
	return a;
}
