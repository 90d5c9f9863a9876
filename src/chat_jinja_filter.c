/* chat_jinja_filter.c - Jinja's filters and tests that chat templates
 * use, with Jinja's semantics (default only replaces undefined unless
 * boolean=true; round gives a float; length of undefined is 0) and
 * Hugging Face's tojson (ensure_ascii off unless asked, indent,
 * separators, sort_keys). */
#include "config.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "chat_jinja.h"

jv jj_arg(jv *args, int na, char **kwn, jv *kw, int nk, int pos, const char *name, int *has);
int jj_str_method(jj_ctx *c, const char *name, jv self, jv *args, int na, jv *out, int line);

jv jj_arg(jv *args, int na, char **kwn, jv *kw, int nk, int pos, const char *name, int *has)
{
	*has = 1;
	if (pos >= 0 && pos < na)
		return args[pos];
	for (int i = 0; name && i < nk; i++)
		if (!strcmp(kwn[i], name))
			return kw[i];
	*has = 0;
	return jv_undef(name ? name : "");
}

static int keep(jj_ctx *c, json_t *j, jv *out)
{
	if (!jj_keep(c, j))
		return jj_err(c, 0, "out of memory");
	*out = jv_json(j);
	return 0;
}

static int is_type(jv v, int t)
{
	return v.k == JV_JSON && (int)json_typeof(v.j) == t;
}

static int is_number(jv v)
{
	return v.k == JV_JSON && json_is_number(v.j);
}

