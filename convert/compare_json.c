/* compare_json.c - the JSON in a model's answer, and the path-by-path diff
 * of two answers (local against the remote reference).
 *
 * Paths are JSONPath-like: "$" the root, ".key" for identifier keys,
 * "[\"key\"]" for any other key, "[i]" for array elements. Leaves are
 * scalars, empty objects and empty arrays. Two numbers are equal when their
 * values are (1 and 1.0 agree: models write either); everything else must
 * be identical, so "1" and 1 differ. */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "compare.h"
#include "util_array.h"

static json_t *parse_span(const char *s, size_t n)
{
	json_t *j = json_loadb(s, n, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
	if (j && !json_is_object(j) && !json_is_array(j)) {
		json_decref(j);
		return NULL;   /* a bare "3" or string is no structured answer */
	}
	return j;
}

/* ```json\n...\n``` or ```\n...\n``` anywhere in the text. */
static json_t *from_fence(const char *t, size_t len)
{
	const char *end = t + len, *p = t;
	while ((p = memmem(p, (size_t)(end - p), "```", 3))) {
		const char *body = p + 3;
		while (body < end && *body != '\n')
			body++;   /* skip the info string ("json", "JSON", ...) */
		const char *close = body < end ? memmem(body, (size_t)(end - body), "```", 3) : NULL;
		if (!close)
			return NULL;
		json_t *j = parse_span(body, (size_t)(close - body));
		if (j)
			return j;
		p = close + 3;
	}
	return NULL;
}

json_t *cmp_json_extract(const char *text, size_t len)
{
	if (!text)
		return NULL;
	json_t *j = parse_span(text, len);
	if (j)
		return j;
	if ((j = from_fence(text, len)))
		return j;
	/* prose around it: the first opening bracket to the last closing one */
	const char *o = NULL;
	for (size_t i = 0; i < len && !o; i++)
		if (text[i] == '{' || text[i] == '[')
			o = text + i;
	if (!o)
		return NULL;
	char close = *o == '{' ? '}' : ']';
	for (const char *c = text + len; c > o; c--)
		if (c[-1] == close && (j = parse_span(o, (size_t)(c - o))))
			return j;
	return NULL;
}

void cmp_diffs_free(cmp_diff *d, int n)
{
	for (int i = 0; i < n; i++) {
		free(d[i].path);
		free(d[i].local);
		free(d[i].remote);
	}
	free(d);
}

typedef struct diff_ctx {
	cmp_diff *d;
	int n, cap, oom;
	cmp_leaf_fn leaf;
	void *leaf_ctx;
} diff_ctx;

static char *dump(json_t *v)
{
	return v ? json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY | JSON_SORT_KEYS) : NULL;
}

static void add(diff_ctx *c, const char *path, int kind, json_t *l, json_t *r)
{
	if (util_array_grow(&c->d, &c->cap, c->n + 1, 16)) {
		c->oom = 1;
		return;
	}
	cmp_diff *e = &c->d[c->n++];
	e->path = strdup(path);
	e->kind = kind;
	e->local = dump(l);
	e->remote = dump(r);
	if (!e->path || (l && !e->local) || (r && !e->remote))
		c->oom = 1;
}

static int is_leaf(json_t *v)
{
	return !(json_is_object(v) && json_object_size(v)) && !(json_is_array(v) && json_array_size(v));
}

static int leaf_equal(json_t *a, json_t *b)
{
	if (json_is_number(a) && json_is_number(b))
		return json_number_value(a) == json_number_value(b);
	return json_equal(a, b);
}

static void key_path(char *out, size_t cap, const char *base, const char *key)
{
	int ident = (isalpha((unsigned char)key[0]) || key[0] == '_');
	for (const char *k = key; ident && *k; k++)
		ident = isalnum((unsigned char)*k) || *k == '_';
	if (ident) {
		snprintf(out, cap, "%s.%s", base, key);
		return;
	}
	json_t *s = json_string(key);
	char *q = s ? json_dumps(s, JSON_ENCODE_ANY) : NULL;
	snprintf(out, cap, "%s[%s]", base, q ? q : "?");
	free(q);
	json_decref(s);
}

