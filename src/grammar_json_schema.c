/* grammar_json_schema.c - a JSON Schema subset compiled to grammar nodes.
 *
 * Supported (everything else is an error naming the keyword, never ignored):
 *   type (a name or a list), properties, required, additionalProperties
 *   (true/false/schema), minProperties/maxProperties (with
 *   additionalProperties false), items (schema/false), prefixItems, minItems,
 *   maxItems, enum, const, anyOf, oneOf (read as anyOf: its alternatives must
 *   not overlap), local $ref into $defs/definitions or "#", minLength,
 *   maxLength, format (date, date-time, time, uuid, uri, iri, email,
 *   hostname, ipv4, ipv6 enforced; any other format, or one beside pattern
 *   or a length, is an annotation), pattern (the subset of
 *   grammar_regex.c), minimum/maximum/exclusiveMinimum/exclusiveMaximum on
 *   integers and numbers (exact; grammar.c checks them digit by digit). Annotations (title, description, default, examples,
 *   $schema, $id, $comment, deprecated, readOnly, writeOnly) are accepted.
 *   grammar_schema_prep.c first rewrites allOf, anyOf/oneOf beside other
 *   keywords and propertyNames into these.
 * Choices written down:
 *   - without `type`, the type is inferred from the keywords (properties ->
 *     object ...); none at all means any JSON value;
 *   - `enum`/`const` decide alone (the values are emitted as compact JSON);
 *   - a required name absent from `properties` is declared with the
 *     additionalProperties schema;
 *   - object keys never contain backslash escapes, and duplicate keys are
 *     refused, so what the model writes reads back the same everywhere. */
#include "config.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdint.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grammar_impl.h"
#include "util_array.h"

typedef struct memo {
	const json_t *schema;
	int node;
} memo;

typedef struct cctx {
	coli_grammar *g;
	json_t *root;
	memo *memo;
	int n_memo, cap_memo;
	int depth;
	coli_err *err;
} cctx;

static const char *const annotations[] = {
	"title", "description", "default", "examples", "$schema", "$id", "$comment", "deprecated",
	"readOnly", "writeOnly", "$defs", "definitions", NULL,
};

static const char *const kw_object[] = { "properties", "required", "additionalProperties", "minProperties",
					 "maxProperties", NULL };
static const char *const kw_array[] = { "items", "prefixItems", "minItems", "maxItems", NULL };
static const char *const kw_string[] = { "minLength", "maxLength", "pattern", "format", NULL };
static const char *const kw_numeric[] = { "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", NULL };
static const char *const kw_other[] = { "type", "enum", "const", "anyOf", "oneOf", "$ref", NULL };

static int in_list(const char *const *l, const char *k)
{
	for (; *l; l++)
		if (!strcmp(*l, k))
			return 1;
	return 0;
}

static coli_grammar *grammar_alloc(void)
{
	coli_grammar *g = calloc(1, sizeof *g);
	if (g) {
		g->any = -1;
		atomic_init(&g->refs, 1);
		grammar_note_compiled();
	}
	return g;
}

/* Add a node (zeroed, given kind); returns its index or -ENOMEM. */
static int grammar_node_add(coli_grammar *g, int kind)
{
	/* at most 65535 nodes: the doubling past 32768 is refused */
	if (g->n_nodes == g->cap && g->cap > 65535 / 2)
		return -E2BIG;
	if (util_array_grow(&g->nodes, &g->cap, g->n_nodes + 1, 16))
		return -ENOMEM;
	gnode *n = &g->nodes[g->n_nodes];
	memset(n, 0, sizeof *n);
	n->kind = kind;
	n->additional = -1;
	n->items = -1;
	n->max_items = -1;
	n->max_len = -1;
	n->max_props = -1;
	n->re = -1;
	n->min_int = INT64_MIN;
	n->max_int = INT64_MAX;
	return g->n_nodes++;
}

