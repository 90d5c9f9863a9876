/* chat_jinja_eval.c - running the syntax tree: scopes (each loop
 * iteration and each macro call has its own, as in Jinja, so a set inside
 * a loop is gone after it: templates use namespace() to carry state), the
 * operators with Python's semantics, macros with defaults and caller(),
 * break/continue. Every value made during a render is kept in the
 * context and released when the render ends. */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chat_jinja.h"
#include "util_array.h"

struct jj_scope {
	jj_scope *parent;
	char **names;
	jv *vals;
	int n, cap;
};

enum { RUN_OK = 0, RUN_BREAK = 1, RUN_CONTINUE = 2 };

json_t *jj_keep(jj_ctx *c, json_t *j)
{
	if (!j)
		return NULL;
	if (util_array_grow(&c->keep, &c->cap_keep, c->n_keep + 1, 256)) {
		json_decref(j);
		return NULL;
	}
	c->keep[c->n_keep++] = j;
	return j;
}

jv jv_json(json_t *j)
{
	return (jv){ .k = JV_JSON, .j = j };
}

jv jv_undef(const char *what)
{
	return (jv){ .k = JV_UNDEF, .name = what };
}

int jj_err(jj_ctx *c, int line, const char *fmt, ...)
{
	char msg[400];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	if (line > 0)
		coli_err_set(c->err, -EINVAL, "chat template line %d: %s", line, msg);
	else
		coli_err_set(c->err, -EINVAL, "%s", msg);
	return -1;
}

static jj_scope *scope_new(jj_ctx *c, jj_scope *parent)
{
	if (util_array_grow(&c->scopes, &c->cap_scopes, c->n_scopes + 1, 64))
		return NULL;
	jj_scope *s = calloc(1, sizeof *s);
	if (!s)
		return NULL;
	s->parent = parent;
	c->scopes[c->n_scopes++] = s;
	return s;
}

static int scope_set(jj_ctx *c, jj_scope *s, const char *name, jv v)
{
	for (int i = 0; i < s->n; i++)
		if (!strcmp(s->names[i], name)) {
			s->vals[i] = v;
			return 0;
		}
	int cap_names = s->cap, cap_vals = s->cap;   /* two arrays, one capacity */
	if (util_array_grow(&s->names, &cap_names, s->n + 1, 8) ||
	    util_array_grow(&s->vals, &cap_vals, s->n + 1, 8))
		return jj_err(c, 0, "out of memory");
	s->cap = cap_vals;
	s->names[s->n] = (char *)name;   /* names live in the tree or the vars */
	s->vals[s->n++] = v;
	return 0;
}

static const char *const globals[] = { "range", "namespace", "raise_exception", "strftime_now",
				       "dict", NULL };

static jv lookup(jj_ctx *c, jj_scope *s, const char *name)
{
	for (; s; s = s->parent)
		for (int i = 0; i < s->n; i++)
			if (!strcmp(s->names[i], name))
				return s->vals[i];
	json_t *v = json_object_get(c->vars, name);
	if (v)
		return jv_json(v);
	for (int i = 0; globals[i]; i++)
		if (!strcmp(globals[i], name))
			return (jv){ .k = JV_FUNC, .name = globals[i] };
	return jv_undef(name);
}

static int eval(jj_ctx *c, const jj_node *x, jj_scope *s, jv *out);
static int run(jj_ctx *c, const jj_node *x, jj_scope *s);

static int mk(jj_ctx *c, json_t *j, jv *out)
{
	if (!jj_keep(c, j))
		return jj_err(c, 0, "out of memory");
	*out = jv_json(j);
	return 0;
}

/* ---- expressions ---- */

typedef struct argv {
	jv pos[16], kw[16];
	char *kwn[16];
	int np, nk;
} argv;

