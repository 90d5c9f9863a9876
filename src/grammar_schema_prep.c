/* grammar_schema_prep.c - shapes of JSON Schema that agent tools send,
 * rewritten into the compiled subset before compiling (on the compiler's
 * own copy of the schema).
 *
 *   allOf                 folded into the schema that holds it;
 *   anyOf/oneOf beside    each alternative becomes the siblings and the
 *   other keywords        alternative together ({"type":"object",
 *                         "properties":..., "anyOf":[{"required":["a"]},
 *                         {"required":["b"]}]} is two object schemas);
 *   propertyNames         {"type":"string"} (zod's records) says nothing a
 *                         key does not already say: dropped; enum/const
 *                         name the only keys: declared properties with
 *                         additionalProperties false; a pattern and
 *                         lengths keep, of the keys the object declares
 *                         or requires, those that satisfy them, and no
 *                         other key (the matcher knows keys only by
 *                         name): a narrower but valid grammar; anything
 *                         else is left for the compiler to refuse;
 *   discriminator         an OpenAPI annotation: dropped.
 * Two schemas joined ("and") merge keyword by keyword: properties by name
 * (a name in both becomes allOf of the two), required as a union, type as
 * an intersection, additionalProperties false keeps the other side's extra
 * properties out; any other keyword given differently on both sides is an
 * error naming it. Local $ref in an allOf or alternative is followed (as
 * deep as 8 references). */
#include "config.h"

#include <errno.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "grammar_impl.h"

static const char *const notes[] = {
	"title", "description", "default", "examples", "$schema", "$id", "$comment", "deprecated",
	"readOnly", "writeOnly", "discriminator", NULL,
};

static int is_note(const char *k)
{
	for (const char *const *p = notes; *p; p++)
		if (!strcmp(*p, k))
			return 1;
	return 0;
}

static json_t *deref(json_t *root, json_t *s, int depth)
{
	json_t *r = json_object_get(s, "$ref");
	if (!json_is_string(r) || depth > 8)
		return s;
	const char *ref = json_string_value(r);
	json_t *t = NULL;
	if (!strcmp(ref, "#"))
		return s;   /* the root itself: left to the compiler (a cycle) */
	if (!strncmp(ref, "#/$defs/", 8))
		t = json_object_get(json_object_get(root, "$defs"), ref + 8);
	else if (!strncmp(ref, "#/definitions/", 14))
		t = json_object_get(json_object_get(root, "definitions"), ref + 14);
	return t && json_is_object(t) ? deref(root, t, depth + 1) : s;
}

static json_t *type_list(json_t *t)
{
	json_t *l = json_array();
	if (json_is_string(t))
		json_array_append(l, t);
	else if (json_is_array(t))
		json_array_extend(l, t);
	return l;
}

static int list_has(json_t *l, json_t *v)
{
	size_t i;
	json_t *x;
	json_array_foreach(l, i, x)
		if (json_equal(x, v))
			return 1;
	return 0;
}

/* Properties of `from` that `other`'s additionalProperties false forbids. */
static void drop_forbidden(json_t *props, json_t *mine, json_t *other)
{
	if (!json_is_false(json_object_get(other, "additionalProperties")))
		return;
	json_t *allowed = json_object_get(other, "properties");
	json_t *from = json_object_get(mine, "properties");
	const char *k;
	json_t *v;
	json_object_foreach(from, k, v)
		if (!json_object_get(allowed, k))
			json_object_del(props, k);
}