/* Every leaf under v, reported as missing (v is remote's) or extra. */
static void one_side(diff_ctx *c, const char *path, json_t *v, int kind)
{
	char sub[1024];
	if (is_leaf(v)) {
		add(c, path, kind, kind == CMP_DIFF_EXTRA ? v : NULL, kind == CMP_DIFF_MISSING ? v : NULL);
		if (c->leaf)
			c->leaf(c->leaf_ctx, path, 0);
		return;
	}
	if (json_is_object(v)) {
		const char *k;
		json_t *x;
		json_object_foreach(v, k, x) {
			key_path(sub, sizeof sub, path, k);
			one_side(c, sub, x, kind);
		}
	} else {
		for (size_t i = 0; i < json_array_size(v); i++) {
			snprintf(sub, sizeof sub, "%s[%zu]", path, i);
			one_side(c, sub, json_array_get(v, i), kind);
		}
	}
}

static void walk(diff_ctx *c, const char *path, json_t *l, json_t *r)
{
	char sub[1024];
	if (json_is_object(l) && json_is_object(r) && json_object_size(l) && json_object_size(r)) {
		const char *k;
		json_t *x;
		json_object_foreach(r, k, x) {
			key_path(sub, sizeof sub, path, k);
			json_t *y = json_object_get(l, k);
			if (y)
				walk(c, sub, y, x);
			else
				one_side(c, sub, x, CMP_DIFF_MISSING);
		}
		json_object_foreach(l, k, x) {
			if (json_object_get(r, k))
				continue;
			key_path(sub, sizeof sub, path, k);
			one_side(c, sub, x, CMP_DIFF_EXTRA);
		}
		return;
	}
	if (json_is_array(l) && json_is_array(r) && json_array_size(l) && json_array_size(r)) {
		size_t nl = json_array_size(l), nr = json_array_size(r);
		for (size_t i = 0; i < (nl > nr ? nl : nr); i++) {
			snprintf(sub, sizeof sub, "%s[%zu]", path, i);
			if (i < nl && i < nr)
				walk(c, sub, json_array_get(l, i), json_array_get(r, i));
			else if (i < nr)
				one_side(c, sub, json_array_get(r, i), CMP_DIFF_MISSING);
			else
				one_side(c, sub, json_array_get(l, i), CMP_DIFF_EXTRA);
		}
		return;
	}
	/* leaves, or a structure against a leaf / the other kind of structure */
	int eq = is_leaf(l) && is_leaf(r) && leaf_equal(l, r);
	if (!eq)
		add(c, path, CMP_DIFF_CHANGED, l, r);
	if (c->leaf)
		c->leaf(c->leaf_ctx, path, eq);
}

int cmp_json_diff(json_t *local, json_t *remote, cmp_diff **d, int *n, cmp_leaf_fn leaf,
		  void *ctx)
{
	diff_ctx c = { .d = *d, .n = *n, .cap = *n, .leaf = leaf, .leaf_ctx = ctx };
	walk(&c, "$", local, remote);
	*d = c.d;
	*n = c.n;
	return c.oom ? -ENOMEM : 0;
}

void cmp_fields_note(void *arg, const char *path, int equal)
{
	cmp_fields *fs = arg;
	for (int i = 0; i < fs->n; i++)
		if (!strcmp(fs->f[i].path, path)) {
			fs->f[i].total++;
			fs->f[i].agree += equal != 0;
			return;
		}
	if (util_array_grow(&fs->f, &fs->cap, fs->n + 1, 32))
		return;
	char *p = strdup(path);
	if (!p)
		return;
	fs->f[fs->n++] = (cmp_field){ .path = p, .agree = equal != 0, .total = 1 };
}

void cmp_fields_free(cmp_fields *fs)
{
	if (!fs)
		return;
	for (int i = 0; i < fs->n; i++)
		free(fs->f[i].path);
	free(fs->f);
	memset(fs, 0, sizeof *fs);
}
