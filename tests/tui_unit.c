/* tui_unit.c - unit tests of colitop's pure parts: layout for many
 * terminal sizes, line editing, wrapping by display width, sparklines,
 * bars and sizes, colour-mode choice, affinity ordering, the log ring. */
#include "config.h"

#include <errno.h>
#include <locale.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tui_affinity.h"
#include "tui_chat.h"
#include "tui_edit.h"
#include "tui_layout.h"
#include "tui_log.h"
#include "tui_text.h"
#include "tui_theme.h"
#include "test_util.h"

/* Every visible pane lies on screen above the status line, no two overlap,
 * each is at least 3 rows and 20 columns, and together they cover every
 * cell of the pane area. */
static void check_layout(int rows, int cols)
{
	tui_layout l;
	tui_layout_compute(rows, cols, -1, &l);
	if (rows < TUI_MIN_ROWS || cols < TUI_MIN_COLS) {
		CHECK(l.too_small);
		return;
	}
	CHECK(!l.too_small);
	CHECK(l.status.y == rows - 2 && l.status.w == cols && l.status.h == 1);
	CHECK(l.keys.y == rows - 1 && l.keys.w == cols && l.keys.h == 1);
	unsigned char *cover = calloc((size_t)rows * (size_t)cols, 1);
	for (int p = 0; p < TUI_PANE_COUNT; p++) {
		const tui_rect *r = &l.pane[p];
		CHECK(r->h >= TUI_PANE_MIN_H && r->w >= 20);
		CHECK(r->y >= 0 && r->x >= 0 && r->y + r->h <= rows - 2 && r->x + r->w <= cols);
		for (int y = r->y; y < r->y + r->h && y < rows; y++)
			for (int x = r->x; x < r->x + r->w && x < cols; x++)
				cover[y * cols + x]++;
	}
	for (int y = 0; y < rows - 2; y++)
		for (int x = 0; x < cols; x++)
			if (cover[y * cols + x] != 1) {
				FAIL("layout %dx%d: cell (%d,%d) covered %d times", cols, rows, y, x,
					cover[y * cols + x]);
				y = rows;
				break;
			}
	free(cover);
	/* the chat gets a usable share */
	CHECK(l.pane[TUI_PANE_CHAT].w >= cols * 2 / 5 - 1);
	/* hit testing agrees with the rectangles */
	for (int p = 0; p < TUI_PANE_COUNT; p++)
		CHECK(tui_layout_hit(&l, l.pane[p].y + l.pane[p].h / 2, l.pane[p].x + l.pane[p].w / 2) == p);
	CHECK(tui_layout_hit(&l, rows - 1, 0) == -1 && tui_layout_hit(&l, rows - 2, 0) == -1);
	/* at 80x24 the Cache and Sessions panes get two lines inside */
	if (rows == 24 && cols == 80)
		CHECK(l.pane[TUI_PANE_CACHE].h >= 4 && l.pane[TUI_PANE_SESSIONS].h >= 4);
	/* zoom: one pane over the whole pane area */
	for (int z = 0; z < TUI_PANE_COUNT; z++) {
		tui_layout lz;
		tui_layout_compute(rows, cols, z, &lz);
		for (int p = 0; p < TUI_PANE_COUNT; p++)
			CHECK(p == z ? (lz.pane[p].h == rows - 2 && lz.pane[p].w == cols) : lz.pane[p].h == 0);
	}
}

static void test_layout(void)
{
	static const int sizes[][2] = {
		{ 24, 80 }, { 23, 80 }, { 24, 79 }, { 10, 40 }, { 0, 0 }, { 25, 81 }, { 30, 100 },
		{ 40, 120 }, { 50, 159 }, { 50, 160 }, { 60, 200 }, { 100, 300 }, { 24, 400 },
		{ 200, 80 }, { 33, 97 }, { 1000, 1000 },
	};
	for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
		check_layout(sizes[i][0], sizes[i][1]);
	for (int r = 20; r < 70; r += 3)
		for (int c = 70; c < 260; c += 7)
			check_layout(r, c);
	CHECK_STR(tui_pane_name(TUI_PANE_EXPERTS), "Expert map");
}

/* The gap buffer against a plain string model: random inserts, moves
 * and deletes must leave the same text and cursor. */
