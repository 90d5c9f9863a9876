/* chat_jinja_ops.c - the operators with Python's semantics: + on
 * numbers, strings and lists (str + dict is an error, as in Python), //
 * and % flooring, ** on ints staying an int, ~ joining str() of both,
 * comparisons, "in" on strings, lists and dict keys. */
#include "config.h"

#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "chat_jinja.h"

static int mk(jj_ctx *c, json_t *j, jv *out)
{
	if (!jj_keep(c, j))
		return jj_err(c, 0, "out of memory");
	*out = jv_json(j);
	return 0;
}

/* ---- operators ---- */


static int type_error(jj_ctx *c, int line, const char *op, jv a, jv b)
{
	if (a.k == JV_UNDEF || b.k == JV_UNDEF)
		return jj_err(c, line, "'%s' is undefined", a.k == JV_UNDEF ? a.name : b.name);
	if (!strcmp(op, "+") && jv_is_str(a))
		return jj_err(c, line, "can only concatenate str (not \"%s\") to str", jj_type_name(b));
	return jj_err(c, line, "unsupported operand type(s) for %s: '%s' and '%s'", op, jj_type_name(a),
		      jj_type_name(b));
}

/* Python's ints are unbounded; a template's arithmetic beyond 64 bits is
 * refused rather than wrapped */
static int overflow(jj_ctx *c, int line)
{
	return jj_err(c, line, "integer overflow");
}

static int repeat(jj_ctx *c, jv seq, long long k, jv *out)
{
	size_t unit = jv_is_str(seq) ? json_string_length(seq.j) : json_array_size(seq.j);
	if (k > 0 && unit && (unsigned long long)k > (64ULL << 20) / unit)
		return jj_err(c, 0, "repetition too large");
	if (jv_is_str(seq)) {
		util_buf b = { 0 };
		for (long long i = 0; i < k; i++)
			util_buf_add(&b, json_string_value(seq.j), json_string_length(seq.j));
		int rc = mk(c, json_stringn(b.p ? b.p : "", b.len), out);
		free(b.p);
		return rc;
	}
	json_t *l = json_array();
	for (long long i = 0; l && i < k; i++)
		json_array_extend(l, seq.j);
	return mk(c, l, out);
}

int jj_arith(jj_ctx *c, const char *op, jv a, jv b, jv *out, int line)
{
	if (op[0] == '~') {
		util_buf buf = { 0 };
		int rc = jj_str(c, a, &buf) || jj_str(c, b, &buf) ? -1
			 : mk(c, json_stringn(buf.p ? buf.p : "", buf.len), out);
		free(buf.p);
		return rc;
	}
	if (jv_is_num(a) && jv_is_num(b)) {
		int ints = jv_is_int(a) && jv_is_int(b);
		double x = jv_num(a), y = jv_num(b);
		long long i = ints ? jv_int(a) : 0, j = ints ? jv_int(b) : 0, r64;
		switch (op[0]) {
		case '+':
			if (ints && __builtin_add_overflow(i, j, &r64))
				return overflow(c, line);
			return mk(c, ints ? json_integer(r64) : json_real(x + y), out);
		case '-':
			if (ints && __builtin_sub_overflow(i, j, &r64))
				return overflow(c, line);
			return mk(c, ints ? json_integer(r64) : json_real(x - y), out);
		case '*':
			if (op[1] == '*') {
				if (ints && j >= 0) {
					long long r = 1;
					for (long long k = 0; k < j; k++)
						if (__builtin_mul_overflow(r, i, &r))
							return overflow(c, line);
					return mk(c, json_integer(r), out);
				}
				return mk(c, json_real(pow(x, y)), out);
			}
			if (ints && __builtin_mul_overflow(i, j, &r64))
				return overflow(c, line);
			return mk(c, ints ? json_integer(r64) : json_real(x * y), out);
		case '/':
			if (y == 0)
				return jj_err(c, line, "division by zero");
			if (op[1] == '/') {
				if (ints) {
					if (i == LLONG_MIN && j == -1)
						return overflow(c, line);
					long long q = i / j;
					if ((i % j != 0) && ((i < 0) != (j < 0)))
						q--;
					return mk(c, json_integer(q), out);
				}
				return mk(c, json_real(floor(x / y)), out);
			}
			return mk(c, json_real(x / y), out);
		case '%':
			if (y == 0)
				return jj_err(c, line, "modulo by zero");
			if (ints) {
				if (j == -1)
					return mk(c, json_integer(0), out);
				long long r = i % j;
				if (r != 0 && ((r < 0) != (j < 0)))
					r += j;
				return mk(c, json_integer(r), out);
			}
			double r = fmod(x, y);
			if (r != 0 && ((r < 0) != (y < 0)))
				r += y;
			return mk(c, json_real(r), out);
		}
	}
	if (op[0] == '+' && jv_is_str(a) && jv_is_str(b)) {
		size_t n = json_string_length(a.j), m = json_string_length(b.j);
		char *p = malloc(n + m + 1);
		if (!p)
			return jj_err(c, 0, "out of memory");
		memcpy(p, json_string_value(a.j), n);
		memcpy(p + n, json_string_value(b.j), m);
		int rc = mk(c, json_stringn_nocheck(p, n + m), out);
		free(p);
		return rc;
	}
	if (op[0] == '+' && a.k == JV_JSON && b.k == JV_JSON && json_is_array(a.j) && json_is_array(b.j)) {
		json_t *l = json_copy(a.j);
		if (l)
			json_array_extend(l, b.j);
		return mk(c, l, out);
	}
	if (!strcmp(op, "*") && (jv_is_str(a) || (a.k == JV_JSON && json_is_array(a.j))) && jv_is_int(b))
		return repeat(c, a, jv_int(b), out);
	if (!strcmp(op, "*") && (jv_is_str(b) || (b.k == JV_JSON && json_is_array(b.j))) && jv_is_int(a))
		return repeat(c, b, jv_int(a), out);
	if (!strcmp(op, "%") && jv_is_str(a))
		return jj_format_percent(c, a, b, out, line);
	return type_error(c, line, op, a, b);
}

