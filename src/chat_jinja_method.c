/* chat_jinja_method.c - Python's str, dict and list methods as templates
 * call them (content.split('</think>')[-1].lstrip('\n'), message.get(),
 * args.items()), the mutating ones refused as in Hugging Face's immutable
 * sandbox, "%" formatting, and the globals: range, namespace, dict,
 * raise_exception (its message becomes the render's error) and
 * strftime_now. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <utf8proc.h>

#include "chat_jinja.h"

jv jj_arg(jv *args, int na, char **kwn, jv *kw, int nk, int pos, const char *name, int *has);
int jj_str_method(jj_ctx *c, const char *name, jv self, jv *args, int na, jv *out, int line);
int jj_format_percent(jj_ctx *c, jv fmt, jv args, jv *out, int line);

static int keep(jj_ctx *c, json_t *j, jv *out)
{
	if (!jj_keep(c, j))
		return jj_err(c, 0, "out of memory");
	*out = jv_json(j);
	return 0;
}

static int is_s(jv v)
{
	return v.k == JV_JSON && json_is_string(v.j);
}

static int str_out(jj_ctx *c, const char *p, size_t n, jv *out)
{
	return keep(c, json_stringn(p, n), out);
}

/* is the code point at p one of chars (NULL: Python whitespace)? */
static int strip_char(const char *p, size_t left, const char *chars, size_t nch, size_t *len)
{
	if (!chars)
		return jj_py_space(p, left, len);
	size_t l = 1;
	while (l < left && ((unsigned char)p[l] & 0xC0) == 0x80)
		l++;
	*len = l;
	for (size_t i = 0; i + l <= nch; i++)
		if (!memcmp(chars + i, p, l))
			return 1;
	return 0;
}

static int strip(jj_ctx *c, jv self, jv chars, int left, int right, jv *out)
{
	const char *p = json_string_value(self.j), *ch = is_s(chars) ? json_string_value(chars.j) : NULL;
	size_t n = json_string_length(self.j), nch = ch ? json_string_length(chars.j) : 0, l;
	while (left && n && strip_char(p, n, ch, nch, &l)) {
		p += l;
		n -= l;
	}
	while (right && n) {
		size_t k = n - 1;
		while (k > 0 && ((unsigned char)p[k] & 0xC0) == 0x80)
			k--;
		if (!strip_char(p + k, n - k, ch, nch, &l) || k + l != n)
			break;
		n = k;
	}
	return str_out(c, p, n, out);
}

static const char *find_in(const char *h, size_t n, const char *nd, size_t m, int last)
{
	const char *r = NULL;
	for (size_t i = 0; i + m <= n; i++)
		if (!memcmp(h + i, nd, m)) {
			r = h + i;
			if (!last)
				break;
		}
	return r;
}

static int split(jj_ctx *c, jv self, jv sep, jv maxsplit, int from_right, jv *out, int line)
{
	const char *p = json_string_value(self.j);
	size_t n = json_string_length(self.j);
	long long max = maxsplit.k == JV_JSON && json_is_integer(maxsplit.j) ? json_integer_value(maxsplit.j) : -1;
	json_t *l = json_array();
	if (!l)
		return jj_err(c, 0, "out of memory");
	if (!is_s(sep)) {
		/* runs of whitespace; leading and trailing ones give nothing */
		size_t i = 0, len;
		json_t *parts = json_array();
		while (i < n) {
			while (i < n && jj_py_space(p + i, n - i, &len))
				i += len;
			if (i >= n)
				break;
			size_t s = i;
			while (i < n && !jj_py_space(p + i, n - i, &len))
				i += ((unsigned char)p[i] & 0xC0) == 0x80 ? 1 : 1;
			json_array_append_new(parts, json_stringn(p + s, i - s));
		}
		(void)from_right;
		if (max >= 0 && (long long)json_array_size(parts) > max + 1) {
			/* rejoin the tail as Python keeps it: rare in templates */
			json_decref(parts);
			json_decref(l);
			return jj_err(c, line, "split() with maxsplit and no separator is not supported");
		}
		json_decref(l);
		return keep(c, parts, out);
	}
	const char *s = json_string_value(sep.j);
	size_t m = json_string_length(sep.j);
	if (!m) {
		json_decref(l);
		return jj_err(c, line, "empty separator");
	}
	if (!from_right) {
		size_t start = 0;
		for (long long k = 0; max < 0 || k < max; k++) {
			const char *f = find_in(p + start, n - start, s, m, 0);
			if (!f)
				break;
			json_array_append_new(l, json_stringn(p + start, (size_t)(f - p) - start));
			start = (size_t)(f - p) + m;
		}
		json_array_append_new(l, json_stringn(p + start, n - start));
	} else {
		size_t end = n;
		for (long long k = 0; max < 0 || k < max; k++) {
			const char *f = find_in(p, end, s, m, 1);
			if (!f)
				break;
			size_t off = (size_t)(f - p) + m;
			json_array_insert_new(l, 0, json_stringn(p + off, end - off));
			end = (size_t)(f - p);
		}
		json_array_insert_new(l, 0, json_stringn(p, end));
	}
	return keep(c, l, out);
}

