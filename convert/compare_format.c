/* compare_format.c - `coli compare` output: an aligned table (terminals),
 * a markdown table (pipes, pasted into issues and docs), CSV and JSONL
 * (scripts). A figure that was not measured is "n/a" in the tables, an
 * empty CSV cell and null in JSONL, never a fake 0.
 *
 * Rates are over the generation phase, from the first content to the end
 * (total - TTFT): TTFT already shows the wait, and a rate over the total
 * would count the prompt's processing twice. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "compare.h"
#include "util_array.h"

#define MAX_COLS 16

/* ---- a small table printer ---- */

typedef struct tbl {
	int ncols, nrows, cap;
	const char *head[MAX_COLS];
	int right[MAX_COLS];
	char **cells;              /* nrows * ncols, malloc'd strings */
} tbl;

static void tbl_add(tbl *t, char **row)
{
	/* capacity in rows, one element a row of ncols cells */
	if (util_array_grow_int(&t->cells, &t->cap, (size_t)t->nrows + 1, (size_t)t->ncols * sizeof *t->cells,
				16)) {
		for (int i = 0; i < t->ncols; i++)
			free(row[i]);
		return;
	}
	memcpy(t->cells + (size_t)t->nrows * (size_t)t->ncols, row, (size_t)t->ncols * sizeof *row);
	t->nrows++;
}

/* Display width: UTF-8 characters (ids may hold non-ASCII). */
static int width(const char *s)
{
	int w = 0;
	for (; *s; s++)
		w += ((unsigned char)*s & 0xC0) != 0x80;
	return w;
}

static void md_cell(FILE *f, const char *s)
{
	for (; *s; s++) {
		if (*s == '|')
			fputs("\\|", f);
		else if (*s == '\n')
			fputc(' ', f);
		else
			fputc(*s, f);
	}
}

static void tbl_print(FILE *f, int fmt, tbl *t)
{
	int w[MAX_COLS];
	for (int c = 0; c < t->ncols; c++) {
		w[c] = width(t->head[c]);
		for (int r = 0; r < t->nrows; r++) {
			int x = width(t->cells[r * t->ncols + c]);
			w[c] = x > w[c] ? x : w[c];
		}
	}
	for (int r = -1; r < t->nrows; r++) {
		if (fmt == CMP_FMT_MARKDOWN)
			fputs("|", f);
		/* no trailing blanks: an aligned row ends at its last non-empty cell */
		int last = t->ncols - 1;
		while (fmt != CMP_FMT_MARKDOWN && r >= 0 && last > 0 && !t->cells[r * t->ncols + last][0])
			last--;
		for (int c = 0; c <= last; c++) {
			const char *s = r < 0 ? t->head[c] : t->cells[r * t->ncols + c];
			int pad = w[c] - width(s);
			if (fmt == CMP_FMT_MARKDOWN) {
				fputc(' ', f);
				md_cell(f, s);
				fprintf(f, " |");
				continue;
			}
			if (c)
				fputs("  ", f);
			if (t->right[c])
				fprintf(f, "%*s%s", pad, "", s);
			else if (c < last)
				fprintf(f, "%s%*s", s, pad, "");
			else
				fputs(s, f);
		}
		fputc('\n', f);
		if (r < 0 && fmt == CMP_FMT_MARKDOWN) {
			fputs("|", f);
			for (int c = 0; c < t->ncols; c++)
				fputs(t->right[c] ? " ---: |" : " --- |", f);
			fputc('\n', f);
		}
	}
	for (int i = 0; i < t->nrows * t->ncols; i++)
		free(t->cells[i]);
	free(t->cells);
	t->cells = NULL;
	t->nrows = t->cap = 0;
}

static char *fmt_s(const char *fmt, double v)
{
	char *s = NULL;
	return asprintf(&s, fmt, v) < 0 ? NULL : s;
}

/* ---- the figures of a row ---- */

typedef struct figs {
	int ttft_ok, rate_ok, tok_ok, hit_ok, bytes_ok;
	double ttft_ms, cps, tps, hit, mb;
} figs;

static void row_figs(const cmp_row *w, figs *g)
{
	const cmp_result *r = w->r;
	memset(g, 0, sizeof *g);
	g->ttft_ok = r->ttft_s >= 0;
	g->ttft_ms = r->ttft_s * 1000;
	double gen = r->total_s - r->ttft_s;
	g->rate_ok = r->ok && g->ttft_ok && gen > 0;
	g->cps = g->rate_ok ? r->chars / gen : 0;
	g->tok_ok = g->rate_ok && r->usage_valid;
	g->tps = g->tok_ok ? r->completion_tokens / gen : 0;
	g->hit_ok = r->xstats_valid && r->hit_valid;
	g->hit = r->hit_rate * 100;
	g->bytes_ok = r->xstats_valid;
	g->mb = r->bytes_read / 1e6;
}

static char *cell(int ok, const char *fmt, double v)
{
	return ok ? fmt_s(fmt, v) : strdup("n/a");
}