static int lits_add(gnode *n, const char *text)
{
	/* an enum may list thousands of values: double, do not add one */
	int cap_l = n->cap_lits, cap_ll = n->cap_lits;
	if (util_array_grow(&n->lits, &cap_l, n->n_lits + 1, 4) ||
	    util_array_grow(&n->lit_len, &cap_ll, n->n_lits + 1, 4))
		return -ENOMEM;
	n->cap_lits = cap_ll;
	if (!(n->lits[n->n_lits] = strdup(text)))
		return -ENOMEM;
	n->lit_len[n->n_lits++] = (uint32_t)strlen(text);
	return 0;
}

static int alts_add(coli_grammar *g, int node, int alt)
{
	gnode *n = &g->nodes[node];
	if (util_array_grow(&n->alts, &n->cap_alts, n->n_alts + 1, 4))
		return -ENOMEM;
	n->alts[n->n_alts++] = alt;
	return 0;
}

/* The node accepting any JSON value (built on first use). */
static int grammar_node_any(coli_grammar *g)
{
	if (g->any >= 0)
		return g->any;
	int any = grammar_node_add(g, GN_ANYOF);
	if (any < 0)
		return any;
	g->any = any;
	int obj = grammar_node_add(g, GN_OBJECT), arr = grammar_node_add(g, GN_ARRAY);
	int str = grammar_node_add(g, GN_STRING), num = grammar_node_add(g, GN_NUMBER);
	int lit = grammar_node_add(g, GN_LITS);
	if (obj < 0 || arr < 0 || str < 0 || num < 0 || lit < 0)
		return -ENOMEM;
	g->nodes[obj].additional = any;
	g->nodes[arr].items = any;
	if (lits_add(&g->nodes[lit], "true") || lits_add(&g->nodes[lit], "false") ||
	    lits_add(&g->nodes[lit], "null"))
		return -ENOMEM;
	int parts[] = { obj, arr, str, num, lit };
	for (int i = 0; i < 5; i++)
		if (alts_add(g, any, parts[i]))
			return -ENOMEM;
	return any;
}

static int compile(cctx *c, json_t *s, const char *path);

static int oom(cctx *c)
{
	return coli_err_set(c->err, -ENOMEM, "out of memory compiling a JSON schema");
}

static int get_count(cctx *c, json_t *s, const char *key, const char *path, int *out)
{
	json_t *v = json_object_get(s, key);
	if (!v)
		return 0;
	if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) > 1000000)
		return coli_err_set(c->err, -EINVAL, "%s.%s: must be a non-negative integer", path, key);
	*out = (int)json_integer_value(v);
	return 0;
}

/* Local references only: "#", "#/$defs/NAME", "#/definitions/NAME". */
static int resolve_ref(cctx *c, json_t *s, const char *path, json_t **out)
{
	json_t *r = json_object_get(s, "$ref");
	if (!json_is_string(r))
		return coli_err_set(c->err, -EINVAL, "%s.$ref: must be a string", path);
	const char *ref = json_string_value(r);
	if (!strcmp(ref, "#")) {
		*out = c->root;
		return 0;
	}
	const char *name = NULL;
	json_t *defs = NULL;
	if (!strncmp(ref, "#/$defs/", 8)) {
		defs = json_object_get(c->root, "$defs");
		name = ref + 8;
	} else if (!strncmp(ref, "#/definitions/", 14)) {
		defs = json_object_get(c->root, "definitions");
		name = ref + 14;
	}
	if (!name)
		return coli_err_set(c->err, -EINVAL, "%s.$ref: only local references (#, #/$defs/NAME, "
				    "#/definitions/NAME) are supported, not \"%s\"", path, ref);
	json_t *t = defs ? json_object_get(defs, name) : NULL;
	if (!t)
		return coli_err_set(c->err, -EINVAL, "%s.$ref: \"%s\" does not exist", path, ref);
	*out = t;
	return 0;
}