static void test_edit_model(void)
{
	tui_edit e;
	tui_edit_init(&e, 1 << 20);
	char model[8192];
	size_t mlen = 0, mcur = 0;
	unsigned seed = 12345;
	for (int step = 0; step < 20000; step++) {
		seed = seed * 1103515245u + 12345u;
		int r = (int)((seed >> 16) % 10);
		if (r < 5 && mlen + 3 < sizeof model) {
			char c[3] = { (char)('a' + (seed >> 8) % 26), '\n', 'z' };
			size_t n = 1 + (seed >> 4) % 3;
			CHECK(tui_edit_insert(&e, c, n) == 0);
			memmove(model + mcur + n, model + mcur, mlen - mcur);
			memcpy(model + mcur, c, n);
			mlen += n;
			mcur += n;
		} else if (r == 5) {
			tui_edit_op(&e, TUI_EDIT_LEFT);
			mcur -= mcur > 0;
		} else if (r == 6) {
			tui_edit_op(&e, TUI_EDIT_RIGHT);
			mcur += mcur < mlen;
		} else if (r == 7 && mcur > 0) {
			tui_edit_op(&e, TUI_EDIT_BACKSPACE);
			memmove(model + mcur - 1, model + mcur, mlen - mcur);
			mlen--;
			mcur--;
		} else if (r == 8 && mcur < mlen) {
			tui_edit_op(&e, TUI_EDIT_DELETE);
			memmove(model + mcur, model + mcur + 1, mlen - mcur - 1);
			mlen--;
		} else if (r == 9) {
			size_t to = (seed >> 3) % (mlen + 1);
			tui_edit_op(&e, TUI_EDIT_HOME);
			for (size_t i = 0; i < to; i++)
				tui_edit_op(&e, TUI_EDIT_RIGHT);
			mcur = to;
		}
		CHECK(e.len == mlen && e.cur == mcur);
		if (step % 997 == 0) {
			model[mlen] = 0;
			CHECK_STR(tui_edit_text(&e), model);
		}
	}
	model[mlen] = 0;
	CHECK_STR(tui_edit_text(&e), model);
	size_t nl = 0;
	for (size_t i = 0; i < mlen; i++)
		nl += model[i] == '\n';
	CHECK(tui_edit_lines(&e) == nl);
	tui_edit_free(&e);
	/* 100 KB typed one byte at a time in the middle of the text, then a
	 * refusal past the limit that changes nothing */
	tui_edit_init(&e, 200000);
	tui_edit_insert(&e, "<>", 2);
	tui_edit_op(&e, TUI_EDIT_LEFT);
	for (int i = 0; i < 100000; i++)
		CHECK(tui_edit_insert(&e, i % 100 == 99 ? "\n" : "x", 1) == 0);
	CHECK(e.len == 100002 && e.cur == 100001 && tui_edit_lines(&e) == 1000);
	static char big[100001];
	memset(big, 'y', sizeof big - 1);
	CHECK(tui_edit_insert(&e, big, sizeof big - 1) == -ENOSPC && e.len == 100002);
	const char *t = tui_edit_text(&e);
	CHECK(t[0] == '<' && t[100001] == '>' && t[100] == '\n' && t[100002] == 0);
	tui_edit_free(&e);
}