static int eval_args(jj_ctx *c, const jj_node *x, jj_scope *s, argv *a)
{
	if (x->args.n > 16 || x->kw.n > 16)
		return jj_err(c, x->line, "too many arguments");
	a->np = x->args.n;
	a->nk = x->kw.n;
	for (int i = 0; i < x->args.n; i++)
		if (eval(c, x->args.v[i], s, &a->pos[i]))
			return -1;
	for (int i = 0; i < x->kw.n; i++) {
		a->kwn[i] = x->kwn[i];
		if (eval(c, x->kw.v[i], s, &a->kw[i]))
			return -1;
	}
	return 0;
}

static int call_value(jj_ctx *c, jv f, argv *a, jv *out, int line)
{
	switch (f.k) {
	case JV_MACRO: return jj_call_macro(c, f, a->pos, a->np, a->kwn, a->kw, a->nk, out, line);
	case JV_FUNC: return jj_call_global(c, f, a->pos, a->np, a->kwn, a->kw, a->nk, out, line);
	case JV_METHOD: return jj_call_method(c, f, a->pos, a->np, a->kwn, a->kw, a->nk, out, line);
	case JV_UNDEF: return jj_err(c, line, "'%s' is undefined", f.name);
	default: return jj_err(c, line, "'%s' object is not callable", jj_type_name(f));
	}
}

static int slice(jj_ctx *c, const jj_node *x, jj_scope *s, jv *out)
{
	jv o, bound[3] = { jv_undef(""), jv_undef(""), jv_undef("") };
	if (eval(c, x->a, s, &o))
		return -1;
	const jj_node *parts[3] = { x->b, x->c, x->d };
	for (int i = 0; i < 3; i++)
		if (parts[i] && eval(c, parts[i], s, &bound[i]))
			return -1;
	int str = jv_is_str(o);
	if (!str && !(o.k == JV_JSON && json_is_array(o.j)))
		return jj_err(c, x->line, "'%s' object is not subscriptable", jj_type_name(o));
	const char *p = str ? json_string_value(o.j) : NULL;
	size_t bytes = str ? json_string_length(o.j) : 0;
	long long n = str ? (long long)jj_utf8_len(p, bytes) : (long long)json_array_size(o.j);
	long long step = bound[2].k == JV_JSON && !json_is_null(bound[2].j) ? jv_int(bound[2]) : 1;
	if (step == 0)
		return jj_err(c, x->line, "slice step cannot be zero");
	long long lo = 0, hi = 0;
	for (int i = 0; i < 2; i++) {
		jv b = bound[i];
		long long v;
		if (b.k != JV_JSON || json_is_null(b.j)) {
			v = i == 0 ? (step > 0 ? 0 : n - 1) : (step > 0 ? n : -1);
		} else {
			if (!jv_is_int(b))
				return jj_err(c, x->line, "slice indices must be integers or None");
			v = jv_int(b);
			if (v < 0)
				v += n;
			if (step > 0)
				v = v < 0 ? 0 : v > n ? n : v;
			else
				v = v < -1 ? -1 : v > n - 1 ? n - 1 : v;
		}
		*(i == 0 ? &lo : &hi) = v;
	}
	json_t *res = str ? NULL : json_array();
	util_buf b = { 0 };
	for (long long i = lo; step > 0 ? i < hi : i > hi; i += step) {
		if (str) {
			size_t a = jj_utf8_off(p, bytes, (size_t)i), e = jj_utf8_off(p, bytes, (size_t)i + 1);
			util_buf_add(&b, p + a, e - a);
		} else {
			json_array_append(res, json_array_get(o.j, (size_t)i));
		}
	}
	if (str) {
		res = json_stringn(b.p ? b.p : "", b.len);
		free(b.p);
	}
	return mk(c, res, out);
}