/* lower/upper/title/capitalize with Unicode's simple case mappings
 * (utf8proc; Python's full mappings differ for a few letters such as ß) */
static int case_map(jj_ctx *c, jv self, int mode, jv *out)
{
	const utf8proc_uint8_t *p = (const utf8proc_uint8_t *)json_string_value(self.j);
	utf8proc_ssize_t n = (utf8proc_ssize_t)json_string_length(self.j);
	util_buf b = { 0 };
	int prev_cased = 0, first = 1;
	for (utf8proc_ssize_t i = 0; i < n;) {
		utf8proc_int32_t cp;
		utf8proc_ssize_t l = utf8proc_iterate(p + i, n - i, &cp);
		if (l <= 0) {
			util_buf_add(&b, (const char *)p + i, 1);
			i++;
			continue;
		}
		utf8proc_category_t cat = utf8proc_category(cp);
		int cased = cat == UTF8PROC_CATEGORY_LU || cat == UTF8PROC_CATEGORY_LL || cat == UTF8PROC_CATEGORY_LT;
		utf8proc_int32_t m;
		if (mode == 'L')
			m = utf8proc_tolower(cp);
		else if (mode == 'U')
			m = utf8proc_toupper(cp);
		else if (mode == 'T')
			m = prev_cased ? utf8proc_tolower(cp) : utf8proc_totitle(cp);
		else
			m = first ? utf8proc_totitle(cp) : utf8proc_tolower(cp);
		utf8proc_uint8_t enc[4];
		utf8proc_ssize_t k = utf8proc_encode_char(m, enc);
		util_buf_add(&b, (const char *)enc, (size_t)k);
		prev_cased = cased;
		first = 0;
		i += l;
	}
	int rc = b.oom ? jj_err(c, 0, "out of memory") : str_out(c, b.p ? b.p : "", b.len, out);
	free(b.p);
	return rc;
}

static int affix(jv self, jv a, int end)
{
	if (a.k == JV_JSON && json_is_array(a.j)) {
		for (size_t i = 0; i < json_array_size(a.j); i++)
			if (affix(self, jv_json(json_array_get(a.j, i)), end))
				return 1;
		return 0;
	}
	if (!is_s(a))
		return 0;
	size_t n = json_string_length(self.j), m = json_string_length(a.j);
	return m <= n && !memcmp(json_string_value(self.j) + (end ? n - m : 0), json_string_value(a.j), m);
}