int jj_test(jj_ctx *c, const char *name, jv v, jv *args, int na, int *out, int line)
{
	jv a = na > 0 ? args[0] : jv_undef("");
	int j = v.k == JV_JSON;
	if (!strcmp(name, "defined"))
		*out = v.k != JV_UNDEF;
	else if (!strcmp(name, "undefined"))
		*out = v.k == JV_UNDEF;
	else if (!strcmp(name, "none"))
		*out = j && json_is_null(v.j);
	else if (!strcmp(name, "boolean"))
		*out = j && json_is_boolean(v.j);
	else if (!strcmp(name, "true"))
		*out = j && json_is_true(v.j);
	else if (!strcmp(name, "false"))
		*out = j && json_is_false(v.j);
	else if (!strcmp(name, "string"))
		*out = j && json_is_string(v.j);
	else if (!strcmp(name, "mapping"))
		*out = j && json_is_object(v.j);
	else if (!strcmp(name, "number"))
		*out = j && (json_is_number(v.j) || json_is_boolean(v.j));
	else if (!strcmp(name, "integer"))
		*out = j && json_is_integer(v.j);
	else if (!strcmp(name, "float"))
		*out = j && json_is_real(v.j);
	else if (!strcmp(name, "iterable"))
		*out = v.k == JV_UNDEF || (j && (json_is_array(v.j) || json_is_object(v.j) || json_is_string(v.j)));
	else if (!strcmp(name, "sequence"))
		*out = j && (json_is_array(v.j) || json_is_object(v.j) || json_is_string(v.j));
	else if (!strcmp(name, "callable"))
		*out = v.k == JV_MACRO || v.k == JV_FUNC || v.k == JV_METHOD;
	else if (!strcmp(name, "equalto") || !strcmp(name, "eq") || !strcmp(name, "=="))
		*out = jj_equal(v, a);
	else if (!strcmp(name, "ne") || !strcmp(name, "!="))
		*out = !jj_equal(v, a);
	else if (!strcmp(name, "sameas"))
		*out = jj_equal(v, a) && (!j || json_typeof(v.j) == json_typeof(a.j));
	else if (!strcmp(name, "lower") || !strcmp(name, "upper")) {
		*out = 0;
		if (j && json_is_string(v.j)) {
			const char *p = json_string_value(v.j);
			int lower = name[0] == 'l', any = 0, bad = 0;
			for (; *p; p++) {
				any |= (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z');
				bad |= lower ? (*p >= 'A' && *p <= 'Z') : (*p >= 'a' && *p <= 'z');
			}
			*out = any && !bad;
		}
	} else if (!strcmp(name, "odd") || !strcmp(name, "even") || !strcmp(name, "divisibleby")) {
		if (!is_type(v, JSON_INTEGER))
			return jj_err(c, line, "test '%s' needs an integer", name);
		long long x = json_integer_value(v.j);
		long long d = !strcmp(name, "divisibleby") ? (is_type(a, JSON_INTEGER) ? json_integer_value(a.j) : 0) : 2;
		if (d == 0)
			return jj_err(c, line, "divisibleby needs a non-zero integer");
		*out = name[0] == 'o' ? x % 2 != 0 : x % d == 0;
	} else if (!strcmp(name, "in")) {
		jv r;
		if (jj_filter(c, "__contains", a, &v, 1, NULL, NULL, 0, &r, line))
			return -1;
		*out = jj_truthy(r);
	} else if (!strcmp(name, "gt") || !strcmp(name, "ge") || !strcmp(name, "lt") || !strcmp(name, "le") ||
		   !strcmp(name, ">") || !strcmp(name, ">=") || !strcmp(name, "<") || !strcmp(name, "<=")) {
		if (!is_number(v) || !is_number(a)) {
			if (!(is_type(v, JSON_STRING) && is_type(a, JSON_STRING)))
				return jj_err(c, line, "test '%s' needs numbers or strings", name);
			int r = strcmp(json_string_value(v.j), json_string_value(a.j));
			*out = name[0] == 'g' || name[0] == '>' ? (name[1] == 'e' || name[1] == '=' ? r >= 0 : r > 0)
				: (name[1] == 'e' || name[1] == '=' ? r <= 0 : r < 0);
			return 0;
		}
		double x = json_number_value(v.j), y = json_number_value(a.j);
		*out = name[0] == 'g' || name[0] == '>' ? (name[1] == 'e' || name[1] == '=' ? x >= y : x > y)
			: (name[1] == 'e' || name[1] == '=' ? x <= y : x < y);
	} else {
		return jj_err(c, line, "no test named '%s'", name);
	}
	return 0;
}

/* str(v), for filters that work on text */
static int text_of(jj_ctx *c, jv v, jv *out)
{
	return jj_to_string(c, v, out);
}

static int attr_path(jj_ctx *c, jv v, const char *path, jv *out)
{
	char buf[128];
	snprintf(buf, sizeof buf, "%s", path);
	*out = v;
	for (char *save = NULL, *p = strtok_r(buf, ".", &save); p; p = strtok_r(NULL, ".", &save)) {
		jv key = jv_json(NULL);
		if (*p >= '0' && *p <= '9') {
			if (!(key.j = jj_keep(c, json_integer(atoll(p)))))
				return jj_err(c, 0, "out of memory");
		} else if (!(key.j = jj_keep(c, json_string(p)))) {
			return jj_err(c, 0, "out of memory");
		}
		if (jj_getitem(c, *out, key, out))
			return -1;
	}
	return 0;
}

/* select/reject/selectattr/rejectattr/map over a list */
static int over_items(jj_ctx *c, const char *name, jv v, jv *args, int na, char **kwn, jv *kw, int nk,
		      jv *out, int line)
{
	json_t *items, *res = jj_keep(c, json_array());
	if (!res || jj_iter(c, v, &items, line))
		return -1;
	int is_map = !strcmp(name, "map"), attr = strstr(name, "attr") != NULL;
	int want = name[0] == 's';
	int has;
	jv attribute = jj_arg(args, na, kwn, kw, nk, -1, "attribute", &has);
	size_t i;
	json_t *x;
	json_array_foreach(items, i, x) {
		jv item = jv_json(x), subject = item, r;
		if (is_map) {
			if (has) {
				if (!is_type(attribute, JSON_STRING) || attr_path(c, item, json_string_value(attribute.j), &r))
					return jj_err(c, line, "map(attribute=...) needs a name");
				if (r.k == JV_UNDEF) {
					int hd;
					jv d = jj_arg(args, na, kwn, kw, nk, -1, "default", &hd);
					r = hd ? d : jv_json(json_null());
					if (!hd)
						continue;
				}
			} else {
				if (na < 1 || !is_type(args[0], JSON_STRING))
					return jj_err(c, line, "map needs a filter name or attribute=");
				if (jj_filter(c, json_string_value(args[0].j), item, args + 1, na - 1, kwn, kw, nk, &r, line))
					return -1;
			}
			if (r.k == JV_JSON)
				json_array_append(res, r.j);
			continue;
		}
		int first = 0;
		if (attr) {
			if (na < 1 || !is_type(args[0], JSON_STRING) || attr_path(c, item, json_string_value(args[0].j), &subject))
				return jj_err(c, line, "%s needs an attribute name", name);
			first = 1;
		}
		int ok;
		if (na > first) {
			if (!is_type(args[first], JSON_STRING))
				return jj_err(c, line, "%s needs a test name", name);
			if (jj_test(c, json_string_value(args[first].j), subject, args + first + 1, na - first - 1, &ok, line))
				return -1;
		} else {
			ok = jj_truthy(subject);
		}
		if (ok == want)
			json_array_append(res, x);
	}
	*out = jv_json(res);
	return 0;
}

static int tojson(jj_ctx *c, jv v, jv *args, int na, char **kwn, jv *kw, int nk, jv *out, int line)
{
	int has;
	jv ea = jj_arg(args, na, kwn, kw, nk, 0, "ensure_ascii", &has);
	jv ind = jj_arg(args, na, kwn, kw, nk, 1, "indent", &has);
	jv sep = jj_arg(args, na, kwn, kw, nk, 2, "separators", &has);
	jv sk = jj_arg(args, na, kwn, kw, nk, 3, "sort_keys", &has);
	if (v.k != JV_JSON)
		return jj_err(c, line, "Object of type %s is not JSON serializable", jj_type_name(v));
	int indent = is_type(ind, JSON_INTEGER) ? (int)json_integer_value(ind.j) : -1;
	const char *is = NULL, *ks = NULL;
	if (sep.k == JV_JSON && json_is_array(sep.j) && json_array_size(sep.j) == 2) {
		is = json_string_value(json_array_get(sep.j, 0));
		ks = json_string_value(json_array_get(sep.j, 1));
	}
	util_buf b = { 0 };
	int rc = jj_tojson(c, v.j, jj_truthy(ea), indent, is, ks, jj_truthy(sk), &b);
	if (!rc)
		rc = keep(c, json_stringn(b.p ? b.p : "", b.len), out);
	free(b.p);
	return rc;
}

int jj_filter(jj_ctx *c, const char *name, jv v, jv *args, int na, char **kwn, jv *kw, int nk,
	      jv *out, int line)
{
	int has;
	jv s;
	if (!strcmp(name, "__contains")) {
		/* the "in" test: args[0] in v */
		jv r;
		int found = 0;
		if (v.k == JV_JSON && json_is_array(v.j)) {
			for (size_t i = 0; i < json_array_size(v.j) && !found; i++)
				found = jj_equal(jv_json(json_array_get(v.j, i)), args[0]);
		} else if (v.k == JV_JSON && json_is_object(v.j) && is_type(args[0], JSON_STRING)) {
			found = json_object_get(v.j, json_string_value(args[0].j)) != NULL;
		} else if (is_type(v, JSON_STRING) && is_type(args[0], JSON_STRING)) {
			jv fa[1] = { args[0] };
			if (jj_str_method(c, "find", v, fa, 1, &r, line))
				return -1;
			found = json_integer_value(r.j) >= 0;
		}
		*out = jv_json(found ? json_true() : json_false());
		return 0;
	}
	if (!strcmp(name, "tojson"))
		return tojson(c, v, args, na, kwn, kw, nk, out, line);
	if (!strcmp(name, "safe")) {
		*out = v;
		return 0;
	}
	if (!strcmp(name, "default") || !strcmp(name, "d")) {
		jv d = jj_arg(args, na, kwn, kw, nk, 0, "default_value", &has);
		if (!has && keep(c, json_string(""), &d))
			return -1;
		jv boolean = jj_arg(args, na, kwn, kw, nk, 1, "boolean", &has);
		*out = v.k == JV_UNDEF || (jj_truthy(boolean) && !jj_truthy(v)) ? d : v;
		return 0;
	}
	if (!strcmp(name, "length") || !strcmp(name, "count")) {
		long long n;
		if (v.k == JV_UNDEF)
			n = 0;
		else if (is_type(v, JSON_STRING))
			n = (long long)jj_utf8_len(json_string_value(v.j), json_string_length(v.j));
		else if (v.k == JV_JSON && json_is_array(v.j))
			n = (long long)json_array_size(v.j);
		else if ((v.k == JV_JSON || v.k == JV_NS) && json_is_object(v.j))
			n = (long long)json_object_size(v.j);
		else
			return jj_err(c, line, "object of type '%s' has no len()", jj_type_name(v));
		return keep(c, json_integer(n), out);
	}
	if (!strcmp(name, "string"))
		return text_of(c, v, out);
	if (!strcmp(name, "list") || !strcmp(name, "first") || !strcmp(name, "last") ||
	    !strcmp(name, "reverse") || !strcmp(name, "unique") || !strcmp(name, "sort")) {
		json_t *items;
		if (jj_iter(c, v, &items, line))
			return -1;
		size_t n = json_array_size(items);
		if (name[0] == 'f' || (name[0] == 'l' && name[1] == 'a')) {
			json_t *x = n ? json_array_get(items, name[0] == 'f' ? 0 : n - 1) : NULL;
			*out = x ? jv_json(x) : jv_undef(name);
			return 0;
		}
		json_t *l = json_array();
		for (size_t i = 0; l && i < n; i++) {
			json_t *x = json_array_get(items, name[0] == 'r' ? n - 1 - i : i);
			int dupe = 0;
			for (size_t k = 0; name[0] == 'u' && k < json_array_size(l) && !dupe; k++)
				dupe = jj_equal(jv_json(json_array_get(l, k)), jv_json(x));
			if (!dupe)
				json_array_append(l, x);
		}
		if (l && !strcmp(name, "sort")) {
			/* insertion sort: the lists here are short */
			size_t m = json_array_size(l);
			for (size_t i = 1; i < m; i++)
				for (size_t k = i; k > 0; k--) {
					json_t *a = json_array_get(l, k - 1), *b = json_array_get(l, k);
					int gt = json_is_string(a) && json_is_string(b) ? strcmp(json_string_value(a), json_string_value(b)) > 0
						 : json_is_number(a) && json_is_number(b) && json_number_value(a) > json_number_value(b);
					if (!gt)
						break;
					json_incref(a);
					json_array_set(l, k - 1, b);
					json_array_set_new(l, k, a);
				}
			if (jj_truthy(jj_arg(args, na, kwn, kw, nk, 0, "reverse", &has))) {
				json_t *r = json_array();
				for (size_t i = m; r && i-- > 0;)
					json_array_append(r, json_array_get(l, i));
				json_decref(l);
				l = r;
			}
		}
		if (is_type(v, JSON_STRING) && name[0] == 'r') {
			util_buf b = { 0 };
			for (size_t i = 0; i < json_array_size(l); i++)
				util_buf_puts(&b, json_string_value(json_array_get(l, i)));
			json_decref(l);
			l = json_stringn(b.p ? b.p : "", b.len);
			free(b.p);
		}
		return keep(c, l, out);
	}
	if (!strcmp(name, "join")) {
		json_t *items;
		jv sep = jj_arg(args, na, kwn, kw, nk, 0, "d", &has);
		jv attribute = jj_arg(args, na, kwn, kw, nk, 1, "attribute", &has);
		if (jj_iter(c, v, &items, line))
			return -1;
		util_buf b = { 0 };
		for (size_t i = 0; i < json_array_size(items); i++) {
			jv x = jv_json(json_array_get(items, i));
			if (i && is_type(sep, JSON_STRING))
				util_buf_add(&b, json_string_value(sep.j), json_string_length(sep.j));
			if (has && is_type(attribute, JSON_STRING) && attr_path(c, x, json_string_value(attribute.j), &x))
				return -1;
			jj_str(c, x, &b);
		}
		int rc = keep(c, json_stringn(b.p ? b.p : "", b.len), out);
		free(b.p);
		return rc;
	}
	if (!strcmp(name, "dictsort")) {
		/* by key, case-insensitively as Jinja's default */
		if (!(v.k == JV_JSON && json_is_object(v.j)))
			return jj_err(c, line, "dictsort needs a mapping");
		json_t *l = json_array();
		const char *k;
		json_t *x;
		json_object_foreach(v.j, k, x) {
			size_t at = json_array_size(l);
			while (at > 0 && strcasecmp(json_string_value(json_array_get(json_array_get(l, at - 1), 0)), k) > 0)
				at--;
			json_array_insert_new(l, at, json_pack("[sO]", k, x));
		}
		return keep(c, l, out);
	}
	if (!strcmp(name, "items")) {
		json_t *l = json_array();
		if (v.k == JV_JSON && json_is_object(v.j)) {
			const char *k;
			json_t *x;
			json_object_foreach(v.j, k, x)
				json_array_append_new(l, json_pack("[sO]", k, x));
		} else if (v.k != JV_UNDEF) {
			json_decref(l);
			return jj_err(c, line, "items needs a mapping");
		}
		return keep(c, l, out);
	}
	if (!strcmp(name, "map") || !strcmp(name, "select") || !strcmp(name, "reject") ||
	    !strcmp(name, "selectattr") || !strcmp(name, "rejectattr"))
		return over_items(c, name, v, args, na, kwn, kw, nk, out, line);
	if (!strcmp(name, "attr"))
		return na > 0 && is_type(args[0], JSON_STRING) ? jj_getattr(c, v, json_string_value(args[0].j), out)
							     : jj_err(c, line, "attr needs a name");
	if (!strcmp(name, "int") || !strcmp(name, "float") || !strcmp(name, "abs") || !strcmp(name, "round")) {
		double d = 0;
		int ok = 1;
		jv def = jj_arg(args, na, kwn, kw, nk, 0, "default", &has);
		if (v.k == JV_JSON && (json_is_number(v.j) || json_is_boolean(v.j)))
			d = json_is_boolean(v.j) ? json_is_true(v.j) : json_number_value(v.j);
		else if (is_type(v, JSON_STRING)) {
			char *e;
			d = strtod(json_string_value(v.j), &e);
			ok = e != json_string_value(v.j) && *e == '\0';
		} else
			ok = 0;
		if (!strcmp(name, "int")) {
			if (!ok)
				return has ? (*out = def, 0) : keep(c, json_integer(0), out);
			return keep(c, json_integer((json_int_t)d), out);
		}
		if (!strcmp(name, "float")) {
			if (!ok)
				return has ? (*out = def, 0) : keep(c, json_real(0), out);
			return keep(c, json_real(d), out);
		}
		if (!ok || is_type(v, JSON_STRING))
			return jj_err(c, line, "%s needs a number", name);
		if (name[0] == 'a')
			return keep(c, json_is_integer(v.j) ? json_integer(llabs(json_integer_value(v.j))) : json_real(fabs(d)), out);
		jv prec = jj_arg(args, na, kwn, kw, nk, 0, "precision", &has);
		if (json_is_integer(v.j))
			return *out = v, 0;
		double p = pow(10, is_type(prec, JSON_INTEGER) ? (double)json_integer_value(prec.j) : 0);
		return keep(c, json_real(round(d * p) / p), out);
	}
	if (!strcmp(name, "trim") || !strcmp(name, "lower") || !strcmp(name, "upper") ||
	    !strcmp(name, "capitalize") || !strcmp(name, "title") || !strcmp(name, "replace")) {
		if (text_of(c, v, &s))
			return -1;
		const char *m = !strcmp(name, "trim") ? "strip" : name;
		return jj_str_method(c, m, s, args, na, out, line);
	}
	if (!strcmp(name, "indent")) {
		jv w = jj_arg(args, na, kwn, kw, nk, 0, "width", &has);
		jv first = jj_arg(args, na, kwn, kw, nk, 1, "first", &has);
		if (text_of(c, v, &s))
			return -1;
		int width = is_type(w, JSON_INTEGER) ? (int)json_integer_value(w.j) : 4;
		const char *p = json_string_value(s.j);
		util_buf b = { 0 };
		for (int line_no = 0; *p || line_no == 0; line_no++) {
			const char *e = strchr(p, '\n');
			size_t l = e ? (size_t)(e - p) : strlen(p);
			if ((line_no > 0 || jj_truthy(first)) && l > 0)
				for (int i = 0; i < width; i++)
					util_buf_puts(&b, " ");
			util_buf_add(&b, p, l);
			if (!e)
				break;
			util_buf_puts(&b, "\n");
			p = e + 1;
		}
		int rc = keep(c, json_stringn(b.p ? b.p : "", b.len), out);
		free(b.p);
		return rc;
	}
	if (!strcmp(name, "format")) {
		/* "%s, %s" | format(a, b): Python's % with the arguments */
		json_t *l = jj_keep(c, json_array());
		for (int i = 0; l && i < na; i++)
			if (args[i].k == JV_JSON)
				json_array_append(l, args[i].j);
		if (!l || text_of(c, v, &s))
			return -1;
		return jj_format_percent(c, s, jv_json(l), out, line);
	}
	if (!strcmp(name, "wordcount")) {
		if (text_of(c, v, &s))
			return -1;
		long long n = 0;
		int in = 0;
		for (const char *p = json_string_value(s.j); *p; p++) {
			int w = !strchr(" \t\n\r\f\v", *p);
			n += w && !in;
			in = w;
		}
		return keep(c, json_integer(n), out);
	}
	return jj_err(c, line, "no filter named '%s'", name);
}