static int eval(jj_ctx *c, const jj_node *x, jj_scope *s, jv *out)
{
	jv a, b;
	argv args;
	int r;
	switch (x->kind) {
	case JN_CONST:
		*out = jv_json(x->val);
		return 0;
	case JN_NAME:
		*out = lookup(c, s, x->s);
		return 0;
	case JN_ATTR:
		return eval(c, x->a, s, &a) || jj_getattr(c, a, x->s, out) ? -1 : 0;
	case JN_ITEM:
		return eval(c, x->a, s, &a) || eval(c, x->b, s, &b) || jj_getitem(c, a, b, out) ? -1 : 0;
	case JN_SLICE:
		return slice(c, x, s, out);
	case JN_CALL:
		if (eval(c, x->a, s, &a) || eval_args(c, x, s, &args))
			return -1;
		return call_value(c, a, &args, out, x->line);
	case JN_FILTER:
		if (eval(c, x->a, s, &a) || eval_args(c, x, s, &args))
			return -1;
		return jj_filter(c, x->s, a, args.pos, args.np, args.kwn, args.kw, args.nk, out, x->line);
	case JN_TEST:
		if (eval(c, x->a, s, &a) || eval_args(c, x, s, &args) ||
		    jj_test(c, x->s, a, args.pos, args.np, &r, x->line))
			return -1;
		*out = jv_json((r != 0) != (x->neg != 0) ? json_true() : json_false());
		return 0;
	case JN_BIN:
		return eval(c, x->a, s, &a) || eval(c, x->b, s, &b) || jj_arith(c, x->s, a, b, out, x->line) ? -1 : 0;
	case JN_NEG:
	case JN_POS:
		if (eval(c, x->a, s, &a))
			return -1;
		if (!jv_is_num(a))
			return jj_err(c, x->line, "bad operand type for unary %s: '%s'", x->kind == JN_NEG ? "-" : "+",
				      jj_type_name(a));
		if (x->kind == JN_POS)
			return mk(c, jv_is_int(a) ? json_integer(jv_int(a)) : json_real(jv_num(a)), out);
		if (jv_is_int(a) && jv_int(a) == LLONG_MIN)
			return jj_err(c, x->line, "integer overflow");
		return mk(c, jv_is_int(a) ? json_integer(-jv_int(a)) : json_real(-jv_num(a)), out);
	case JN_NOT:
		if (eval(c, x->a, s, &a))
			return -1;
		*out = jv_json(jj_truthy(a) ? json_false() : json_true());
		return 0;
	case JN_AND:
	case JN_OR:
		if (eval(c, x->a, s, &a))
			return -1;
		if (jj_truthy(a) == (x->kind == JN_OR)) {
			*out = a;
			return 0;
		}
		return eval(c, x->b, s, out);
	case JN_COND:
		if (eval(c, x->b, s, &a))
			return -1;
		if (jj_truthy(a))
			return eval(c, x->a, s, out);
		if (x->c)
			return eval(c, x->c, s, out);
		*out = jv_undef("(if without else)");
		return 0;
	case JN_CMP:
		if (eval(c, x->a, s, &a) || eval(c, x->b, s, &b) || jj_compare(c, x->s, a, b, &r, x->line))
			return -1;
		*out = jv_json(r ? json_true() : json_false());
		return 0;
	case JN_LIST:
	case JN_TUPLE: {
		json_t *l = jj_keep(c, json_array());
		if (!l)
			return jj_err(c, 0, "out of memory");
		for (int i = 0; i < x->args.n; i++) {
			if (eval(c, x->args.v[i], s, &a))
				return -1;
			if (a.k != JV_JSON)
				return jj_err(c, x->line, "a list holds only data values here (got %s)", jj_type_name(a));
			json_array_append(l, a.j);
		}
		*out = jv_json(l);
		return 0;
	}
	case JN_DICT: {
		json_t *d = jj_keep(c, json_object());
		if (!d)
			return jj_err(c, 0, "out of memory");
		for (int i = 0; i < x->args.n; i++) {
			if (eval(c, x->args.v[i], s, &a) || eval(c, x->kw.v[i], s, &b))
				return -1;
			if (!jv_is_str(a))
				return jj_err(c, x->line, "dict keys must be strings here");
			if (b.k != JV_JSON)
				return jj_err(c, x->line, "a dict holds only data values here");
			json_object_set(d, json_string_value(a.j), b.j);
		}
		*out = jv_json(d);
		return 0;
	}
	default:
		return jj_err(c, x->line, "not an expression");
	}
}

