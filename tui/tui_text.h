/* tui_text.h - UTF-8 text by display width, and the small formatters of
 * the monitor panes (sparklines, bars, sizes). Pure functions, no curses.
 * Widths come from the C library's wcwidth() under the current locale,
 * the same table curses uses to place characters, so what we measure is
 * what the screen does. `ascii` selects the plain-ASCII rendering used when the
 * terminal's locale is not UTF-8 (every non-ASCII character shows as '?',
 * one column; bars and sparklines use ASCII glyphs). */
#ifndef COLI_TUI_TEXT_H
#define COLI_TUI_TEXT_H

#include <stddef.h>
#include <stdint.h>

/* Decode one code point at s[0..n) (n > 0); invalid or truncated input
 * gives U+FFFD for one byte. Returns the bytes consumed (>= 1). */
size_t tui_utf8_next(const char *s, size_t n, uint32_t *cp);

/* Columns a code point takes: 0 (combining, controls), 1 or 2. */
int tui_cp_width(uint32_t cp, int ascii);
int tui_text_width(const char *s, size_t n, int ascii);

/* One display line of a wrapped text: bytes [off, off+len) of the input,
 * taking `cols` columns. */
typedef struct tui_line {
	size_t off, len;
	int cols;
} tui_line;

/* Wrap s[0..n) to `width` columns: break after spaces when a word fits,
 * otherwise between characters (a wide character is never split); '\n'
 * ends a line. Writes up to cap lines and returns how many there are in
 * all (so a first call with cap 0 counts them). An empty text is 1 line. */
int tui_wrap(const char *s, size_t n, int width, int ascii, tui_line *lines, int cap);

/* Copy the longest prefix of s[0..n) that fits in `width` columns into
 * out (NUL-terminated, cap > 0), replacing controls by spaces and, in
 * ascii mode, non-ASCII characters by '?'. Returns the columns used. */
int tui_text_fit(const char *s, size_t n, int width, int ascii, char *out, size_t cap);

/* n values as one glyph each, scaled to max (max <= 0: the largest value;
 * 0 is a blank). Returns bytes written (out NUL-terminated). */
size_t tui_sparkline(const double *v, int n, double max, int ascii, char *out, size_t cap);

/* frac in [0,1] as exactly `width` cells (eighths of a cell in UTF-8,
 * whole '#' cells in ASCII), blank-padded. Returns bytes written. */
size_t tui_bar(double frac, int width, int ascii, char *out, size_t cap);

/* 1536 -> "1.5 KiB"; 3 significant digits, binary units. */
void tui_fmt_bytes(double bytes, char *out, size_t cap);

#endif