int jj_str_method(jj_ctx *c, const char *name, jv self, jv *args, int na, jv *out, int line)
{
	jv a0 = na > 0 ? args[0] : jv_undef(""), a1 = na > 1 ? args[1] : jv_undef("");
	const char *p = json_string_value(self.j);
	size_t n = json_string_length(self.j);
	if (!strcmp(name, "startswith") || !strcmp(name, "endswith")) {
		*out = jv_json(affix(self, a0, name[0] == 'e') ? json_true() : json_false());
		return 0;
	}
	if (!strcmp(name, "strip") || !strcmp(name, "lstrip") || !strcmp(name, "rstrip"))
		return strip(c, self, a0, name[0] != 'r', name[0] != 'l', out);
	if (!strcmp(name, "split") || !strcmp(name, "rsplit"))
		return split(c, self, a0, a1, name[0] == 'r', out, line);
	if (!strcmp(name, "lower") || !strcmp(name, "upper") || !strcmp(name, "title") || !strcmp(name, "capitalize"))
		return case_map(c, self, name[0] == 'l' ? 'L' : name[0] == 'u' ? 'U' : name[0] == 't' ? 'T' : 'C', out);
	if (!strcmp(name, "replace")) {
		if (!is_s(a0) || !is_s(a1))
			return jj_err(c, line, "replace() needs two strings");
		long long count = na > 2 && args[2].k == JV_JSON && json_is_integer(args[2].j) ? json_integer_value(args[2].j) : -1;
		const char *o = json_string_value(a0.j), *w = json_string_value(a1.j);
		size_t on = json_string_length(a0.j), wn = json_string_length(a1.j);
		util_buf b = { 0 };
		size_t i = 0;
		for (long long k = 0; i <= n && (count < 0 || k < count); k++) {
			const char *f = on ? find_in(p + i, n - i, o, on, 0) : (i <= n ? p + i : NULL);
			if (!f)
				break;
			util_buf_add(&b, p + i, (size_t)(f - p) - i);
			util_buf_add(&b, w, wn);
			i = (size_t)(f - p) + on;
			if (!on) {
				if (i >= n)
					break;
				util_buf_add(&b, p + i, 1);
				i++;
			}
		}
		if (i < n)
			util_buf_add(&b, p + i, n - i);
		int rc = str_out(c, b.p ? b.p : "", b.len, out);
		free(b.p);
		return rc;
	}
	if (!strcmp(name, "find") || !strcmp(name, "rfind") || !strcmp(name, "index") || !strcmp(name, "count")) {
		if (!is_s(a0))
			return jj_err(c, line, "%s() needs a string", name);
		const char *nd = json_string_value(a0.j);
		size_t m = json_string_length(a0.j);
		if (name[0] == 'c') {
			long long k = 0;
			for (size_t i = 0; m && i + m <= n;)
				if (!memcmp(p + i, nd, m)) {
					k++;
					i += m;
				} else {
					i++;
				}
			return keep(c, json_integer(m ? k : (long long)jj_utf8_len(p, n) + 1), out);
		}
		const char *f = find_in(p, n, nd, m, name[0] == 'r');
		if (!f && name[0] == 'i')
			return jj_err(c, line, "substring not found");
		return keep(c, json_integer(f ? (long long)jj_utf8_len(p, (size_t)(f - p)) : -1), out);
	}
	if (!strcmp(name, "join")) {
		json_t *items;
		if (jj_iter(c, a0, &items, line))
			return -1;
		util_buf b = { 0 };
		for (size_t i = 0; i < json_array_size(items); i++) {
			json_t *x = json_array_get(items, i);
			if (!json_is_string(x)) {
				free(b.p);
				return jj_err(c, line, "sequence item %zu: expected str instance", i);
			}
			if (i)
				util_buf_add(&b, p, n);
			util_buf_add(&b, json_string_value(x), json_string_length(x));
		}
		int rc = str_out(c, b.p ? b.p : "", b.len, out);
		free(b.p);
		return rc;
	}
	if (!strcmp(name, "removeprefix") || !strcmp(name, "removesuffix")) {
		int end = name[6] == 's';
		if (!affix(self, a0, end))
			return *out = self, 0;
		size_t m = json_string_length(a0.j);
		return str_out(c, p + (end ? 0 : m), n - m, out);
	}
	if (!strncmp(name, "is", 2)) {
		int ok = n > 0;
		for (size_t i = 0; i < n; i++) {
			unsigned char ch = (unsigned char)p[i];
			int d = ch >= '0' && ch <= '9', al = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z');
			if (!strcmp(name, "isdigit")) ok &= d;
			else if (!strcmp(name, "isalpha")) ok &= al;
			else if (!strcmp(name, "isalnum")) ok &= al || d;
			else if (!strcmp(name, "isspace")) ok &= strchr(" \t\n\r\f\v", ch) != NULL;
			else if (!strcmp(name, "islower")) ok &= !(ch >= 'A' && ch <= 'Z');
			else if (!strcmp(name, "isupper")) ok &= !(ch >= 'a' && ch <= 'z');
		}
		*out = jv_json(ok ? json_true() : json_false());
		return 0;
	}
	if (!strcmp(name, "format")) {
		util_buf b = { 0 };
		int auto_i = 0;
		for (size_t i = 0; i < n; i++) {
			if (p[i] == '{' && i + 1 < n && p[i + 1] == '{') {
				util_buf_puts(&b, "{");
				i++;
			} else if (p[i] == '}' && i + 1 < n && p[i + 1] == '}') {
				util_buf_puts(&b, "}");
				i++;
			} else if (p[i] == '{') {
				const char *e = memchr(p + i, '}', n - i);
				if (!e) {
					free(b.p);
					return jj_err(c, line, "format: unmatched '{'");
				}
				int idx = e == p + i + 1 ? auto_i++ : atoi(p + i + 1);
				if (idx < na)
					jj_str(c, args[idx], &b);
				i = (size_t)(e - p);
			} else {
				util_buf_add(&b, p + i, 1);
			}
		}
		int rc = str_out(c, b.p ? b.p : "", b.len, out);
		free(b.p);
		return rc;
	}
	return jj_err(c, line, "str.%s() is not supported", name);
}