/* ---- statements ---- */

static int assign(jj_ctx *c, const jj_node *t, jj_scope *s, jv v)
{
	if (t->kind == JN_NAME)
		return scope_set(c, s, t->s, v);
	if (t->kind == JN_ATTR) {
		jv ns;
		if (eval(c, t->a, s, &ns))
			return -1;
		if (ns.k != JV_NS)
			return jj_err(c, t->line, "cannot assign attribute on non-namespace object");
		if (v.k == JV_UNDEF)
			json_object_del(ns.j, t->s);
		else if (v.k != JV_JSON)
			return jj_err(c, t->line, "a namespace holds only data values here");
		else
			json_object_set(ns.j, t->s, v.j);
		return 0;
	}
	if (t->kind == JN_TUPLE) {
		if (v.k != JV_JSON || !json_is_array(v.j) || json_array_size(v.j) != (size_t)t->args.n)
			return jj_err(c, t->line, "cannot unpack into %d names", t->args.n);
		for (int i = 0; i < t->args.n; i++)
			if (assign(c, t->args.v[i], s, jv_json(json_array_get(v.j, (size_t)i))))
				return -1;
		return 0;
	}
	return jj_err(c, t->line, "cannot assign to this");
}

/* render a body into a string value */
static int capture(jj_ctx *c, const jj_node *body, jj_scope *s, jv *out)
{
	util_buf b = { 0 }, *saved = c->out;
	c->out = &b;
	int rc = run(c, body, s);
	c->out = saved;
	if (rc >= 0)
		rc = b.oom ? jj_err(c, 0, "out of memory") : mk(c, json_stringn(b.p ? b.p : "", b.len), out);
	free(b.p);
	return rc < 0 ? -1 : 0;
}

/* a filter chain whose innermost value is v (block set, filter block) */
static int apply_filters(jj_ctx *c, const jj_node *f, jj_scope *s, jv v, jv *out)
{
	if (!f) {
		*out = v;
		return 0;
	}
	jv in;
	argv args;
	if (apply_filters(c, f->a, s, v, &in) || eval_args(c, f, s, &args))
		return -1;
	return jj_filter(c, f->s, in, args.pos, args.np, args.kwn, args.kw, args.nk, out, f->line);
}

static int loop_object(jj_ctx *c, size_t i, size_t n, json_t *items, jv *out)
{
	json_t *o = json_pack("{s:I,s:I,s:I,s:I,s:b,s:b,s:I,s:i,s:i}", "index", (json_int_t)i + 1,
			      "index0", (json_int_t)i, "revindex", (json_int_t)(n - i), "revindex0",
			      (json_int_t)(n - i - 1), "first", i == 0, "last", i + 1 == n, "length",
			      (json_int_t)n, "depth", 1, "depth0", 0);
	if (o && i > 0)
		json_object_set(o, "previtem", json_array_get(items, i - 1));
	if (o && i + 1 < n)
		json_object_set(o, "nextitem", json_array_get(items, i + 1));
	return mk(c, o, out);
}

/* After a loop iteration: what it made and nothing still holds goes.
 * Nothing made inside an iteration can be reached from outside it except
 * through a JSON container (a namespace attribute, a list), which holds a
 * reference: an iteration's own scope and the scopes of the macros it
 * called are gone (Jinja scoping), so a value whose only reference is the
 * keep list is dead. Long loops thus run in constant memory. */