static int compile_lits(cctx *c, json_t *s, const char *path, int node)
{
	json_t *e = json_object_get(s, "enum"), *k = json_object_get(s, "const");
	if (e && k)
		return coli_err_set(c->err, -EINVAL, "%s: enum and const together are not supported", path);
	if (e && (!json_is_array(e) || json_array_size(e) == 0))
		return coli_err_set(c->err, -EINVAL, "%s.enum: must be a non-empty array", path);
	if (e && json_array_size(e) > GRAMMAR_MAX_LITS)
		return coli_err_set(c->err, -EINVAL, "%s.enum: more than %d values are not supported", path,
				    GRAMMAR_MAX_LITS);
	size_t n = e ? json_array_size(e) : 1;
	for (size_t i = 0; i < n; i++) {
		json_t *v = e ? json_array_get(e, i) : k;
		char *text = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
		if (!text)
			return oom(c);
		int dup = 0;
		gnode *nd = &c->g->nodes[node];
		for (int j = 0; j < nd->n_lits; j++)
			dup |= !strcmp(nd->lits[j], text);
		int rc = dup ? 0 : lits_add(nd, text);
		free(text);
		if (rc)
			return oom(c);
	}
	return 0;
}

/* The value of additionalProperties or items (keyword `key` of the schema at
 * `path`): absent or true allows anything (the any node), false nothing
 * (-1), a schema its node; anything else is an error ending in `bad`.
 * Returns the node, -1, or a negative errno below -1. */
static int compile_bool_or_schema(cctx *c, json_t *v, const char *path, const char *key, const char *bad)
{
	char sub[1024];
	if (!v || json_is_true(v))
		return grammar_node_any(c->g);
	if (json_is_false(v))
		return -1;
	if (!json_is_object(v))
		return coli_err_set(c->err, -EINVAL, "%s.%s: %s", path, key, bad);
	grammar_path_sub(sub, sizeof sub, "%s.%s", path, key);
	return compile(c, v, sub);
}

/* minProperties/maxProperties, where the keys are the declared ones. */
static int compile_object_counts(cctx *c, json_t *s, const char *path, int node)
{
	gnode *nd = &c->g->nodes[node];
	if (get_count(c, s, "minProperties", path, &nd->min_props) ||
	    get_count(c, s, "maxProperties", path, &nd->max_props))
		return -EINVAL;
	nd = &c->g->nodes[node];
	if (nd->min_props == 0 && nd->max_props < 0)
		return 0;
	if (nd->additional >= 0)
		return coli_err_set(c->err, -EINVAL, "%s: minProperties/maxProperties are supported only with "
				    "additionalProperties false", path);
	int nreq = __builtin_popcountll(nd->required);
	if (nd->min_props > nd->n_props || (nd->max_props >= 0 && (nd->max_props < nd->min_props ||
								     nd->max_props < nreq)))
		return coli_err_set(c->err, -EINVAL, "%s: no object satisfies minProperties/maxProperties", path);
	/* a key chosen first could leave no room for a required one */
	if (nreq && nd->max_props >= 0 && nd->max_props < nd->n_props)
		return coli_err_set(c->err, -EINVAL, "%s: maxProperties below the number of properties together "
				    "with required is not supported", path);
	return 0;
}