static void rows_table(FILE *f, int fmt, const cmp_row *rows, int n)
{
	static const char *head[] = { "round", "id", "side", "status", "ttft ms", "total s", "chars",
				      "chars/s", "tokens", "tok/s", "hit", "MB read", "json", "agree" };
	static const int right[] = { 1, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 0, 1 };
	tbl t = { .ncols = n && rows[0].json ? 14 : 12 };
	for (int c = 0; c < t.ncols; c++) {
		t.head[c] = head[c];
		t.right[c] = right[c];
	}
	for (int i = 0; i < n; i++) {
		const cmp_row *w = &rows[i];
		const cmp_result *r = w->r;
		figs g;
		row_figs(w, &g);
		char *c[14];
		char st[32];
		if (r->ok)
			snprintf(st, sizeof st, "ok");
		else if (r->http_status && r->http_status != 200)
			snprintf(st, sizeof st, "FAIL %d", r->http_status);
		else
			snprintf(st, sizeof st, "FAIL");
		c[0] = fmt_s("%.0f", w->round);
		c[1] = strdup(w->id);
		c[2] = strdup(w->side);
		c[3] = strdup(st);
		c[4] = cell(g.ttft_ok, "%.0f", g.ttft_ms);
		c[5] = fmt_s("%.2f", r->total_s);
		c[6] = cell(r->ok, "%.0f", (double)r->chars);
		c[7] = cell(g.rate_ok, "%.1f", g.cps);
		c[8] = cell(r->usage_valid, "%.0f", (double)r->completion_tokens);
		c[9] = cell(g.tok_ok, "%.1f", g.tps);
		/* only the local side has expert figures; blank for the remote */
		int local = !strcmp(w->side, "local");
		c[10] = g.hit_ok ? fmt_s("%.1f%%", g.hit) : strdup(local ? "n/a" : "");
		c[11] = g.bytes_ok ? fmt_s("%.1f", g.mb) : strdup(local ? "n/a" : "");
		if (t.ncols == 14) {
			c[12] = strdup(!r->ok ? "" : w->json_parsed ? "yes" : "no");
			char *a = NULL;
			if (!strcmp(w->side, "local") && w->json_fields > 0 &&
			    asprintf(&a, "%d/%d", w->json_agree, w->json_fields) < 0)
				a = NULL;
			c[13] = a ? a : strdup("");
		}
		tbl_add(&t, c);
	}
	tbl_print(f, fmt, &t);
}

static json_t *num_or_null(int ok, double v)
{
	return ok ? json_real(v) : json_null();
}

static json_t *row_json(const cmp_row *w)
{
	const cmp_result *r = w->r;
	figs g;
	row_figs(w, &g);
	json_t *o = json_pack("{s:s, s:i, s:s, s:s, s:b, s:i}", "type", "request", "round", w->round,
			      "id", w->id, "side", w->side, "ok", r->ok, "http_status", r->http_status);
	if (!o)
		return NULL;
	json_object_set_new(o, "ttft_ms", num_or_null(g.ttft_ok, g.ttft_ms));
	json_object_set_new(o, "total_s", json_real(r->total_s));
	json_object_set_new(o, "chars", r->ok ? json_integer(r->chars) : json_null());
	json_object_set_new(o, "chars_per_s", num_or_null(g.rate_ok, g.cps));
	json_object_set_new(o, "prompt_tokens", r->usage_valid ? json_integer(r->prompt_tokens) : json_null());
	json_object_set_new(o, "completion_tokens",
			    r->usage_valid ? json_integer(r->completion_tokens) : json_null());
	json_object_set_new(o, "tokens_per_s", num_or_null(g.tok_ok, g.tps));
	json_object_set_new(o, "expert_hit_rate", num_or_null(g.hit_ok, r->hit_rate));
	json_object_set_new(o, "bytes_read", num_or_null(g.bytes_ok, r->bytes_read));
	if (w->json) {
		json_object_set_new(o, "json_parsed", json_boolean(w->json_parsed));
		json_object_set_new(o, "json_fields", json_integer(w->json_fields));
		json_object_set_new(o, "json_agree", json_integer(w->json_agree));
	}
	json_object_set_new(o, "error", r->ok ? json_null() : json_string(r->error));
	return o;
}

static void csv_cell(FILE *f, const char *s, int last)
{
	if (strpbrk(s, ",\"\n\r")) {
		fputc('"', f);
		for (; *s; s++) {
			if (*s == '"')
				fputc('"', f);
			fputc(*s, f);
		}
		fputc('"', f);
	} else {
		fputs(s, f);
	}
	fputc(last ? '\n' : ',', f);
}