static void reclaim(jj_ctx *c, size_t keep_mark, size_t scope_mark)
{
	size_t k = keep_mark;
	for (size_t i = keep_mark; i < c->n_keep; i++) {
		json_t *j = c->keep[i];
		if (j->refcount == 1)
			json_decref(j);
		else
			c->keep[k++] = j;
	}
	c->n_keep = k;
	for (size_t i = scope_mark; i < c->n_scopes; i++) {
		free(c->scopes[i]->names);
		free(c->scopes[i]->vals);
		free(c->scopes[i]);
	}
	c->n_scopes = scope_mark;
}

static int run_for(jj_ctx *c, const jj_node *x, jj_scope *s)
{
	jv seq;
	json_t *items;
	if (eval(c, x->b, s, &seq) || jj_iter(c, seq, &items, x->line))
		return -1;
	if (x->e) {
		json_t *kept = jj_keep(c, json_array());
		size_t i;
		json_t *v;
		json_array_foreach(items, i, v) {
			jj_scope *t = scope_new(c, s);
			jv ok;
			if (!t || !kept || assign(c, x->a, t, jv_json(v)) || eval(c, x->e, t, &ok))
				return -1;
			if (jj_truthy(ok))
				json_array_append(kept, v);
		}
		items = kept;
	}
	size_t n = json_array_size(items);
	/* a bound on the work one render may do: a template is data */
	if ((c->steps += n) > JJ_MAX_STEPS)
		return jj_err(c, x->line, "the template loops more than %d times", JJ_MAX_STEPS);
	size_t keep_mark = c->n_keep, scope_mark = c->n_scopes;
	for (size_t i = 0; i < n; i++) {
		jj_scope *t = scope_new(c, s);
		jv loop;
		if (!t || loop_object(c, i, n, items, &loop) || scope_set(c, t, "loop", loop) ||
		    assign(c, x->a, t, jv_json(json_array_get(items, i))))
			return -1;
		int rc = run(c, x->c, t);
		if (rc < 0)
			return -1;
		reclaim(c, keep_mark, scope_mark);
		if (rc == RUN_BREAK)
			break;
	}
	if (n == 0 && x->d)
		return run(c, x->d, s);
	return RUN_OK;
}

static int run(jj_ctx *c, const jj_node *x, jj_scope *s)
{
	jv v;
	int rc;
	switch (x->kind) {
	case JN_BODY:
		for (int i = 0; i < x->args.n; i++)
			if ((rc = run(c, x->args.v[i], s)) != RUN_OK)
				return rc;
		return RUN_OK;
	case JN_TEXT:
		util_buf_add(c->out, x->s, x->n);
		if (c->out->len > JJ_MAX_OUTPUT)
			return jj_err(c, x->line, "the rendering exceeds %d MiB", JJ_MAX_OUTPUT >> 20);
		return RUN_OK;
	case JN_OUT:
		if (eval(c, x->a, s, &v) || jj_str(c, v, c->out))
			return -1;
		if (c->out->len > JJ_MAX_OUTPUT)
			return jj_err(c, x->line, "the rendering exceeds %d MiB", JJ_MAX_OUTPUT >> 20);
		return RUN_OK;
	case JN_IF:
		if (eval(c, x->a, s, &v))
			return -1;
		if (jj_truthy(v))
			return run(c, x->b, s);
		return x->c ? run(c, x->c, s) : RUN_OK;
	case JN_FOR:
		return run_for(c, x, s);
	case JN_SET:
		return eval(c, x->b, s, &v) || assign(c, x->a, s, v) ? -1 : RUN_OK;
	case JN_SETBLOCK:
		return capture(c, x->b, s, &v) || apply_filters(c, x->c, s, v, &v) || assign(c, x->a, s, v)
		       ? -1 : RUN_OK;
	case JN_MACRO:
		return scope_set(c, s, x->s, (jv){ .k = JV_MACRO, .m = x, .name = x->s }) ? -1 : RUN_OK;
	case JN_CALLBLOCK: {
		jv caller = { .k = JV_MACRO, .m = x, .closure = s, .name = "caller" }, f;
		argv args;
		const jj_node *call = x->a;
		if (eval(c, call->a, s, &f) || eval_args(c, call, s, &args))
			return -1;
		c->caller = &caller;
		rc = call_value(c, f, &args, &v, x->line);
		c->caller = NULL;
		return rc || jj_str(c, v, c->out) ? -1 : RUN_OK;
	}
	case JN_FILTERBLOCK:
		return capture(c, x->b, s, &v) || apply_filters(c, x->a, s, v, &v) || jj_str(c, v, c->out)
		       ? -1 : RUN_OK;
	case JN_BREAK:
		return RUN_BREAK;
	case JN_CONTINUE:
		return RUN_CONTINUE;
	default:
		return jj_err(c, x->line, "not a statement");
	}
}

