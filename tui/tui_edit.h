/* tui_edit.h - the input field: UTF-8 editing with a cursor and history.
 * Pure (no curses): the chat pane maps keys to tui_edit_op calls and
 * draws what tui_edit_render gives. The cursor always sits on a code point
 * boundary; Ctrl-W deletes back to the start of the previous word.
 *
 * The text is a gap buffer: bytes [0, gap) and [gap_end, cap) of buf, the
 * gap moved to the cursor only when the text changes there. Typing or
 * pasting at one place is O(1) amortized per byte whatever the length of
 * the text (a whole document fits; the limit is `max`, set at init), and
 * drawing looks only at the bytes around the cursor that fit the field.
 * Newlines are part of the text (a pasted block keeps them). */
#ifndef COLI_TUI_EDIT_H
#define COLI_TUI_EDIT_H

#include <stddef.h>

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
	char *buf;                    /* (cap) text before the gap, gap, text after */
	size_t cap, gap, gap_end;
	size_t len, cur;              /* bytes of text; cursor on a code point boundary */
	size_t max;                   /* longest text accepted, in bytes */
	char *hist[TUI_HIST_MAX];     /* oldest first, malloc'd */
	int n_hist;
	int hist_pos;                 /* == n_hist while editing a new line */
	char *draft;                  /* the new line, kept while browsing history */
} tui_edit;

/* max: the longest text in bytes (inserting more is refused, -ENOSPC). */
void tui_edit_init(tui_edit *e, size_t max);
void tui_edit_free(tui_edit *e);
/* Insert UTF-8 at the cursor; -ENOSPC (nothing inserted) when the text
 * would pass `max`, -ENOMEM when the buffer cannot grow. */
int tui_edit_insert(tui_edit *e, const char *s, size_t n);
/* Apply an enum tui_edit_op. */
void tui_edit_op(tui_edit *e, int op);
/* Replace the text (cut to `max` on a character boundary), cursor at the end. */
int tui_edit_set(tui_edit *e, const char *s);
/* The whole text, NUL-terminated (moves the gap to the end: O(len) once,
 * then free until the next edit elsewhere). NULL only on ENOMEM. */
const char *tui_edit_text(tui_edit *e);
/* Newlines in the text (for "N lines" figures). */
size_t tui_edit_lines(const tui_edit *e);
/* Return the text (malloc'd, NULL on ENOMEM), remember it in the history
 * (unless empty or equal to the last entry) and clear the editor. */
char *tui_edit_take(tui_edit *e);
/* The part of the text shown in a field `width` columns wide, scrolled
 * so the cursor is inside it (on its last column at most): written to
 * out as display text (a newline shows as nl_glyph, other controls as
 * spaces, non-ASCII as '?' in ascii mode). Looks only at the bytes
 * around the cursor. Returns the cursor's column in the field. */
int tui_edit_render(const tui_edit *e, int width, int ascii, const char *nl_glyph, char *out, size_t cap);

#endif