static int compile_object(cctx *c, json_t *s, const char *path, int node)
{
	char sub[1024];
	json_t *props = json_object_get(s, "properties"), *req = json_object_get(s, "required");
	json_t *add = json_object_get(s, "additionalProperties");
	if (props && !json_is_object(props))
		return coli_err_set(c->err, -EINVAL, "%s.properties: must be an object", path);
	if (req && !json_is_array(req))
		return coli_err_set(c->err, -EINVAL, "%s.required: must be an array of names", path);
	int additional = compile_bool_or_schema(c, add, path, "additionalProperties",
						"must be a boolean or a schema");
	if (additional < -1)
		return additional == -ENOMEM ? oom(c) : additional;
	size_t n = (props ? json_object_size(props) : 0) + (req ? json_array_size(req) : 0);
	gnode *nd = &c->g->nodes[node];
	nd->names = calloc(n + 1, sizeof *nd->names);
	nd->name_len = calloc(n + 1, sizeof *nd->name_len);
	nd->prop = calloc(n + 1, sizeof *nd->prop);
	if (!nd->names || !nd->name_len || !nd->prop)
		return oom(c);
	nd->additional = additional;
	const char *key;
	json_t *v;
	json_object_foreach(props, key, v) {
		if (c->g->nodes[node].n_props >= GRAMMAR_MAX_PROPS)
			return coli_err_set(c->err, -EINVAL, "%s.properties: more than %d properties are not "
					    "supported", path, GRAMMAR_MAX_PROPS);
		if (strchr(key, '\\') || strchr(key, '"'))
			return coli_err_set(c->err, -EINVAL, "%s.properties: names with '\\' or '\"' are not "
					    "supported", path);
		grammar_path_sub(sub, sizeof sub, "%s.properties.%s", path, key);
		int p = compile(c, v, sub);
		if (p < 0)
			return p;
		nd = &c->g->nodes[node];
		if (!(nd->names[nd->n_props] = strdup(key)))
			return oom(c);
		nd->name_len[nd->n_props] = (uint32_t)strlen(key);
		nd->prop[nd->n_props++] = p;
	}
	for (size_t i = 0; req && i < json_array_size(req); i++) {
		json_t *r = json_array_get(req, i);
		if (!json_is_string(r))
			return coli_err_set(c->err, -EINVAL, "%s.required[%zu]: must be a string", path, i);
		nd = &c->g->nodes[node];
		int found = -1;
		for (int j = 0; j < nd->n_props; j++)
			if (!strcmp(nd->names[j], json_string_value(r)))
				found = j;
		if (found < 0) {
			/* required but undeclared: a key under additionalProperties */
			if (additional < 0)
				return coli_err_set(c->err, -EINVAL, "%s.required: \"%s\" is not in properties and "
						    "additionalProperties is false (no document is valid)", path,
						    json_string_value(r));
			if (nd->n_props >= GRAMMAR_MAX_PROPS || strchr(json_string_value(r), '\\') ||
			    strchr(json_string_value(r), '"'))
				return coli_err_set(c->err, -EINVAL, "%s.required: \"%s\" is not supported", path,
						    json_string_value(r));
			found = nd->n_props;
			if (!(nd->names[found] = strdup(json_string_value(r))))
				return oom(c);
			nd->name_len[found] = (uint32_t)strlen(nd->names[found]);
			nd->prop[found] = additional;
			nd->n_props++;
		}
		nd->required |= 1ULL << found;
	}
	return compile_object_counts(c, s, path, node);
}

static int compile_array(cctx *c, json_t *s, const char *path, int node)
{
	char sub[1024];
	json_t *pre = json_object_get(s, "prefixItems"), *items = json_object_get(s, "items");
	if (pre && !json_is_array(pre))
		return coli_err_set(c->err, -EINVAL, "%s.prefixItems: must be an array of schemas", path);
	int it = compile_bool_or_schema(c, items, path, "items", "must be a schema (a list is prefixItems)");
	if (it < -1)
		return it == -ENOMEM ? oom(c) : it;
	size_t np = pre ? json_array_size(pre) : 0;
	int *prefix = calloc(np + 1, sizeof *prefix);
	if (!prefix)
		return oom(c);
	c->g->nodes[node].prefix = prefix;
	for (size_t i = 0; i < np; i++) {
		grammar_path_sub(sub, sizeof sub, "%s.prefixItems[%zu]", path, i);
		int p = compile(c, json_array_get(pre, i), sub);
		if (p < 0)
			return p;
		c->g->nodes[node].prefix[i] = p;
		c->g->nodes[node].n_prefix++;
	}
	gnode *nd = &c->g->nodes[node];
	nd->items = it;
	if (get_count(c, s, "minItems", path, &nd->min_items) || get_count(c, s, "maxItems", path, &nd->max_items))
		return -EINVAL;
	if (it < 0 && (nd->max_items < 0 || nd->max_items > nd->n_prefix))
		nd->max_items = nd->n_prefix;
	if (nd->max_items >= 0 && nd->min_items > nd->max_items)
		return coli_err_set(c->err, -EINVAL, "%s.minItems: larger than the most items allowed (%d)", path,
				    nd->max_items);
	return 0;
}