static void test_edit(void)
{
	tui_edit e;
	tui_edit_init(&e, 4096);
	tui_edit_insert(&e, "hello world", 11);
	tui_edit_op(&e, TUI_EDIT_HOME);
	CHECK(e.cur == 0);
	tui_edit_op(&e, TUI_EDIT_RIGHT);
	tui_edit_insert(&e, "X", 1);
	CHECK_STR(tui_edit_text(&e), "hXello world");
	tui_edit_op(&e, TUI_EDIT_END);
	tui_edit_op(&e, TUI_EDIT_KILL_WORD);        /* Ctrl-W */
	CHECK_STR(tui_edit_text(&e), "hXello ");
	tui_edit_op(&e, TUI_EDIT_KILL_WORD);
	CHECK_STR(tui_edit_text(&e), "");
	/* multi-byte characters move and delete as one */
	tui_edit_insert(&e, "a\xe4\xb8\xad\xf0\x9f\x98\x80z", 9);   /* a中😀z */
	tui_edit_op(&e, TUI_EDIT_LEFT);
	tui_edit_op(&e, TUI_EDIT_LEFT);
	CHECK(e.cur == 4);
	tui_edit_op(&e, TUI_EDIT_BACKSPACE);
	CHECK_STR(tui_edit_text(&e), "a\xf0\x9f\x98\x80z");
	tui_edit_op(&e, TUI_EDIT_DELETE);
	CHECK_STR(tui_edit_text(&e), "az");
	tui_edit_op(&e, TUI_EDIT_KILL_START);        /* Ctrl-U */
	CHECK_STR(tui_edit_text(&e), "z");
	tui_edit_op(&e, TUI_EDIT_KILL_END);          /* Ctrl-K */
	CHECK_STR(tui_edit_text(&e), "");
	tui_edit_op(&e, TUI_EDIT_BACKSPACE);         /* harmless at 0 */
	tui_edit_op(&e, TUI_EDIT_LEFT);
	CHECK(e.cur == 0 && e.len == 0);
	/* history: Up recalls, Down returns to the draft */
	tui_edit_insert(&e, "first", 5);
	free(tui_edit_take(&e));
	tui_edit_insert(&e, "second", 6);
	char *t = tui_edit_take(&e);
	CHECK_STR(t, "second");
	free(t);
	CHECK(e.len == 0);
	tui_edit_insert(&e, "dra", 3);
	tui_edit_op(&e, TUI_EDIT_HIST_PREV);
	CHECK_STR(tui_edit_text(&e), "second");
	tui_edit_op(&e, TUI_EDIT_HIST_PREV);
	CHECK_STR(tui_edit_text(&e), "first");
	tui_edit_op(&e, TUI_EDIT_HIST_PREV);         /* stays at the oldest */
	CHECK_STR(tui_edit_text(&e), "first");
	tui_edit_op(&e, TUI_EDIT_HIST_NEXT);
	tui_edit_op(&e, TUI_EDIT_HIST_NEXT);
	CHECK_STR(tui_edit_text(&e), "dra");
	/* the same line twice is remembered once */
	free(tui_edit_take(&e));
	tui_edit_insert(&e, "dra", 3);
	free(tui_edit_take(&e));
	CHECK(e.n_hist == 3);
	/* past the limit refuses */
	char big[4097];
	memset(big, 'x', sizeof big);
	CHECK(tui_edit_insert(&e, big, sizeof big) == -ENOSPC);
	CHECK(e.len == 0);
	CHECK(tui_edit_insert(&e, big, 4096) == 0);
	free(tui_edit_take(&e));
	/* the field keeps the cursor inside it */
	char out[256];
	tui_edit_insert(&e, "0123456789abcdef", 16);
	int col = tui_edit_render(&e, 10, 0, "|", out, sizeof out);
	CHECK(col == 9);
	CHECK_STR(out, "789abcdef");
	tui_edit_op(&e, TUI_EDIT_HOME);
	col = tui_edit_render(&e, 10, 0, "|", out, sizeof out);
	CHECK(col == 0);
	CHECK_STR(out, "0123456789");
	/* newlines show as the glyph; a wide character is never cut */
	free(tui_edit_take(&e));
	tui_edit_insert(&e, "ab\ncd\xe4\xb8\xad", 8);
	col = tui_edit_render(&e, 10, 0, "|", out, sizeof out);
	CHECK_STR(out, "ab|cd\xe4\xb8\xad");
	CHECK(col == 7);
	tui_edit_op(&e, TUI_EDIT_HOME);
	col = tui_edit_render(&e, 6, 0, "|", out, sizeof out);
	CHECK_STR(out, "ab|cd");
	tui_edit_free(&e);
}

static int wrap_lines(const char *s, int width, tui_line *ls, int cap)
{
	return tui_wrap(s, strlen(s), width, 0, ls, cap);
}