/* dst = dst and src (dst is a fresh copy, src read only). */
static int merge(json_t *root, json_t *dst, json_t *src, const char *path, coli_err *err)
{
	src = deref(root, src, 0);
	if (json_is_true(src))
		return 0;
	if (!json_is_object(src))
		return coli_err_set(err, -EINVAL, "%s: an alternative must be a schema object", path);
	json_t *orig = json_deep_copy(dst);
	const char *k;
	json_t *v;
	int rc = 0;
	json_object_foreach(src, k, v) {
		json_t *d = json_object_get(dst, k);
		if (!d) {
			json_object_set_new(dst, k, json_deep_copy(v));
		} else if (json_equal(d, v) || is_note(k)) {
			continue;
		} else if (!strcmp(k, "properties") && json_is_object(d) && json_is_object(v)) {
			const char *pk;
			json_t *pv;
			json_object_foreach(v, pk, pv) {
				json_t *dp = json_object_get(d, pk);
				if (!dp)
					json_object_set_new(d, pk, json_deep_copy(pv));
				else if (!json_equal(dp, pv))
					json_object_set_new(d, pk, json_pack("{s:[O,O]}", "allOf", dp, pv));
			}
		} else if (!strcmp(k, "required") && json_is_array(d) && json_is_array(v)) {
			size_t i;
			json_t *x;
			json_array_foreach(v, i, x)
				if (!list_has(d, x))
					json_array_append(d, x);
		} else if (!strcmp(k, "type")) {
			/* the intersection (an integer is a number) */
			json_t *ta = type_list(d), *tb = type_list(v), *both = json_array();
			size_t i, j;
			json_t *x, *y;
			json_array_foreach(ta, i, x)
				json_array_foreach(tb, j, y) {
					const char *t = json_string_value(x), *u = json_string_value(y);
					if (!t || !u)
						continue;
					const char *r = !strcmp(t, u) ? t
						      : (!strcmp(t, "integer") && !strcmp(u, "number")) ||
								(!strcmp(t, "number") && !strcmp(u, "integer"))
							? "integer" : NULL;
					json_t *js = r ? json_string(r) : NULL;
					if (js && !list_has(both, js))
						json_array_append(both, js);
					json_decref(js);
				}
			json_decref(ta);
			json_decref(tb);
			if (!json_array_size(both)) {
				json_decref(both);
				rc = coli_err_set(err, -EINVAL, "%s: no value has both types", path);
				break;
			}
			json_object_set_new(dst, "type", json_array_size(both) == 1 ? json_incref(json_array_get(both, 0))
										  : json_incref(both));
			json_decref(both);
		} else if (!strcmp(k, "additionalProperties")) {
			json_object_set_new(dst, k, json_is_false(d) || json_is_false(v) ? json_false()
						    : json_pack("{s:[O,O]}", "allOf", d, v));
		} else {
			rc = coli_err_set(err, -EINVAL, "%s: \"%s\" given differently by two schemas that must both "
					  "hold", path, k);
			break;
		}
	}
	json_t *props = json_object_get(dst, "properties");
	if (!rc && props) {
		drop_forbidden(props, src, orig);
		drop_forbidden(props, orig, src);
	}
	json_decref(orig);
	return rc;
}

/* Does the key name satisfy a propertyNames schema of type string,
 * pattern, minLength and maxLength (lengths in code points)? 1 or 0; -1
 * with err when its pattern is not in the compiled subset. */
static int key_ok(json_t *pn, const char *name, const char *path, coli_err *err)
{
	json_int_t lo = json_integer_value(json_object_get(pn, "minLength"));
	json_t *hi = json_object_get(pn, "maxLength");
	json_int_t n = 0;
	for (const char *c = name; *c; c++)
		n += ((unsigned char)*c & 0xC0) != 0x80;
	if (n < lo || (json_is_integer(hi) && n > json_integer_value(hi)))
		return 0;
	const char *pat = json_string_value(json_object_get(pn, "pattern"));
	if (!pat)
		return 1;
	char sub[512];
	gregex re;
	grammar_path_sub(sub, sizeof sub, "%s.propertyNames.pattern", path);
	if (gregex_compile(pat, &re, sub, err))
		return -1;
	gbits at = re.start, next;
	int ok = 1;
	for (const unsigned char *c = (const unsigned char *)name; ok && *c; c++) {
		if ((*c & 0xC0) == 0x80)
			continue;   /* one symbol a code point */
		ok = gregex_step(&re, &at, *c < 0x80 ? *c : GRE_NONASCII, &next);
		at = next;
	}
	ok = ok && gbits_has(&at, re.final);
	gregex_free(&re);
	return ok;
}