int jj_call_macro(jj_ctx *c, jv m, jv *args, int na, char **kwn, jv *kw, int nk, jv *out, int line)
{
	const jj_node *x = m.m;
	const jv *caller = c->caller;
	c->caller = NULL;
	if (c->depth > 100)
		return jj_err(c, line, "macro calls nested too deep");
	jj_scope *s = scope_new(c, m.closure ? m.closure : c->root);
	if (!s)
		return jj_err(c, 0, "out of memory");
	int np = x->args.n;
	json_t *varargs = jj_keep(c, json_array()), *kwargs = jj_keep(c, json_object());
	if (!varargs || !kwargs)
		return jj_err(c, 0, "out of memory");
	for (int i = 0; i < na; i++) {
		if (i < np) {
			if (scope_set(c, s, x->args.v[i]->s, args[i]))
				return -1;
		} else if (args[i].k == JV_JSON) {
			json_array_append(varargs, args[i].j);
		}
	}
	for (int k = 0; k < nk; k++) {
		int found = 0;
		for (int i = 0; i < np; i++)
			if (!strcmp(x->args.v[i]->s, kwn[k])) {
				found = 1;
				if (scope_set(c, s, x->args.v[i]->s, kw[k]))
					return -1;
			}
		if (!found && kw[k].k == JV_JSON)
			json_object_set(kwargs, kwn[k], kw[k].j);
	}
	for (int i = na; i < np; i++) {
		const jj_node *p = x->args.v[i];
		int given = 0;
		for (int k = 0; k < nk; k++)
			given |= !strcmp(p->s, kwn[k]);
		jv d = jv_undef(p->s);
		if (!given && ((p->a && eval(c, p->a, s, &d)) || scope_set(c, s, p->s, d)))
			return -1;
	}
	if (scope_set(c, s, "varargs", jv_json(varargs)) || scope_set(c, s, "kwargs", jv_json(kwargs)) ||
	    (caller && scope_set(c, s, "caller", *caller)))
		return -1;
	c->depth++;
	int rc = capture(c, x->b, s, out);
	c->depth--;
	return rc;
}

int chat_jinja_render(const chat_jinja *t, json_t *vars, char **out, coli_err *err)
{
	coli_err local = { 0 };
	if (!err)
		err = &local;
	util_buf b = { 0 };
	jj_ctx c = { .out = &b, .vars = vars, .err = err };
	*out = NULL;
	int rc = -1;
	c.root = scope_new(&c, NULL);
	if (c.root)
		rc = run(&c, t->root, c.root);
	else
		jj_err(&c, 0, "out of memory");
	if (rc >= 0 && b.oom)
		rc = jj_err(&c, 0, "out of memory");
	for (size_t i = 0; i < c.n_keep; i++)
		json_decref(c.keep[i]);
	free(c.keep);
	for (size_t i = 0; i < c.n_scopes; i++) {
		free(c.scopes[i]->names);
		free(c.scopes[i]->vals);
		free(c.scopes[i]);
	}
	free(c.scopes);
	if (rc < 0) {
		free(b.p);
		return err->code ? err->code : -EINVAL;
	}
	*out = b.p ? b.p : strdup("");
	return *out ? 0 : coli_err_set(err, -ENOMEM, "out of memory");
}
