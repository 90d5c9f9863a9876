/* tui_edit.h - the input line: UTF-8 editing with a cursor and history.
 * Pure (no curses): the chat pane maps keys to tui_edit_key calls and
 * draws what tui_edit_view says. The cursor always sits on a code point
 * boundary; Ctrl-W deletes back to the start of the previous word. */
#ifndef COLI_TUI_EDIT_H
#define COLI_TUI_EDIT_H

#include <stddef.h>

#define TUI_EDIT_MAX 4096   /* bytes of one input line */
#define TUI_HIST_MAX 100

enum tui_edit_op {
	TUI_EDIT_LEFT = 1,
	TUI_EDIT_RIGHT,
	TUI_EDIT_HOME,        /* Home, Ctrl-A */
	TUI_EDIT_END,         /* End, Ctrl-E */
	TUI_EDIT_BACKSPACE,
	TUI_EDIT_DELETE,
	TUI_EDIT_KILL_END,    /* Ctrl-K */
	TUI_EDIT_KILL_START,  /* Ctrl-U */
	TUI_EDIT_KILL_WORD,   /* Ctrl-W */
	TUI_EDIT_HIST_PREV,   /* Up */
	TUI_EDIT_HIST_NEXT,   /* Down */
};

typedef struct tui_edit {
	char buf[TUI_EDIT_MAX];
	size_t len, cur;              /* bytes; cur on a code point boundary */
	char *hist[TUI_HIST_MAX];     /* oldest first, malloc'd */
	int n_hist;
	int hist_pos;                 /* == n_hist while editing a new line */
	char draft[TUI_EDIT_MAX];     /* the new line, kept while browsing history */
} tui_edit;

void tui_edit_init(tui_edit *e);
void tui_edit_free(tui_edit *e);
/* Insert UTF-8 at the cursor; -ENOSPC (nothing inserted) when it does not fit. */
int tui_edit_insert(tui_edit *e, const char *s, size_t n);
/* Apply an enum tui_edit_op. */
void tui_edit_op(tui_edit *e, int op);
void tui_edit_set(tui_edit *e, const char *s);
/* Return the line (malloc'd, NULL on ENOMEM), remember it in the history
 * (unless empty or equal to the last entry) and clear the editor. */
char *tui_edit_take(tui_edit *e);
/* Horizontal scrolling for a field `width` columns wide: the first byte
 * shown and the cursor's column relative to it. */
void tui_edit_view(const tui_edit *e, int width, int ascii, size_t *first, int *cursor_col);

#endif