/* propertyNames (see the head of the file). A key pattern or length names
 * the keys allowed among those the object declares or requires; no other
 * key is generated (the grammar checks keys only against names). */
static int property_names(json_t *s, const char *path, coli_err *err)
{
	json_t *pn = json_object_get(s, "propertyNames");
	if (!json_is_object(pn) && !json_is_true(pn))
		return 0;
	int plain = 1, keyed = 1;
	const char *k;
	json_t *v;
	json_object_foreach(pn, k, v) {
		int str = !strcmp(k, "type") && json_is_string(v) && !strcmp(json_string_value(v), "string");
		plain &= str || !strcmp(k, "format") || is_note(k);
		keyed &= str || !strcmp(k, "format") || is_note(k) || (!strcmp(k, "pattern") && json_is_string(v)) ||
			 ((!strcmp(k, "minLength") || !strcmp(k, "maxLength")) && json_is_integer(v) &&
			  json_integer_value(v) >= 0);
	}
	if (plain) {
		json_object_del(s, "propertyNames");
		return 0;
	}
	json_t *e = json_object_get(pn, "enum"), *c = json_object_get(pn, "const");
	json_t *names = json_is_array(e) ? json_incref(e) : json_is_string(c) ? json_pack("[O]", c) : NULL;
	if (names && json_object_size(pn) > 2) {
		json_decref(names);
		return 0;   /* left for the compiler to refuse */
	}
	json_t *props = json_object_get(s, "properties");
	if (!names && keyed) {
		/* the declared and required names that satisfy it */
		json_t *cand = json_array();
		json_object_foreach(props, k, v)
			json_array_append_new(cand, json_string(k));
		size_t i;
		json_t *x;
		json_array_foreach(json_object_get(s, "required"), i, x)
			if (json_is_string(x) && !list_has(cand, x))
				json_array_append(cand, x);
		names = json_array();
		json_array_foreach(cand, i, x) {
			int ok = key_ok(pn, json_string_value(x), path, err);
			if (ok < 0) {
				json_decref(cand);
				json_decref(names);
				return -1;
			}
			if (ok)
				json_array_append(names, x);
		}
		json_decref(cand);
	}
	if (!names)
		return 0;   /* left for the compiler to refuse */
	if (!json_is_object(props)) {
		props = json_object();
		json_object_set_new(s, "properties", props);
	}
	json_t *add = json_object_get(s, "additionalProperties");
	size_t i;
	json_t *x;
	json_array_foreach(names, i, x)
		if (json_is_string(x) && !json_object_get(props, json_string_value(x)) && !json_is_false(add))
			json_object_set_new(props, json_string_value(x), add ? json_deep_copy(add) : json_true());
	void *it = json_object_iter(props);
	while (it) {
		const char *pk = json_object_iter_key(it);
		json_t *name = json_string(pk);
		int ok = list_has(names, name);
		json_decref(name);
		it = json_object_iter_next(props, it);
		if (!ok)
			json_object_del(props, pk);   /* a key propertyNames forbids */
	}
	json_object_set_new(s, "additionalProperties", json_false());
	json_object_del(s, "propertyNames");
	json_decref(names);
	return 0;
}

static int prep(json_t *root, json_t *s, const char *path, int depth, coli_err *err);

static int prep_child(json_t *root, json_t *v, const char *path, const char *key, int depth, coli_err *err)
{
	char sub[512];
	grammar_path_sub(sub, sizeof sub, "%s.%s", path, key);
	return prep(root, v, sub, depth + 1, err);
}