static int compile_string(cctx *c, json_t *s, const char *path, int node)
{
	gnode *nd = &c->g->nodes[node];
	if (get_count(c, s, "minLength", path, &nd->min_len) || get_count(c, s, "maxLength", path, &nd->max_len))
		return -EINVAL;
	if (nd->max_len >= 0 && nd->min_len > nd->max_len)
		return coli_err_set(c->err, -EINVAL, "%s.minLength: larger than maxLength", path);
	json_t *pat = json_object_get(s, "pattern"), *fmt = json_object_get(s, "format");
	if (fmt && !json_is_string(fmt))
		return coli_err_set(c->err, -EINVAL, "%s.format: must be a string", path);
	/* other formats (uri-reference, int64, binary, password ...) are
	 * annotations, as JSON Schema has them by default: not enforced */
	if (fmt && (pat || !grammar_format_pattern(json_string_value(fmt)) ||
		    json_object_get(s, "minLength") || json_object_get(s, "maxLength")))
		fmt = NULL;
	if (pat && fmt)
		return coli_err_set(c->err, -EINVAL, "%s: pattern and format together are not supported", path);
	/* a length bound could cut a pattern's only way to its end */
	if ((pat || fmt) && (json_object_get(s, "minLength") || json_object_get(s, "maxLength")))
		return coli_err_set(c->err, -EINVAL, "%s: minLength/maxLength together with %s are not supported",
				    path, pat ? "pattern" : "format");
	const char *re = NULL;
	char sub[1024];
	if (pat) {
		if (!json_is_string(pat))
			return coli_err_set(c->err, -EINVAL, "%s.pattern: must be a string", path);
		re = json_string_value(pat);
		grammar_path_sub(sub, sizeof sub, "%s.pattern", path);
	} else if (fmt) {
		re = grammar_format_pattern(json_string_value(fmt));
		grammar_path_sub(sub, sizeof sub, "%s.format", path);
	}
	if (!re)
		return 0;
	coli_grammar *g = c->g;
	if (util_array_grow(&g->res, &g->cap_res, g->n_res + 1, 4))
		return oom(c);
	int rc = gregex_compile(re, &g->res[g->n_res], sub, c->err);
	if (rc)
		return rc;
	g->nodes[node].re = g->n_res++;
	return 0;
}

static int type_code(const char *t)
{
	static const char *const names[] = { "object", "array", "string", "number", "integer", "boolean", "null" };
	for (int i = 0; i < 7; i++)
		if (!strcmp(t, names[i]))
			return i;
	return -1;
}

static int compile_type(cctx *c, json_t *s, const char *path, int type)
{
	static const int kinds[] = { GN_OBJECT, GN_ARRAY, GN_STRING, GN_NUMBER, GN_INTEGER, GN_LITS, GN_LITS };
	int node = grammar_node_add(c->g, kinds[type]);
	if (node < 0)
		return node == -ENOMEM ? oom(c) : coli_err_set(c->err, node, "%s: schema too large", path);
	int rc = 0;
	switch (type) {
	case 0: rc = compile_object(c, s, path, node); break;
	case 1: rc = compile_array(c, s, path, node); break;
	case 2: rc = compile_string(c, s, path, node); break;
	case 3: rc = grammar_schema_bounds(c->g, s, path, node, 0, c->err); break;
	case 4: rc = grammar_schema_bounds(c->g, s, path, node, 1, c->err); break;
	case 5:
		if (lits_add(&c->g->nodes[node], "true") || lits_add(&c->g->nodes[node], "false"))
			rc = oom(c);
		break;
	case 6:
		if (lits_add(&c->g->nodes[node], "null"))
			rc = oom(c);
		break;
	default: break;
	}
	return rc ? rc : node;
}

static int has_any(json_t *s, const char *const *kw)
{
	for (; *kw; kw++)
		if (json_object_get(s, *kw))
			return 1;
	return 0;
}

