/* chat_jinja_value.c - what values mean to a template: truthiness, str()
 * and repr() as Python writes them (None, True, ['a', 1], 1e-05),
 * equality (1 == 1.0 == True), Hugging Face's tojson (json.dumps with
 * ensure_ascii, indent, separators, sort_keys), attribute and item access
 * (a dict's methods before its keys for a.b, keys first for a['b'], as
 * Jinja's getattr and getitem do), and iteration. Strings are UTF-8;
 * lengths and indices count code points, as Python does. */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chat_jinja.h"
#include "util_unicode.h"

size_t jj_utf8_len(const char *s, size_t n)
{
	size_t k = 0;
	for (size_t i = 0; i < n; i++)
		k += ((unsigned char)s[i] & 0xC0) != 0x80;
	return k;
}

size_t jj_utf8_off(const char *s, size_t n, size_t cp)
{
	size_t i = 0;
	for (size_t k = 0; i < n; i++) {
		if (((unsigned char)s[i] & 0xC0) != 0x80) {
			if (k == cp)
				return i;
			k++;
		}
	}
	return n;
}

const char *jj_type_name(jv v)
{
	switch (v.k) {
	case JV_UNDEF: return "Undefined";
	case JV_NS: return "Namespace";
	case JV_MACRO: return "Macro";
	case JV_FUNC: return "function";
	case JV_METHOD: return "method";
	}
	switch (json_typeof(v.j)) {
	case JSON_OBJECT: return "dict";
	case JSON_ARRAY: return "list";
	case JSON_STRING: return "str";
	case JSON_INTEGER: return "int";
	case JSON_REAL: return "float";
	case JSON_TRUE:
	case JSON_FALSE: return "bool";
	default: return "NoneType";
	}
}

int jj_truthy(jv v)
{
	if (v.k == JV_UNDEF)
		return 0;
	if (v.k != JV_JSON)
		return 1;
	switch (json_typeof(v.j)) {
	case JSON_OBJECT: return json_object_size(v.j) > 0;
	case JSON_ARRAY: return json_array_size(v.j) > 0;
	case JSON_STRING: return json_string_length(v.j) > 0;
	case JSON_INTEGER: return json_integer_value(v.j) != 0;
	case JSON_REAL: return json_real_value(v.j) != 0;
	case JSON_TRUE: return 1;
	default: return 0;
	}
}

/* repr(float): the shortest digits that read back, in Python's layout */
void jj_py_float(double d, util_buf *b)
{
	char buf[64], digits[32];
	if (isnan(d)) {
		util_buf_puts(b, "nan");
		return;
	}
	if (isinf(d)) {
		util_buf_puts(b, d < 0 ? "-inf" : "inf");
		return;
	}
	int prec;
	for (prec = 1; prec < 17; prec++) {
		snprintf(buf, sizeof buf, "%.*e", prec - 1, d);
		if (strtod(buf, NULL) == d)
			break;
	}
	snprintf(buf, sizeof buf, "%.*e", prec - 1, d);
	/* buf: [-]D[.DDD]e[+-]XX */
	const char *p = buf;
	int neg = *p == '-';
	p += neg;
	size_t nd = 0;
	for (; *p && *p != 'e'; p++)
		if (*p != '.')
			digits[nd++] = *p;
	while (nd > 1 && digits[nd - 1] == '0')
		nd--;
	digits[nd] = '\0';
	int exp = atoi(p + 1);
	if (neg)
		util_buf_puts(b, "-");
	if (exp < -4 || exp >= 16) {
		util_buf_add(b, digits, 1);
		if (nd > 1) {
			util_buf_puts(b, ".");
			util_buf_add(b, digits + 1, nd - 1);
		}
		snprintf(buf, sizeof buf, "e%c%02d", exp < 0 ? '-' : '+', exp < 0 ? -exp : exp);
		util_buf_puts(b, buf);
	} else if (exp < 0) {
		util_buf_puts(b, "0.");
		for (int i = 0; i < -exp - 1; i++)
			util_buf_puts(b, "0");
		util_buf_add(b, digits, nd);
	} else {
		size_t ip = (size_t)exp + 1;
		for (size_t i = 0; i < ip; i++)
			util_buf_add(b, i < nd ? &digits[i] : "0", 1);
		util_buf_puts(b, ".");
		if (nd > ip)
			util_buf_add(b, digits + ip, nd - ip);
		else
			util_buf_puts(b, "0");
	}
}