int jj_format_percent(jj_ctx *c, jv fmt, jv args, jv *out, int line)
{
	const char *p = json_string_value(fmt.j);
	size_t n = json_string_length(fmt.j), ai = 0;
	int many = args.k == JV_JSON && json_is_array(args.j);
	util_buf b = { 0 };
	for (size_t i = 0; i < n; i++) {
		if (p[i] != '%') {
			util_buf_add(&b, p + i, 1);
			continue;
		}
		if (++i >= n)
			break;
		if (p[i] == '%') {
			util_buf_puts(&b, "%");
			continue;
		}
		jv a = many ? jv_json(json_array_get(args.j, ai)) : args;
		if (many && ai >= json_array_size(args.j)) {
			free(b.p);
			return jj_err(c, line, "not enough arguments for format string");
		}
		ai++;
		if ((p[i] == 'd' || p[i] == 'i') && a.k == JV_JSON && json_is_number(a.j)) {
			char num[32];
			snprintf(num, sizeof num, "%lld", (long long)json_number_value(a.j));
			util_buf_puts(&b, num);
		} else {
			jj_str(c, a, &b);
		}
	}
	int rc = str_out(c, b.p ? b.p : "", b.len, out);
	free(b.p);
	return rc;
}

int jj_call_method(jj_ctx *c, jv m, jv *args, int na, char **kwn, jv *kw, int nk, jv *out, int line)
{
	jv self = jv_json(m.j);
	const char *name = m.name;
	int has;
	if (json_is_string(m.j))
		return jj_str_method(c, name, self, args, na, out, line);
	if (json_is_object(m.j)) {
		if (!strcmp(name, "get")) {
			jv k = jj_arg(args, na, kwn, kw, nk, 0, "key", &has);
			jv d = jj_arg(args, na, kwn, kw, nk, 1, "default", &has);
			json_t *v = is_s(k) ? json_object_get(m.j, json_string_value(k.j)) : NULL;
			*out = v ? jv_json(v) : has ? d : jv_json(json_null());
			return 0;
		}
		if (!strcmp(name, "items") || !strcmp(name, "keys") || !strcmp(name, "values")) {
			json_t *l = json_array();
			const char *k;
			json_t *v;
			json_object_foreach(m.j, k, v)
				json_array_append_new(l, name[0] == 'i' ? json_pack("[sO]", k, v)
						      : name[0] == 'k' ? json_string(k) : json_incref(v));
			return keep(c, l, out);
		}
		if (!strcmp(name, "copy"))
			return keep(c, json_copy(m.j), out);
	}
	if (json_is_array(m.j)) {
		if (!strcmp(name, "copy"))
			return keep(c, json_copy(m.j), out);
		if (!strcmp(name, "index") || !strcmp(name, "count")) {
			long long k = 0, at = -1;
			for (size_t i = 0; na > 0 && i < json_array_size(m.j); i++)
				if (jj_equal(jv_json(json_array_get(m.j, i)), args[0])) {
					k++;
					if (at < 0)
						at = (long long)i;
				}
			if (name[0] == 'i' && at < 0)
				return jj_err(c, line, "x not in list");
			return keep(c, json_integer(name[0] == 'i' ? at : k), out);
		}
	}
	return jj_err(c, line, "access to attribute '%s' of '%s' object is unsafe.", name, jj_type_name(self));
}