static void test_wrap(void)
{
	tui_line ls[32];
	CHECK(tui_text_width("abc", 3, 0) == 3);
	CHECK(tui_text_width("\xe4\xb8\xad\xe6\x96\x87", 6, 0) == 4);      /* 中文 */
	CHECK(tui_text_width("\xf0\x9f\x98\x80", 4, 0) == 2);               /* 😀 */
	CHECK(tui_text_width("e\xcc\x81", 3, 0) == 1);                      /* e + combining acute */
	CHECK(tui_text_width("\xe4\xb8\xad", 3, 1) == 1);                   /* ascii mode */
	/* words move down whole */
	int n = wrap_lines("the quick brown fox", 10, ls, 32);
	CHECK(n == 2);
	CHECK(ls[0].off == 0 && ls[0].len == 10);     /* "the quick " */
	CHECK(ls[1].off == 10 && ls[1].len == 9 && ls[1].cols == 9);
	/* a long word is cut between characters */
	n = wrap_lines("abcdefghijkl", 5, ls, 32);
	CHECK(n == 3 && ls[0].len == 5 && ls[2].len == 2);
	/* CJK: 2 columns each, never split; width 5 holds two */
	const char *cjk = "\xe4\xb8\xad\xe6\x96\x87\xe5\xad\x97\xe7\xac\xa6";   /* 中文字符 */
	n = wrap_lines(cjk, 5, ls, 32);
	CHECK(n == 2 && ls[0].cols == 4 && ls[0].len == 6 && ls[1].cols == 4);
	/* every line fits */
	const char *mixed = "hi \xf0\x9f\x98\x80\xf0\x9f\x98\x80 \xe4\xb8\xad\xe6\x96\x87 abc "
			    "\xf0\x9f\x98\x80x\xf0\x9f\x98\x80";
	for (int w = 1; w < 20; w++) {
		int k = tui_wrap(mixed, strlen(mixed), w, 0, ls, 32);
		size_t covered = 0;
		for (int i = 0; i < k && i < 32; i++) {
			CHECK(ls[i].cols <= (w < 2 ? 2 : w));
			CHECK(tui_text_width(mixed + ls[i].off, ls[i].len, 0) == ls[i].cols);
			covered += ls[i].len;
		}
		CHECK(covered <= strlen(mixed));
	}
	/* newlines end lines; empty text is one line; counting with cap 0 */
	n = wrap_lines("a\n\nb", 10, ls, 32);
	CHECK(n == 3 && ls[1].len == 0 && ls[2].off == 3);
	CHECK(wrap_lines("", 10, ls, 32) == 1);
	CHECK(tui_wrap("aaaa bbbb cccc", 14, 4, 0, NULL, 0) == 3);
	/* invalid UTF-8 does not stall */
	CHECK(tui_wrap("\xff\xfe\xe4", 3, 2, 0, ls, 32) == 2);
	/* fitting text into a field */
	char out[64];
	CHECK(tui_text_fit(cjk, strlen(cjk), 5, 0, out, sizeof out) == 4);
	CHECK_STR(out, "\xe4\xb8\xad\xe6\x96\x87");
	CHECK(tui_text_fit("a\tb\n", 4, 10, 0, out, sizeof out) == 4);
	CHECK_STR(out, "a b ");
	/* other controls take no column, as tui_wrap counts them: a wrapped
	 * line keeps its last character (a model's text may hold them) */
	CHECK(tui_text_fit("\fab\x12" "c", 5, 3, 0, out, sizeof out) == 3);
	CHECK_STR(out, "abc");
	tui_text_fit(cjk, strlen(cjk), 10, 1, out, sizeof out);
	CHECK_STR(out, "????");
}

