/* tui_draw_atlas.c - the Expert map's conversation view (key c): per MoE
 * layer, the experts the chat session's routing profile chooses more
 * often than the baseline (every recorded request, profiles/_all.prof),
 * most specific first, each with its z (coli atlas compare's score: the
 * log odds ratio over its standard error; bold from 3.3, p < 0.001).
 * The scores come from tui_atlas.c; this file only lays them out. */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "tui_app.h"
#include "tui_text.h"
#include "tui_theme.h"

void tui_draw_conv(tui_app *a, WINDOW *w)
{
	const tui_atlas *t = &a->atlas;
	int h = getmaxy(w), wd = getmaxx(w), inner = wd - 3;
	tui_draw_box(a, w, TUI_PANE_EXPERTS, "conversation vs all recorded");
	int n_moe = a->n_layers - a->first_moe;
	if (!a->xs || n_moe <= 0 || !t->n_layers) {
		tui_draw_text(a, w, 1, 2, inner, "n/a (no routed experts)", tui_attr(TUI_R_DIM));
		return;
	}
	char line[512];
	if (!t->conv_ok) {
		tui_draw_text(a, w, 1, 2, inner, t->conv_msg, tui_attr(TUI_R_DIM));
		tui_draw_text(a, w, 2, 2, inner, "(a chat turn records one; c goes back to the map)", tui_attr(TUI_R_DIM));
		return;
	}
	if (t->conv_tokens >= t->base_tokens)
		snprintf(line, sizeof line, "%s: %.0f tokens, all there is in _all: nothing to compare yet", t->session,
			 t->conv_tokens);
	else
		snprintf(line, sizeof line, "%s %.0f tok vs _all %.0f tok: z, bold >= 3.3", t->session, t->conv_tokens,
			 t->base_tokens);
	tui_draw_text(a, w, 1, 2, inner, line, tui_attr(TUI_R_DIM));
	int rows = h - 3;
	tui_clamp_scroll(&a->experts_scroll, n_moe, rows);
	int lg = 1;
	for (int n = a->n_layers - 1; n >= 10; n /= 10)
		lg++;
	for (int y = 0; y < rows && a->first_moe + a->experts_scroll + y < a->n_layers; y++) {
		const int l = a->first_moe + a->experts_scroll + y;
		snprintf(line, sizeof line, "L%0*d", lg & 7, l);
		tui_draw_text(a, w, 2 + y, 1, lg + 1, line, tui_attr(TUI_R_TITLE));
		int x = lg + 3;
		if (!t->n_spec[l])
			tui_draw_text(a, w, 2 + y, x, wd - 1 - x, "-", tui_attr(TUI_R_DIM));
		for (int i = 0; i < t->n_spec[l]; i++) {
			const tui_spec *s = &t->spec[(size_t)l * TUI_ATLAS_TOP + i];
			int n = snprintf(line, sizeof line, "e%d %+.1f", s->expert, s->z);
			if (x + n > wd - 1)
				break; /* what does not fit is left out whole */
			tui_draw_text(a, w, 2 + y, x, n, line, s->z >= 3.3 ? A_BOLD : (int)A_NORMAL);
			x += n + 2;
		}
	}
}