static int range(jj_ctx *c, jv *args, int na, jv *out, int line)
{
	long long v[3] = { 0, 0, 1 };
	if (na < 1 || na > 3)
		return jj_err(c, line, "range expected 1 to 3 arguments");
	for (int i = 0; i < na; i++) {
		if (args[i].k != JV_JSON || !(json_is_integer(args[i].j) || json_is_boolean(args[i].j)))
			return jj_err(c, line, "range() needs integers");
		v[na == 1 ? 1 : i] = json_is_boolean(args[i].j) ? json_is_true(args[i].j) : json_integer_value(args[i].j);
	}
	if (v[2] == 0)
		return jj_err(c, line, "range() arg 3 must not be zero");
	long long span;
	if (__builtin_sub_overflow(v[1], v[0], &span) || span / v[2] > 100000)
		return jj_err(c, line, "range too big: the sandbox allows 100000 numbers (MAX_RANGE)");
	json_t *l = json_array();
	for (long long i = v[0]; l && (v[2] > 0 ? i < v[1] : i > v[1]); i += v[2])
		json_array_append_new(l, json_integer(i));
	return keep(c, l, out);
}

int jj_call_global(jj_ctx *c, jv f, jv *args, int na, char **kwn, jv *kw, int nk, jv *out, int line)
{
	const char *name = f.name;
	if (!strcmp(name, "range"))
		return range(c, args, na, out, line);
	if (!strcmp(name, "namespace") || !strcmp(name, "dict")) {
		json_t *o = json_object();
		if (na > 0 && args[0].k == JV_JSON && json_is_object(args[0].j))
			json_object_update(o, args[0].j);
		for (int i = 0; i < nk; i++)
			if (kw[i].k == JV_JSON)
				json_object_set(o, kwn[i], kw[i].j);
		if (keep(c, o, out))
			return -1;
		out->k = name[0] == 'n' ? JV_NS : JV_JSON;
		return 0;
	}
	if (!strcmp(name, "raise_exception")) {
		util_buf b = { 0 };
		if (na > 0)
			jj_str(c, args[0], &b);
		jj_err(c, 0, "%s", b.p ? b.p : "raise_exception()");
		free(b.p);
		return -1;
	}
	if (!strcmp(name, "strftime_now")) {
		char buf[256];
		time_t now = time(NULL);
		struct tm tm;
		localtime_r(&now, &tm);
		if (na < 1 || !is_s(args[0]))
			return jj_err(c, line, "strftime_now needs a format");
		size_t k = strftime(buf, sizeof buf, json_string_value(args[0].j), &tm);
		return str_out(c, buf, k, out);
	}
	return jj_err(c, line, "'%s' is not callable", name);
}