static void test_format(void)
{
	char out[256];
	double v[] = { 0, 1, 2, 4, 8 };
	tui_sparkline(v, 5, 0, 1, out, sizeof out);
	CHECK_STR(out, " _.:#");
	tui_sparkline(v, 5, 8, 0, out, sizeof out);
	CHECK_STR(out, " \u2581\u2582\u2584\u2588");
	tui_sparkline(v, 5, 16, 1, out, sizeof out);   /* explicit max halves them */
	CHECK_STR(out, " __.:");
	double z[] = { 0, 0 };
	tui_sparkline(z, 2, 0, 0, out, sizeof out);    /* all zero: blanks, no NaN */
	CHECK_STR(out, "  ");
	tui_bar(0.5, 8, 1, out, sizeof out);
	CHECK_STR(out, "####    ");
	tui_bar(1.5, 4, 1, out, sizeof out);
	CHECK_STR(out, "####");
	tui_bar(-1, 3, 0, out, sizeof out);
	CHECK_STR(out, "   ");
	tui_bar(0.5625, 2, 0, out, sizeof out);        /* 9/16 = one cell + an eighth */
	CHECK_STR(out, "\u2588\u258F");
	CHECK(tui_text_width(out, strlen(out), 0) == 2);
	tui_bar(0.3, 10, 0, out, sizeof out);
	CHECK(tui_text_width(out, strlen(out), 0) == 10);
	char small[4];
	tui_bar(1, 10, 1, small, sizeof small);        /* truncates, stays terminated */
	CHECK(strlen(small) == 3);
	tui_fmt_bytes(0, out, sizeof out);
	CHECK_STR(out, "0 B");
	tui_fmt_bytes(1536, out, sizeof out);
	CHECK_STR(out, "1.50 KiB");
	tui_fmt_bytes(372.0 * 1024 * 1024 * 1024, out, sizeof out);
	CHECK_STR(out, "372 GiB");
	tui_fmt_bytes(19.5 * 1024 * 1024, out, sizeof out);
	CHECK_STR(out, "19.5 MiB");
}

static void test_theme(void)
{
	CHECK(tui_theme_pick(NULL, 1, 256) == TUI_COLOR256);
	CHECK(tui_theme_pick("", 1, 256) == TUI_COLOR256);   /* empty NO_COLOR is unset */
	CHECK(tui_theme_pick("1", 1, 256) == TUI_MONO);
	CHECK(tui_theme_pick(NULL, 1, 8) == TUI_COLOR8);
	CHECK(tui_theme_pick(NULL, 1, 16) == TUI_COLOR8);
	CHECK(tui_theme_pick(NULL, 0, 0) == TUI_MONO);
	CHECK(tui_theme_pick(NULL, 1, 2) == TUI_MONO);
}

static void test_affinity(void)
{
	/* three groups of co-activated experts, ids interleaved: the order
	 * must place each group contiguously */
	enum { E = 12 };
	static const int group[E] = { 0, 1, 2, 0, 1, 2, 0, 1, 2, 0, 1, 2 };
	tui_affinity a;
	CHECK(tui_affinity_init(&a, 2, E) == 0);
	uint64_t tok = 0;
	for (int rep = 0; rep < 50; rep++)
		for (int g = 0; g < 3; g++) {
			int ex[4], n = 0;
			for (int e = 0; e < E; e++)
				if (group[e] == g)
					ex[n++] = e;
			tui_affinity_note(&a, 1, tok, ex, n);
			tui_affinity_note(&a, 1, tok, ex, n);   /* same token: counted once */
			tok++;
		}
	CHECK(a.co[1 * E * E + 0 * E + 3] == 50);
	tui_affinity_reorder(&a);
	const int *ord = a.order + E;
	int seen[E] = { 0 };
	for (int i = 0; i < E; i++)
		seen[ord[i]]++;
	for (int i = 0; i < E; i++)
		CHECK(seen[i] == 1);
	for (int blk = 0; blk < 3; blk++)
		for (int i = 1; i < 4; i++)
			CHECK(group[ord[blk * 4 + i]] == group[ord[blk * 4]]);
	/* a layer with no data keeps a valid permutation */
	for (int i = 0; i < E; i++)
		CHECK(a.order[i] >= 0 && a.order[i] < E);
	/* out-of-range ids are ignored */
	int bad[2] = { -1, 99 };
	tui_affinity_note(&a, 0, 1000, bad, 2);
	tui_affinity_note(&a, 7, 1000, bad, 2);
	tui_affinity_free(&a);
}