static int compile_body(cctx *c, json_t *s, const char *path, int self)
{
	char sub[1024];
	const char *key;
	json_t *v;
	json_object_foreach(s, key, v) {
		if (!in_list(annotations, key) && !in_list(kw_object, key) && !in_list(kw_array, key) &&
		    !in_list(kw_string, key) && !in_list(kw_other, key) && !in_list(kw_numeric, key))
			return coli_err_set(c->err, -EINVAL, "%s: unsupported JSON Schema keyword \"%s\"", path, key);
	}
	gnode *nd = &c->g->nodes[self];
	if (json_object_get(s, "$ref")) {
		json_object_foreach(s, key, v)
			if (strcmp(key, "$ref") && !in_list(annotations, key))
				return coli_err_set(c->err, -EINVAL, "%s: \"%s\" beside $ref is not supported", path, key);
		json_t *t = NULL;
		if (resolve_ref(c, s, path, &t))
			return -EINVAL;
		grammar_path_sub(sub, sizeof sub, "%s.$ref", path);
		int n = compile(c, t, sub);
		return n < 0 ? n : alts_add(c->g, self, n) ? oom(c) : 0;
	}
	if (json_object_get(s, "enum") || json_object_get(s, "const")) {
		nd->kind = GN_LITS;
		return compile_lits(c, s, path, self);
	}
	json_t *any = json_object_get(s, "anyOf");
	const char *anyname = "anyOf";
	if (!any) {
		any = json_object_get(s, "oneOf");
		anyname = "oneOf";
	}
	if (any) {
		if (json_object_get(s, "anyOf") && json_object_get(s, "oneOf"))
			return coli_err_set(c->err, -EINVAL, "%s: anyOf and oneOf together are not supported", path);
		json_object_foreach(s, key, v)
			if (strcmp(key, anyname) && !in_list(annotations, key))
				return coli_err_set(c->err, -EINVAL, "%s: \"%s\" beside %s is not supported", path, key,
						    anyname);
		if (!json_is_array(any) || !json_array_size(any))
			return coli_err_set(c->err, -EINVAL, "%s.%s: must be a non-empty array of schemas", path,
					    anyname);
		for (size_t i = 0; i < json_array_size(any); i++) {
			grammar_path_sub(sub, sizeof sub, "%s.%s[%zu]", path, anyname, i);
			int n = compile(c, json_array_get(any, i), sub);
			if (n < 0)
				return n;
			if (alts_add(c->g, self, n))
				return oom(c);
		}
		return 0;
	}
	json_t *type = json_object_get(s, "type");
	int types[7], nt = 0;
	if (json_is_string(type)) {
		if ((types[nt++] = type_code(json_string_value(type))) < 0)
			return coli_err_set(c->err, -EINVAL, "%s.type: unknown type \"%s\"", path, json_string_value(type));
	} else if (json_is_array(type) && json_array_size(type) > 0 && json_array_size(type) <= 7) {
		for (size_t i = 0; i < json_array_size(type); i++) {
			json_t *t = json_array_get(type, i);
			if (!json_is_string(t) || (types[nt++] = type_code(json_string_value(t))) < 0)
				return coli_err_set(c->err, -EINVAL, "%s.type[%zu]: unknown type", path, i);
		}
	} else if (type) {
		return coli_err_set(c->err, -EINVAL, "%s.type: must be a type name or a list of them", path);
	} else {
		/* inferred from the keywords present */
		if (has_any(s, kw_object))
			types[nt++] = 0;
		if (has_any(s, kw_array))
			types[nt++] = 1;
		if (has_any(s, kw_string))
			types[nt++] = 2;
		if (has_any(s, kw_numeric))
			types[nt++] = 3;
		if (!nt) {
			int a = grammar_node_any(c->g);
			return a < 0 ? oom(c) : alts_add(c->g, self, a) ? oom(c) : 0;
		}
	}
	for (int i = 0; i < nt; i++) {
		int n = compile_type(c, s, path, types[i]);
		if (n < 0)
			return n;
		if (alts_add(c->g, self, n))
			return oom(c);
	}
	return 0;
}

/* Every schema object becomes one GN_ANYOF node (memoised, so $ref cycles
 * close on themselves) whose alternatives carry the constraints. */