static int contains(jj_ctx *c, jv hay, jv needle, int *res, int line)
{
	*res = 0;
	if (hay.k == JV_UNDEF)
		return 0;
	if (hay.k == JV_NS)
		hay = jv_json(hay.j);
	if (hay.k != JV_JSON)
		return jj_err(c, line, "argument of type '%s' is not iterable", jj_type_name(hay));
	if (json_is_string(hay.j)) {
		if (!jv_is_str(needle))
			return jj_err(c, line, "'in <string>' requires string as left operand, not %s",
				      jj_type_name(needle));
		size_t n = json_string_length(hay.j), m = json_string_length(needle.j);
		const char *h = json_string_value(hay.j), *nd = json_string_value(needle.j);
		for (size_t i = 0; i + m <= n && !*res; i++)
			*res = !memcmp(h + i, nd, m);
		return 0;
	}
	if (json_is_object(hay.j)) {
		*res = jv_is_str(needle) && json_object_get(hay.j, json_string_value(needle.j));
		return 0;
	}
	if (json_is_array(hay.j)) {
		size_t i;
		json_t *v;
		json_array_foreach(hay.j, i, v)
			if (jj_equal(jv_json(v), needle)) {
				*res = 1;
				break;
			}
		return 0;
	}
	return jj_err(c, line, "argument of type '%s' is not iterable", jj_type_name(hay));
}

static int order(jj_ctx *c, const char *op, jv a, jv b, int *res, int line)
{
	int cmp;
	if (jv_is_num(a) && jv_is_num(b)) {
		double x = jv_num(a), y = jv_num(b);
		cmp = x < y ? -1 : x > y;
	} else if (jv_is_str(a) && jv_is_str(b)) {
		size_t n = json_string_length(a.j), m = json_string_length(b.j);
		int r = memcmp(json_string_value(a.j), json_string_value(b.j), n < m ? n : m);
		cmp = r ? (r < 0 ? -1 : 1) : (n < m ? -1 : n > m);
	} else {
		if (a.k == JV_UNDEF || b.k == JV_UNDEF)
			return jj_err(c, line, "'%s' is undefined", a.k == JV_UNDEF ? a.name : b.name);
		return jj_err(c, line, "'%s' not supported between instances of '%s' and '%s'", op,
			      jj_type_name(a), jj_type_name(b));
	}
	*res = op[0] == '<' ? (op[1] ? cmp <= 0 : cmp < 0) : (op[1] ? cmp >= 0 : cmp > 0);
	return 0;
}

int jj_compare(jj_ctx *c, const char *op, jv a, jv b, int *res, int line)
{
	if (!strcmp(op, "=="))
		return *res = jj_equal(a, b), 0;
	if (!strcmp(op, "!="))
		return *res = !jj_equal(a, b), 0;
	if (!strcmp(op, "in") || !strcmp(op, "not in")) {
		if (contains(c, b, a, res, line))
			return -1;
		if (op[0] == 'n')
			*res = !*res;
		return 0;
	}
	return order(c, op, a, b, res, line);
}