static void test_log(void)
{
	char dir[] = "/tmp/tui_unit.XXXXXX", path[256], line[TUI_LOG_WIDTH];
	CHECK(mkdtemp(dir) != NULL);
	snprintf(path, sizeof path, "%s/colitop.log", dir);
	tui_log l;
	CHECK(tui_log_init(&l, path) == 0);
	unsigned v0 = tui_log_version(&l);
	for (int i = 0; i < TUI_LOG_LINES + 5; i++)
		tui_log_add(&l, 2, "line %d\nsecond part", i);
	CHECK(tui_log_version(&l) != v0);
	CHECK(tui_log_count(&l) == TUI_LOG_LINES);
	CHECK(tui_log_get(&l, 0, line, sizeof line) == 2);
	CHECK(strstr(line, "line 5 second part") != NULL);   /* oldest kept, flattened */
	CHECK(tui_log_get(&l, TUI_LOG_LINES, line, sizeof line) == -1);
	tui_log_free(&l);
	FILE *f = fopen(path, "r");
	CHECK(f != NULL);
	int lines = 0, c;
	while (f && (c = fgetc(f)) != EOF)
		lines += c == '\n';
	if (f)
		fclose(f);
	CHECK(lines == TUI_LOG_LINES + 5);
	unlink(path);
	rmdir(dir);
}

/* The transcript survives a save and a reopen (what a restarted colitop
 * shows), in the format coli chat shares. */
static void test_chat_transcript(void)
{
	char dir[] = "/tmp/tui_unit_chat.XXXXXX", path[300];
	coli_err err = { 0 };
	tui_chat c;
	CHECK(mkdtemp(dir) != NULL);
	CHECK(tui_chat_open(&c, dir, "bad/name", 0, &err) < 0);
	CHECK(tui_chat_open(&c, dir, "s1", 0, &err) == 0);
	CHECK(c.n == 0);
	tui_chat_note(&c, TUI_MSG_USER, "hello \xe4\xb8\xad");
	tui_chat_note(&c, TUI_MSG_ASSISTANT, "line one\nline two");
	tui_chat_note(&c, TUI_MSG_ERROR, "oops %d", 42);
	c.last_finish = COLI_FINISH_LENGTH;
	CHECK(tui_chat_save(&c, &err) == 0);
	tui_chat_close(&c);
	CHECK(tui_chat_open(&c, dir, "s1", 5, &err) == 0);
	CHECK(c.n == 3 && c.kv_tokens == 5 && c.last_finish == COLI_FINISH_LENGTH);
	if (c.n == 3) {
		CHECK(c.msgs[0].role == TUI_MSG_USER && !strcmp(c.msgs[0].text.p, "hello \xe4\xb8\xad"));
		CHECK(c.msgs[1].role == TUI_MSG_ASSISTANT && !strcmp(c.msgs[1].text.p, "line one\nline two"));
		CHECK(c.msgs[2].role == TUI_MSG_ERROR && !strcmp(c.msgs[2].text.p, "oops 42"));
	}
	tui_chat_close(&c);
	char name[64];
	tui_chat_default_name(name, sizeof name);
	CHECK(strlen(name) == strlen("chat-YYYYMMDD-HHMMSS") && !strncmp(name, "chat-", 5));
	snprintf(path, sizeof path, "%s/s1.chat.json", dir);
	CHECK(unlink(path) == 0);
	CHECK(rmdir(dir) == 0);
}

/* A thinking answer keeps its thinking and token count across a save and
 * a reopen; a file an older colitop wrote ("THINKING</think>ANSWER" in
 * content, no reasoning fields) loads split; a file without thinking
 * stays without it (and is written without the optional fields). */