static int compile(cctx *c, json_t *s, const char *path)
{
	if (json_is_true(s) || (json_is_object(s) && json_object_size(s) == 0)) {
		int a = grammar_node_any(c->g);
		return a < 0 ? oom(c) : a;
	}
	if (json_is_false(s))
		return coli_err_set(c->err, -EINVAL, "%s: the schema false accepts no document", path);
	if (!json_is_object(s))
		return coli_err_set(c->err, -EINVAL, "%s: a schema must be an object or a boolean", path);
	for (int i = 0; i < c->n_memo; i++)
		if (c->memo[i].schema == s)
			return c->memo[i].node;
	if (++c->depth > 64)
		return coli_err_set(c->err, -EINVAL, "%s: schema nested too deeply", path);
	int self = grammar_node_add(c->g, GN_ANYOF);
	if (self < 0)
		return self == -ENOMEM ? oom(c) : coli_err_set(c->err, self, "%s: schema too large", path);
	if (util_array_grow(&c->memo, &c->cap_memo, c->n_memo + 1, 16))
		return oom(c);
	c->memo[c->n_memo++] = (memo){ s, self };
	int rc = compile_body(c, s, path, self);
	c->depth--;
	return rc < 0 ? rc : self;
}

/* A $ref cycle that never passes through an object or array would recurse
 * without consuming a byte: refuse it. */
static int check_cycles(const coli_grammar *g, int node, uint8_t *mark, const char *what, coli_err *err)
{
	const gnode *n = &g->nodes[node];
	if (n->kind != GN_ANYOF)
		return 0;
	if (mark[node] == 1)
		return coli_err_set(err, -EINVAL, "%s: a $ref cycle that accepts no document", what);
	if (mark[node] == 2)
		return 0;
	mark[node] = 1;
	for (int i = 0; i < n->n_alts; i++)
		if (check_cycles(g, n->alts[i], mark, what, err))
			return -EINVAL;
	mark[node] = 2;
	return 0;
}

int grammar_compile_schema(const char *text, size_t len, const char *what, coli_grammar **out, coli_err *err)
{
	*out = NULL;
	json_error_t jerr;
	json_t *root = json_loadb(text, len, 0, &jerr);
	if (!root)
		return coli_err_set(err, -EINVAL, "%s: invalid JSON: %s (line %d)", what, jerr.text, jerr.line);
	cctx c = { .g = grammar_alloc(), .root = root, .err = err };
	int rc = c.g ? 0 : -ENOMEM;
	if (rc)
		coli_err_set(err, rc, "out of memory");
	else
		rc = grammar_schema_prep(root, what, err);
	if (!rc) {
		int r = compile(&c, root, what);
		if (r < 0)
			rc = r;
		else
			c.g->root = r;
	}
	if (!rc) {
		uint8_t *mark = calloc((size_t)c.g->n_nodes, 1);
		rc = mark ? check_cycles(c.g, c.g->root, mark, what, err) : oom(&c);
		free(mark);
	}
	if (!rc)
		rc = grammar_check_productive(c.g, what, err);
	free(c.memo);
	json_decref(root);
	if (rc) {
		grammar_free(c.g);
		return rc < 0 ? rc : -EINVAL;
	}
	*out = c.g;
	return 0;
}

int grammar_compile_any_object(coli_grammar **out, coli_err *err)
{
	coli_grammar *g = grammar_alloc();
	int obj = g ? grammar_node_add(g, GN_OBJECT) : -ENOMEM;
	int any = obj >= 0 ? grammar_node_any(g) : obj;
	if (any < 0) {
		grammar_free(g);
		return coli_err_set(err, -ENOMEM, "out of memory");
	}
	g->nodes[obj].additional = any;
	g->root = obj;
	*out = g;
	return 0;
}

void grammar_destroy(coli_grammar *g)
{
	for (int i = 0; i < g->n_nodes; i++) {
		gnode *n = &g->nodes[i];
		for (int j = 0; j < n->n_props; j++)
			free(n->names[j]);
		for (int j = 0; j < n->n_lits; j++)
			free(n->lits[j]);
		free(n->names);
		free(n->name_len);
		free(n->prop);
		free(n->prefix);
		free(n->lits);
		free(n->lit_len);
		free(n->alts);
	}
	for (int i = 0; i < g->n_res; i++)
		gregex_free(&g->res[i]);
	free(g->res);
	free(g->nodes);
	free(g);
}