static int prep(json_t *root, json_t *s, const char *path, int depth, coli_err *err)
{
	if (!json_is_object(s) || depth > 64)
		return 0;   /* the compiler names what is wrong */
	json_object_del(s, "discriminator");
	json_t *all = json_object_get(s, "allOf");
	if (json_is_array(all)) {
		json_incref(all);
		json_object_del(s, "allOf");
		size_t i;
		json_t *x;
		int rc = 0;
		json_array_foreach(all, i, x)
			if ((rc = merge(root, s, x, path, err)))
				break;
		json_decref(all);
		if (rc)
			return rc;
		/* a folded part may have brought its own allOf */
		return prep(root, s, path, depth + 1, err);
	}
	const char *which = json_object_get(s, "anyOf") ? "anyOf" : json_object_get(s, "oneOf") ? "oneOf" : NULL;
	json_t *alts = which ? json_object_get(s, which) : NULL;
	int siblings = 0;
	const char *k;
	json_t *v;
	json_object_foreach(s, k, v)
		siblings |= strcmp(k, "anyOf") && strcmp(k, "oneOf") && !is_note(k) && strcmp(k, "$defs") &&
			    strcmp(k, "definitions");
	if (json_is_array(alts) && siblings && !json_object_get(s, "$ref")) {
		json_t *base = json_deep_copy(s), *out = json_array();
		json_object_del(base, "anyOf");
		json_object_del(base, "oneOf");
		json_object_del(base, "$defs");
		json_object_del(base, "definitions");
		size_t i;
		json_t *x;
		json_array_foreach(alts, i, x) {
			json_t *m = json_deep_copy(base);
			int rc = merge(root, m, x, path, err);
			if (rc) {
				json_decref(m);
				json_decref(base);
				json_decref(out);
				return rc;
			}
			json_array_append_new(out, m);
		}
		json_decref(base);
		/* only the alternatives (and the definitions) stay */
		json_t *keep_defs = json_incref(json_object_get(s, "$defs"));
		json_t *keep_old = json_incref(json_object_get(s, "definitions"));
		json_object_clear(s);
		json_object_set_new(s, "anyOf", out);
		if (keep_defs)
			json_object_set_new(s, "$defs", keep_defs);
		if (keep_old)
			json_object_set_new(s, "definitions", keep_old);
	}
	if (property_names(s, path, err))
		return -EINVAL;
	static const char *const one[] = { "additionalProperties", "items", "propertyNames", NULL };
	static const char *const many[] = { "anyOf", "oneOf", "prefixItems", NULL };
	static const char *const maps[] = { "properties", "$defs", "definitions", NULL };
	for (int i = 0; one[i]; i++)
		if (prep_child(root, json_object_get(s, one[i]), path, one[i], depth, err))
			return -EINVAL;
	for (int i = 0; many[i]; i++) {
		size_t j;
		json_t *x;
		json_array_foreach(json_object_get(s, many[i]), j, x)
			if (prep_child(root, x, path, many[i], depth, err))
				return -EINVAL;
	}
	for (int i = 0; maps[i]; i++) {
		json_object_foreach(json_object_get(s, maps[i]), k, v)
			if (prep_child(root, v, path, k, depth, err))
				return -EINVAL;
	}
	return 0;
}

int grammar_schema_prep(json_t *root, const char *what, coli_err *err)
{
	return prep(root, root, what, 0, err);
}

/* The path of a sub-schema, for messages. A deep schema's path would fill
 * the message and cut its reason off, so past PATH_MAX_SHOWN bytes its
 * middle is left out: the root's end and the innermost levels stay. */
#define PATH_MAX_SHOWN 160
#define PATH_HEAD 48
void grammar_path_sub(char *sub, size_t cap, const char *fmt, ...)
{
	char full[2048];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(full, sizeof full, fmt, ap);
	va_end(ap);
	size_t n = strlen(full);
	if (n <= PATH_MAX_SHOWN) {
		snprintf(sub, cap, "%s", full);
		return;
	}
	/* cut at UTF-8 character boundaries (the message goes into JSON) */
	size_t head = PATH_HEAD, from = n - (PATH_MAX_SHOWN - PATH_HEAD - 3);
	while (head > 0 && ((unsigned char)full[head] & 0xC0) == 0x80)
		head--;
	while (from < n && ((unsigned char)full[from] & 0xC0) == 0x80)
		from++;
	snprintf(sub, cap, "%.*s...%s", (int)head, full, full + from);
}