static void test_chat_transcript_thinking(void)
{
	char dir[] = "/tmp/tui_unit_think.XXXXXX", path[300];
	coli_err err = { 0 };
	tui_chat c;
	CHECK(mkdtemp(dir) != NULL);
	CHECK(tui_chat_open(&c, dir, "t1", 0, &err) == 0);
	tui_chat_note(&c, TUI_MSG_USER, "why?");
	tui_chat_note(&c, TUI_MSG_ASSISTANT, "because");
	c.msgs[1].has_think = 1;
	c.msgs[1].think_tokens = 312;
	c.msgs[1].think.p = strdup("Let me see.\n\xe6\x80\x9d\xe8\x80\x83");
	c.msgs[1].think.len = c.msgs[1].think.cap = strlen(c.msgs[1].think.p);
	tui_chat_note(&c, TUI_MSG_USER, "again");
	tui_chat_note(&c, TUI_MSG_ASSISTANT, "%s", "");   /* thought, no answer yet (cut by length) */
	c.msgs[3].has_think = 1;
	c.msgs[3].think_tokens = 24;
	c.msgs[3].think.p = strdup("x");
	c.msgs[3].think.len = c.msgs[3].think.cap = 1;
	CHECK(tui_chat_has_think(&c));
	CHECK(tui_chat_save(&c, &err) == 0);
	tui_chat_close(&c);
	CHECK(tui_chat_open(&c, dir, "t1", 9, &err) == 0);
	CHECK(c.n == 4);
	if (c.n == 4) {
		CHECK(!c.msgs[0].has_think && !c.msgs[2].has_think);
		CHECK(c.msgs[1].has_think && c.msgs[1].think_tokens == 312 && !strcmp(c.msgs[1].text.p, "because"));
		CHECK(c.msgs[1].think.p && !strcmp(c.msgs[1].think.p, "Let me see.\n\xe6\x80\x9d\xe8\x80\x83"));
		CHECK(c.msgs[3].has_think && c.msgs[3].think_tokens == 24 && c.msgs[3].text.len == 0);
	}
	tui_chat_close(&c);

	/* what an older colitop (or coli chat) wrote */
	snprintf(path, sizeof path, "%s/old.chat.json", dir);
	FILE *f = fopen(path, "w");
	CHECK(f != NULL);
	if (f) {
		fputs("{\"format\": \"colitop-chat\", \"version\": 1, \"session\": \"old\", \"last_finish\": \"stop\","
		      " \"messages\": [{\"role\": \"user\", \"content\": \"a </think> b\"},"
		      " {\"role\": \"assistant\", \"content\": \"\\nhmm\\n</think>\\n\\nok\"},"
		      " {\"role\": \"assistant\", \"content\": \"<think>r1</think>a1\"},"
		      " {\"role\": \"assistant\", \"content\": \"plain\"}]}\n", f);
		fclose(f);
	}
	CHECK(tui_chat_open(&c, dir, "old", 0, &err) == 0);
	CHECK(c.n == 4 && c.last_finish == COLI_FINISH_STOP);
	if (c.n == 4) {
		/* a user's text is never split */
		CHECK(!c.msgs[0].has_think && !strcmp(c.msgs[0].text.p, "a </think> b"));
		CHECK(c.msgs[1].has_think && c.msgs[1].think_tokens == 0 && !strcmp(c.msgs[1].think.p, "hmm\n") &&
		      !strcmp(c.msgs[1].text.p, "ok"));
		CHECK(c.msgs[2].has_think && !strcmp(c.msgs[2].think.p, "r1") && !strcmp(c.msgs[2].text.p, "a1"));
		CHECK(!c.msgs[3].has_think && !strcmp(c.msgs[3].text.p, "plain"));
	}
	tui_chat_close(&c);
	/* saved again: the thinking is now stored beside the answer */
	f = fopen(path, "r");
	char buf[2048] = "";
	size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
	buf[n] = 0;
	if (f)
		fclose(f);
	CHECK(strstr(buf, "\"reasoning_content\": \"hmm\\n\"") != NULL);
	/* only the two answers that thought carry the field */
	int nr = 0;
	for (const char *q = buf; (q = strstr(q, "\"reasoning_content\"")) != NULL; q++)
		nr++;
	CHECK(nr == 2);
	CHECK(unlink(path) == 0);
	snprintf(path, sizeof path, "%s/t1.chat.json", dir);
	CHECK(unlink(path) == 0);
	CHECK(rmdir(dir) == 0);
}

int main(void)
{
	/* widths come from the C library under a UTF-8 locale, as in colitop */
	if (!setlocale(LC_CTYPE, "C.UTF-8") && !setlocale(LC_CTYPE, "en_US.UTF-8")) {
		const char *ci = getenv("CI");
		fprintf(stderr, "tui_unit: no UTF-8 locale; %s\n", ci && !strcmp(ci, "true") ? "failing (CI)" : "skipping");
		return ci && !strcmp(ci, "true") ? 1 : 77;
	}
	test_layout();
	test_edit();
	test_edit_model();
	test_wrap();
	test_format();
	test_theme();
	test_affinity();
	test_log();
	test_chat_transcript();
	test_chat_transcript_thinking();
	return test_summary(__FILE__);
}
