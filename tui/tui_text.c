/* tui_text.c - see tui_text.h. */
#include "config.h"

#include <stdio.h>
#include <string.h>
#include <wchar.h>

#include "tui_text.h"
#include "util_unicode.h"

size_t tui_utf8_next(const char *s, size_t n, uint32_t *cp)
{
	int k = unicode_utf8_next((const uint8_t *)s, n, cp);
	if (k <= 0) {
		*cp = 0xFFFD;
		return 1;
	}
	return (size_t)k;
}

int tui_cp_width(uint32_t cp, int ascii)
{
	if (cp < 0x20 || cp == 0x7f)
		return 0;
	if (ascii)
		return 1;
	/* the C library's table, because curses positions characters with it:
	 * any other table would disagree with the screen somewhere */
	int w = wcwidth((wchar_t)cp);
	if (w < 0)
		return 1;   /* unprintable: shown as '?' */
	return w > 2 ? 2 : w;
}

/* Characters curses cannot print as themselves (C1 controls, unassigned
 * code points): they would expand to multi-column escapes. */
static int printable(uint32_t cp)
{
	return cp >= 0x20 && cp != 0x7f && wcwidth((wchar_t)cp) >= 0;
}

int tui_text_width(const char *s, size_t n, int ascii)
{
	int w = 0;
	for (size_t i = 0; i < n;) {
		uint32_t cp;
		i += tui_utf8_next(s + i, n - i, &cp);
		w += tui_cp_width(cp, ascii);
	}
	return w;
}

static void emit(tui_line *lines, int cap, int *count, size_t off, size_t len, int cols)
{
	if (*count < cap)
		lines[*count] = (tui_line){ off, len, cols };
	(*count)++;
}

int tui_wrap(const char *s, size_t n, int width, int ascii, tui_line *lines, int cap)
{
	int count = 0;
	if (width < 1)
		width = 1;
	size_t start = 0, brk = 0;    /* brk: byte after the last space (0 = none) */
	int cols = 0, brk_cols = 0;
	size_t i = 0;
	while (i < n) {
		uint32_t cp;
		size_t k = tui_utf8_next(s + i, n - i, &cp);
		if (cp == '\n') {
			emit(lines, cap, &count, start, i - start, cols);
			i += k;
			start = i;
			brk = 0;
			cols = 0;
			continue;
		}
		int w = cp == '\t' ? 1 : tui_cp_width(cp, ascii);
		if (cols + w > width && cols > 0 && brk > start && cp != ' ') {
			/* break after the last space; the word moves down */
			emit(lines, cap, &count, start, brk - start, brk_cols);
			cols -= brk_cols;
			start = brk;
			brk = 0;
		}
		if (cols + w > width && cols > 0) {
			/* no space to break at (or still too wide): break here */
			emit(lines, cap, &count, start, i - start, cols);
			start = i;
			cols = 0;
			brk = 0;
			if (cp == ' ') {      /* a space at the break point is eaten */
				i += k;
				start = i;
				continue;
			}
		}
		cols += w;
		i += k;
		if (cp == ' ' || cp == '\t') {
			brk = i;
			brk_cols = cols;
		}
	}
	emit(lines, cap, &count, start, n - start, cols);
	return count;
}

int tui_text_fit(const char *s, size_t n, int width, int ascii, char *out, size_t cap)
{
	size_t o = 0;
	int cols = 0;
	for (size_t i = 0; i < n;) {
		uint32_t cp;
		size_t k = tui_utf8_next(s + i, n - i, &cp);
		i += k;
		if (cp == '\n' || cp == '\t')
			cp = ' ';
		else if (cp < 0x20 || cp == 0x7f)
			continue;   /* width 0, as tui_wrap measured it: drawn as a
				     * space it would push the line's end off */
		else if (!ascii && !printable(cp))
			cp = '?';
		int w = tui_cp_width(cp, ascii);
		if (cols + w > width)
			break;
		uint8_t buf[4];
		int bl;
		if (ascii && cp >= 0x80) {
			buf[0] = '?';
			bl = 1;
		} else {
			bl = unicode_utf8_put(cp, buf);
		}
		if (o + (size_t)bl + 1 > cap)
			break;
		memcpy(out + o, buf, (size_t)bl);
		o += (size_t)bl;
		cols += w;
	}
	out[o] = 0;
	return cols;
}

static size_t put(char *out, size_t cap, size_t o, const char *g)
{
	size_t l = strlen(g);
	if (o + l + 1 > cap)
		return o;
	memcpy(out + o, g, l);
	return o + l;
}

size_t tui_sparkline(const double *v, int n, double max, int ascii, char *out, size_t cap)
{
	static const char *const u[8] = { "\u2581", "\u2582", "\u2583", "\u2584",
					  "\u2585", "\u2586", "\u2587", "\u2588" };
	static const char a[] = "_.-:=+*#";
	size_t o = 0;
	if (cap == 0)
		return 0;
	if (max <= 0)
		for (int i = 0; i < n; i++)
			if (v[i] > max)
				max = v[i];
	for (int i = 0; i < n; i++) {
		double x = v[i];
		char g[2] = { ' ', 0 };
		if (x > 0 && max > 0) {
			int lvl = (int)(x / max * 8.0 + 0.999999);
			lvl = lvl < 1 ? 1 : lvl > 8 ? 8 : lvl;
			if (ascii) {
				g[0] = a[lvl - 1];
				o = put(out, cap, o, g);
			} else {
				o = put(out, cap, o, u[lvl - 1]);
			}
		} else {
			o = put(out, cap, o, g);
		}
	}
	out[o] = 0;
	return o;
}

size_t tui_bar(double frac, int width, int ascii, char *out, size_t cap)
{
	static const char *const part[8] = { "", "\u258F", "\u258E", "\u258D",
					     "\u258C", "\u258B", "\u258A", "\u2589" };
	size_t o = 0;
	if (cap == 0)
		return 0;
	if (!(frac > 0))
		frac = 0;
	if (frac > 1)
		frac = 1;
	int used = 0;
	if (ascii) {
		int full = (int)(frac * width + 0.5);
		for (; used < full; used++)
			o = put(out, cap, o, "#");
	} else {
		int eighths = (int)(frac * width * 8 + 0.5);
		for (; used < eighths / 8; used++)
			o = put(out, cap, o, "\u2588");
		if (eighths % 8 && used < width) {
			o = put(out, cap, o, part[eighths % 8]);
			used++;
		}
	}
	for (; used < width; used++)
		o = put(out, cap, o, " ");
	out[o] = 0;
	return o;
}

void tui_fmt_bytes(double b, char *out, size_t cap)
{
	static const char *const unit[] = { "B", "KiB", "MiB", "GiB", "TiB", "PiB" };
	int u = 0;
	while (b >= 1024 && u < 5) {
		b /= 1024;
		u++;
	}
	if (u == 0)
		snprintf(out, cap, "%.0f B", b);
	else if (b < 10)
		snprintf(out, cap, "%.2f %s", b, unit[u]);
	else if (b < 100)
		snprintf(out, cap, "%.1f %s", b, unit[u]);
	else
		snprintf(out, cap, "%.0f %s", b, unit[u]);
}