static void py_repr_str(const char *s, size_t n, util_buf *b)
{
	int sq = memchr(s, '\'', n) != NULL, dq = memchr(s, '"', n) != NULL;
	char q = sq && !dq ? '"' : '\'';
	util_buf_add(b, &q, 1);
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		char esc[8];
		if (c == (unsigned char)q || c == '\\') {
			util_buf_puts(b, c == '\\' ? "\\\\" : q == '\'' ? "\\'" : "\\\"");
		} else if (c == '\n') {
			util_buf_puts(b, "\\n");
		} else if (c == '\r') {
			util_buf_puts(b, "\\r");
		} else if (c == '\t') {
			util_buf_puts(b, "\\t");
		} else if (c < 0x20 || c == 0x7f) {
			snprintf(esc, sizeof esc, "\\x%02x", c);
			util_buf_puts(b, esc);
		} else {
			util_buf_add(b, (const char *)&c, 1);
		}
	}
	util_buf_add(b, &q, 1);
}

static void py_repr(json_t *v, util_buf *b)
{
	char num[32];
	size_t i;
	const char *k;
	json_t *x;
	switch (json_typeof(v)) {
	case JSON_OBJECT:
		util_buf_puts(b, "{");
		i = 0;
		json_object_foreach(v, k, x) {
			if (i++)
				util_buf_puts(b, ", ");
			py_repr_str(k, strlen(k), b);
			util_buf_puts(b, ": ");
			py_repr(x, b);
		}
		util_buf_puts(b, "}");
		break;
	case JSON_ARRAY:
		util_buf_puts(b, "[");
		json_array_foreach(v, i, x) {
			if (i)
				util_buf_puts(b, ", ");
			py_repr(x, b);
		}
		util_buf_puts(b, "]");
		break;
	case JSON_STRING: py_repr_str(json_string_value(v), json_string_length(v), b); break;
	case JSON_INTEGER:
		snprintf(num, sizeof num, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
		util_buf_puts(b, num);
		break;
	case JSON_REAL: jj_py_float(json_real_value(v), b); break;
	case JSON_TRUE: util_buf_puts(b, "True"); break;
	case JSON_FALSE: util_buf_puts(b, "False"); break;
	default: util_buf_puts(b, "None");
	}
}

int jj_str(jj_ctx *c, jv v, util_buf *b)
{
	(void)c;
	switch (v.k) {
	case JV_UNDEF: return 0;
	case JV_NS: util_buf_puts(b, "<Namespace>"); return 0;
	case JV_MACRO: util_buf_puts(b, "<Macro>"); return 0;
	case JV_FUNC:
	case JV_METHOD: util_buf_puts(b, "<function>"); return 0;
	}
	if (json_is_string(v.j))
		util_buf_add(b, json_string_value(v.j), json_string_length(v.j));
	else
		py_repr(v.j, b);
	return 0;
}

int jj_to_string(jj_ctx *c, jv v, jv *out)
{
	if (v.k == JV_JSON && json_is_string(v.j)) {
		*out = v;
		return 0;
	}
	util_buf b = { 0 };
	jj_str(c, v, &b);
	json_t *s = jj_keep(c, json_stringn(b.p ? b.p : "", b.len));
	free(b.p);
	if (!s)
		return jj_err(c, 0, "out of memory");
	*out = jv_json(s);
	return 0;
}

static int json_eq(json_t *a, json_t *b)
{
	int na = json_is_number(a) || json_is_boolean(a), nb = json_is_number(b) || json_is_boolean(b);
	if (na && nb) {
		double x = json_is_boolean(a) ? json_is_true(a) : json_number_value(a);
		double y = json_is_boolean(b) ? json_is_true(b) : json_number_value(b);
		return x == y;
	}
	if (json_typeof(a) != json_typeof(b))
		return 0;
	if (json_is_array(a)) {
		if (json_array_size(a) != json_array_size(b))
			return 0;
		for (size_t i = 0; i < json_array_size(a); i++)
			if (!json_eq(json_array_get(a, i), json_array_get(b, i)))
				return 0;
		return 1;
	}
	if (json_is_object(a)) {
		const char *k;
		json_t *x;
		if (json_object_size(a) != json_object_size(b))
			return 0;
		json_object_foreach(a, k, x) {
			json_t *y = json_object_get(b, k);
			if (!y || !json_eq(x, y))
				return 0;
		}
		return 1;
	}
	return json_equal(a, b);
}

int jj_equal(jv a, jv b)
{
	if (a.k == JV_UNDEF || b.k == JV_UNDEF)
		return a.k == b.k;
	if (a.k != JV_JSON || b.k != JV_JSON)
		return a.k == b.k && a.j == b.j && a.m == b.m && a.name == b.name;
	return json_eq(a.j, b.j);
}

/* ---- tojson ---- */

static void json_string_out(const char *s, size_t n, int ensure_ascii, util_buf *b)
{
	util_buf_puts(b, "\"");
	for (size_t i = 0; i < n;) {
		unsigned char c = (unsigned char)s[i];
		char esc[16];
		if (c == '"' || c == '\\') {
			util_buf_puts(b, c == '"' ? "\\\"" : "\\\\");
		} else if (c < 0x20) {
			const char *e = c == '\n' ? "\\n" : c == '\r' ? "\\r" : c == '\t' ? "\\t" : c == '\b' ? "\\b"
					: c == '\f' ? "\\f" : NULL;
			if (e) {
				util_buf_puts(b, e);
			} else {
				snprintf(esc, sizeof esc, "\\u%04x", c);
				util_buf_puts(b, esc);
			}
		} else if (c >= 0x80 && ensure_ascii) {
			uint32_t cp;
			int l = unicode_utf8_next((const uint8_t *)s + i, n - i, &cp);
			if (l <= 0) {
				cp = 0xFFFD;
				l = 1;
			}
			if (cp >= 0x10000) {
				cp -= 0x10000;
				snprintf(esc, sizeof esc, "\\u%04x\\u%04x", 0xD800 + (cp >> 10), 0xDC00 + (cp & 0x3FF));
			} else {
				snprintf(esc, sizeof esc, "\\u%04x", cp);
			}
			util_buf_puts(b, esc);
			i += (size_t)l;
			continue;
		} else {
			util_buf_add(b, (const char *)&c, 1);
		}
		i++;
	}
	util_buf_puts(b, "\"");
}

typedef struct dump_opts {
	int ensure_ascii, indent, sort_keys;
	const char *item_sep, *key_sep;
} dump_opts;

static void newline(const dump_opts *o, int depth, util_buf *b)
{
	if (o->indent < 0)
		return;
	util_buf_puts(b, "\n");
	for (int i = 0; i < depth * o->indent; i++)
		util_buf_puts(b, " ");
}

static int cmp_keys(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static int dump(jj_ctx *c, json_t *v, const dump_opts *o, int depth, util_buf *b)
{
	char num[32];
	size_t i, n;
	json_t *x;
	switch (json_typeof(v)) {
	case JSON_OBJECT: {
		n = json_object_size(v);
		if (!n) {
			util_buf_puts(b, "{}");
			return 0;
		}
		const char **keys = malloc(n * sizeof *keys);
		if (!keys)
			return jj_err(c, 0, "out of memory");
		const char *k;
		i = 0;
		json_object_foreach(v, k, x)
			keys[i++] = k;
		if (o->sort_keys)
			qsort(keys, n, sizeof *keys, cmp_keys);
		util_buf_puts(b, "{");
		for (i = 0; i < n; i++) {
			if (i)
				util_buf_puts(b, o->item_sep);
			newline(o, depth + 1, b);
			json_string_out(keys[i], strlen(keys[i]), o->ensure_ascii, b);
			util_buf_puts(b, o->key_sep);
			if (dump(c, json_object_get(v, keys[i]), o, depth + 1, b)) {
				free(keys);
				return -1;
			}
		}
		free(keys);
		newline(o, depth, b);
		util_buf_puts(b, "}");
		return 0;
	}
	case JSON_ARRAY:
		if (!json_array_size(v)) {
			util_buf_puts(b, "[]");
			return 0;
		}
		util_buf_puts(b, "[");
		json_array_foreach(v, i, x) {
			if (i)
				util_buf_puts(b, o->item_sep);
			newline(o, depth + 1, b);
			if (dump(c, x, o, depth + 1, b))
				return -1;
		}
		newline(o, depth, b);
		util_buf_puts(b, "]");
		return 0;
	case JSON_STRING:
		json_string_out(json_string_value(v), json_string_length(v), o->ensure_ascii, b);
		return 0;
	case JSON_INTEGER:
		snprintf(num, sizeof num, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
		util_buf_puts(b, num);
		return 0;
	case JSON_REAL: {
		double d = json_real_value(v);
		if (isnan(d) || isinf(d))
			util_buf_puts(b, isnan(d) ? "NaN" : d < 0 ? "-Infinity" : "Infinity");
		else
			jj_py_float(d, b);
		return 0;
	}
	case JSON_TRUE: util_buf_puts(b, "true"); return 0;
	case JSON_FALSE: util_buf_puts(b, "false"); return 0;
	default: util_buf_puts(b, "null"); return 0;
	}
}

int jj_tojson(jj_ctx *c, json_t *v, int ensure_ascii, int indent, const char *item_sep,
	      const char *key_sep, int sort_keys, util_buf *b)
{
	dump_opts o = { ensure_ascii, indent, sort_keys, item_sep, key_sep };
	if (!o.item_sep)
		o.item_sep = indent >= 0 ? "," : ", ";
	if (!o.key_sep)
		o.key_sep = ": ";
	return dump(c, v, &o, 0, b);
}

/* ---- access ---- */

static const char *const dict_methods[] = { "get", "items", "keys", "values", "copy", "pop", "popitem",
					    "setdefault", "update", "clear", NULL };
static const char *const str_methods[] = {
	"startswith", "endswith", "split", "rsplit", "strip", "lstrip", "rstrip", "lower", "upper",
	"title", "capitalize", "replace", "find", "rfind", "index", "count", "join", "format", "isdigit",
	"isalpha", "isalnum", "isspace", "islower", "isupper", "splitlines", "removeprefix",
	"removesuffix", "zfill", "casefold", "swapcase", "partition", "rpartition", NULL };
static const char *const list_methods[] = { "index", "count", "append", "extend", "pop", "insert",
					    "remove", "reverse", "sort", "clear", "copy", NULL };

static const char *in_set(const char *const *set, const char *name)
{
	for (int i = 0; set[i]; i++)
		if (!strcmp(set[i], name))
			return set[i];
	return NULL;
}

int jj_getattr(jj_ctx *c, jv obj, const char *name, jv *out)
{
	const char *m = NULL;
	if (obj.k == JV_UNDEF)
		return jj_err(c, 0, "'%s' is undefined", obj.name);
	if (obj.k == JV_NS) {
		json_t *v = json_object_get(obj.j, name);
		*out = v ? jv_json(v) : jv_undef(name);
		return 0;
	}
	if (obj.k != JV_JSON) {
		*out = jv_undef(name);
		return 0;
	}
	if (json_is_object(obj.j)) {
		m = in_set(dict_methods, name);
		if (!m) {
			json_t *v = json_object_get(obj.j, name);
			*out = v ? jv_json(v) : jv_undef(name);
			return 0;
		}
	} else if (json_is_string(obj.j)) {
		m = in_set(str_methods, name);
	} else if (json_is_array(obj.j)) {
		m = in_set(list_methods, name);
	}
	*out = m ? (jv){ .k = JV_METHOD, .j = obj.j, .name = m } : jv_undef(name);
	return 0;
}

int jj_getitem(jj_ctx *c, jv obj, jv key, jv *out)
{
	if (obj.k == JV_UNDEF)
		return jj_err(c, 0, "'%s' is undefined", obj.name);
	if (obj.k == JV_JSON && json_is_object(obj.j) && key.k == JV_JSON && json_is_string(key.j)) {
		json_t *v = json_object_get(obj.j, json_string_value(key.j));
		if (v) {
			*out = jv_json(v);
			return 0;
		}
		return jj_getattr(c, obj, json_string_value(key.j), out);
	}
	if (obj.k == JV_JSON && (json_is_array(obj.j) || json_is_string(obj.j)) && key.k == JV_JSON &&
	    (json_is_integer(key.j) || json_is_boolean(key.j))) {
		long long i = json_is_boolean(key.j) ? json_is_true(key.j) : json_integer_value(key.j);
		int str = json_is_string(obj.j);
		const char *p = str ? json_string_value(obj.j) : NULL;
		size_t bytes = str ? json_string_length(obj.j) : 0;
		long long n = str ? (long long)jj_utf8_len(p, bytes) : (long long)json_array_size(obj.j);
		if (i < 0)
			i += n;
		if (i < 0 || i >= n) {
			*out = jv_undef("(index out of range)");
			return 0;
		}
		if (!str) {
			*out = jv_json(json_array_get(obj.j, (size_t)i));
			return 0;
		}
		size_t a = jj_utf8_off(p, bytes, (size_t)i), e = jj_utf8_off(p, bytes, (size_t)i + 1);
		json_t *s = jj_keep(c, json_stringn(p + a, e - a));
		if (!s)
			return jj_err(c, 0, "out of memory");
		*out = jv_json(s);
		return 0;
	}
	if (key.k == JV_JSON && json_is_string(key.j))
		return jj_getattr(c, obj, json_string_value(key.j), out);
	*out = jv_undef("(item)");
	return 0;
}

int jj_iter(jj_ctx *c, jv v, json_t **list, int line)
{
	json_t *l;
	if (v.k == JV_UNDEF) {
		l = json_array();
	} else if (v.k == JV_JSON && json_is_array(v.j)) {
		*list = v.j;
		return 0;
	} else if ((v.k == JV_JSON || v.k == JV_NS) && json_is_object(v.j) && v.k == JV_JSON) {
		l = json_array();
		const char *k;
		json_t *x;
		json_object_foreach(v.j, k, x)
			json_array_append_new(l, json_string(k));
	} else if (v.k == JV_JSON && json_is_string(v.j)) {
		l = json_array();
		const char *p = json_string_value(v.j);
		size_t n = json_string_length(v.j);
		for (size_t i = 0; i < n;) {
			size_t e = i + 1;
			while (e < n && ((unsigned char)p[e] & 0xC0) == 0x80)
				e++;
			json_array_append_new(l, json_stringn(p + i, e - i));
			i = e;
		}
	} else {
		return jj_err(c, line, "'%s' object is not iterable", jj_type_name(v));
	}
	if (!jj_keep(c, l))
		return jj_err(c, 0, "out of memory");
	*list = l;
	return 0;
}