static void rows_csv(FILE *f, const cmp_row *rows, int n)
{
	static const char *cols[] = { "round", "id", "side", "ok", "http_status", "ttft_ms", "total_s",
				      "chars", "chars_per_s", "prompt_tokens", "completion_tokens",
				      "tokens_per_s", "expert_hit_rate", "bytes_read", "json_parsed",
				      "json_fields", "json_agree", "error" };
	int nc = sizeof cols / sizeof cols[0];
	for (int c = 0; c < nc; c++)
		csv_cell(f, cols[c], c + 1 == nc);
	for (int i = 0; i < n; i++) {
		json_t *o = row_json(&rows[i]);
		for (int c = 0; c < nc; c++) {
			json_t *v = json_object_get(o, cols[c]);
			char buf[64];
			const char *s = "";
			if (json_is_string(v)) {
				s = json_string_value(v);
			} else if (json_is_integer(v)) {
				snprintf(buf, sizeof buf, "%lld", (long long)json_integer_value(v));
				s = buf;
			} else if (json_is_real(v)) {
				snprintf(buf, sizeof buf, "%.6g", json_real_value(v));
				s = buf;
			} else if (json_is_boolean(v)) {
				s = json_is_true(v) ? "true" : "false";
			}
			csv_cell(f, s, c + 1 == nc);
		}
		json_decref(o);
	}
}

static void put_json(FILE *f, json_t *o)
{
	char *s = o ? json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
	if (s)
		fprintf(f, "%s\n", s);
	free(s);
	json_decref(o);
}

void cmp_format_rows(FILE *f, int fmt, const cmp_row *rows, int n)
{
	if (fmt == CMP_FMT_CSV)
		rows_csv(f, rows, n);
	else if (fmt == CMP_FMT_JSONL)
		for (int i = 0; i < n; i++)
			put_json(f, row_json(&rows[i]));
	else
		rows_table(f, fmt, rows, n);
}

void cmp_format_errors(FILE *f, int fmt, const cmp_row *rows, int n)
{
	if (fmt != CMP_FMT_TABLE && fmt != CMP_FMT_MARKDOWN)
		return;
	for (int i = 0; i < n; i++)
		if (!rows[i].r->ok)
			fprintf(f, "%sround %d, %s, %s: %s\n", fmt == CMP_FMT_MARKDOWN ? "- " : "",
				rows[i].round, rows[i].id, rows[i].side, rows[i].r->error);
}

static const char *kind_name(int k)
{
	switch (k) {
	case CMP_DIFF_MISSING: return "missing";
	case CMP_DIFF_EXTRA: return "extra";
	case CMP_DIFF_CHANGED: return "changed";
	default: return "unparsed";
	}
}

/* Long values are cut in the tables (the JSONL keeps them whole). */
static char *short_val(const char *v)
{
	if (!v)
		return strdup("-");
	char *s = NULL;
	if (strlen(v) > 60)
		return asprintf(&s, "%.57s...", v) < 0 ? NULL : s;
	return strdup(v);
}

void cmp_format_diffs(FILE *f, int fmt, const cmp_diff_row *rows, int n)
{
	if (fmt == CMP_FMT_CSV)
		return;
	if (fmt == CMP_FMT_JSONL) {
		for (int i = 0; i < n; i++) {
			const cmp_diff *d = rows[i].d;
			json_t *o = json_pack("{s:s, s:i, s:s, s:s, s:s}", "type", "json_diff", "round",
					      rows[i].round, "id", rows[i].id, "path", d->path, "kind",
					      kind_name(d->kind));
			if (o) {
				json_object_set_new(o, "local", d->local ? json_string(d->local) : json_null());
				json_object_set_new(o, "remote", d->remote ? json_string(d->remote) : json_null());
			}
			put_json(f, o);
		}
		return;
	}
	fprintf(f, "\n%sJSON differences, local against remote: %d\n",
		fmt == CMP_FMT_MARKDOWN ? "### " : "", n);
	if (!n)
		return;
	fputc('\n', f);
	tbl t = { .ncols = 6, .head = { "round", "id", "path", "kind", "local", "remote" },
		  .right = { 1 } };
	for (int i = 0; i < n; i++) {
		const cmp_diff *d = rows[i].d;
		char *c[6] = { fmt_s("%.0f", rows[i].round), strdup(rows[i].id), strdup(d->path),
			       strdup(kind_name(d->kind)), short_val(d->local), short_val(d->remote) };
		tbl_add(&t, c);
	}
	tbl_print(f, fmt, &t);
}

void cmp_format_fields(FILE *f, int fmt, const cmp_fields *fs)
{
	if (fmt == CMP_FMT_CSV)
		return;
	if (fmt == CMP_FMT_JSONL) {
		for (int i = 0; i < fs->n; i++)
			put_json(f, json_pack("{s:s, s:s, s:i, s:i}", "type", "field", "path",
					      fs->f[i].path, "agree", fs->f[i].agree, "total",
					      fs->f[i].total));
		return;
	}
	fprintf(f, "\n%sAgreement per field\n\n", fmt == CMP_FMT_MARKDOWN ? "### " : "");
	if (!fs->n) {
		fprintf(f, "No field was compared: no prompt got JSON from both sides.\n");
		return;
	}
	tbl t = { .ncols = 4, .head = { "field", "agree", "of", "rate" }, .right = { 0, 1, 1, 1 } };
	for (int i = 0; i < fs->n; i++) {
		const cmp_field *x = &fs->f[i];
		char *c[4] = { strdup(x->path), fmt_s("%.0f", x->agree), fmt_s("%.0f", x->total),
			       fmt_s("%.0f%%", x->total ? 100.0 * x->agree / x->total : 0) };
		tbl_add(&t, c);
	}
	tbl_print(f, fmt, &t);
}
