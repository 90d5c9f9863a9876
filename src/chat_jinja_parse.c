/* chat_jinja_parse.c - tokens to a syntax tree, with Jinja's precedence:
 * conditional < or < and < not < comparisons < + - < ~ < * / // % < ** <
 * unary minus < filters and tests (x|length > 0 is (x|length) > 0;
 * not x is defined is not (x is defined)) < attribute, item, call. */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "chat_jinja.h"
#include "chat_jinja_parser.h"
#include "util_array.h"


jj_node *jjp_node(parser *P, int kind)
{
	chat_jinja *t = P->t;
	if (util_array_grow(&t->nodes, &t->cap_nodes, t->n_nodes + 1, 256))
		return NULL;
	jj_node *x = calloc(1, sizeof *x);
	if (!x)
		return NULL;
	t->nodes[t->n_nodes++] = x;
	x->kind = kind;
	x->line = P->k[P->i < P->n ? P->i : P->n - 1].line;
	return x;
}

int jjp_list_add(jj_list *l, jj_node *x)
{
	if (util_array_grow(&l->v, &l->cap, l->n + 1, 4))
		return -ENOMEM;
	l->v[l->n++] = x;
	return 0;
}

jj_token *jjp_cur(parser *P)
{
	return &P->k[P->i];
}

int jjp_is_op(parser *P, const char *op)
{
	return jjp_cur(P)->type == JT_OP && !strcmp(jjp_cur(P)->s, op);
}

int jjp_is_name(parser *P, const char *name)
{
	return jjp_cur(P)->type == JT_NAME && !strcmp(jjp_cur(P)->s, name);
}

jj_node *jjp_fail(parser *P, const char *what)
{
	if (!P->failed) {
		jj_token *k = jjp_cur(P);
		coli_err_set(P->err, -EINVAL, "template line %d: %s (at '%s')", k->line, what,
			     k->type == JT_EOF ? "end of template" : k->type == JT_BLOCK_END ? "%}" :
			     k->type == JT_VAR_END ? "}}" : k->s);
	}
	P->failed = 1;
	return NULL;
}

int jjp_expect_op(parser *P, const char *op)
{
	if (!jjp_is_op(P, op)) {
		jjp_fail(P, op[0] == ')' ? "expected ')'" : op[0] == ']' ? "expected ']'" : op[0] == '}' ? "expected '}'" :
		     op[0] == '=' ? "expected '='" : op[0] == '(' ? "expected '('" : "expected ':'");
		return -1;
	}
	P->i++;
	return 0;
}

char *jjp_dup(const char *s)
{
	return strdup(s);
}

static jj_node *unary(parser *P, int with_filter);

static int add_kw(jj_node *x, const char *name, jj_node *v)
{
	char **kwn = realloc(x->kwn, (size_t)(x->kw.n + 1) * sizeof *kwn);
	if (!kwn)
		return -ENOMEM;
	x->kwn = kwn;
	if (jjp_list_add(&x->kw, v))
		return -ENOMEM;
	kwn[x->kw.n - 1] = jjp_dup(name);
	return kwn[x->kw.n - 1] ? 0 : -ENOMEM;
}

/* "(" arguments ")" into x->args and x->kw */
int jjp_call_args(parser *P, jj_node *x)
{
	if (jjp_expect_op(P, "("))
		return -1;
	while (!jjp_is_op(P, ")")) {
		if (x->args.n + x->kw.n && jjp_expect_op(P, ","))
			return -1;
		if (jjp_is_op(P, ")"))
			break;
		if (jjp_cur(P)->type == JT_NAME && P->i + 1 < P->n && P->k[P->i + 1].type == JT_OP &&
		    !strcmp(P->k[P->i + 1].s, "=")) {
			const char *name = jjp_cur(P)->s;
			P->i += 2;
			jj_node *v = jjp_expr(P);
			if (!v || add_kw(x, name, v))
				return -1;
		} else {
			jj_node *v = jjp_expr(P);
			if (!v || jjp_list_add(&x->args, v))
				return -1;
		}
	}
	P->i++;
	return 0;
}

jj_node *jjp_constant(parser *P, json_t *v)
{
	jj_node *x = jjp_node(P, JN_CONST);
	if (!x || !v) {
		json_decref(v);
		return x ? jjp_fail(P, "out of memory") : NULL;
	}
	x->val = v;
	return x;
}

/* an expression or a comma-separated tuple of them */
jj_node *jjp_tuple(parser *P, int condexpr)
{
	jj_node *first = condexpr ? jjp_expr(P) : jjp_or_expr(P);
	if (!first || !jjp_is_op(P, ","))
		return first;
	jj_node *t = jjp_node(P, JN_TUPLE);
	if (!t || jjp_list_add(&t->args, first))
		return NULL;
	while (jjp_is_op(P, ",")) {
		P->i++;
		if (jjp_is_op(P, ")") || jjp_cur(P)->type == JT_BLOCK_END || jjp_cur(P)->type == JT_VAR_END ||
		    jjp_is_name(P, "in"))
			break;
		jj_node *v = condexpr ? jjp_expr(P) : jjp_or_expr(P);
		if (!v || jjp_list_add(&t->args, v))
			return NULL;
	}
	return t;
}

jj_node *jjp_primary(parser *P)
{
	jj_token *k = jjp_cur(P);
	jj_node *x;
	if (k->type == JT_NAME) {
		P->i++;
		if (!strcmp(k->s, "true") || !strcmp(k->s, "True"))
			return jjp_constant(P, json_true());
		if (!strcmp(k->s, "false") || !strcmp(k->s, "False"))
			return jjp_constant(P, json_false());
		if (!strcmp(k->s, "none") || !strcmp(k->s, "None"))
			return jjp_constant(P, json_null());
		if (!(x = jjp_node(P, JN_NAME)) || !(x->s = jjp_dup(k->s)))
			return NULL;
		return x;
	}
	if (k->type == JT_STRING) {
		util_buf b = { 0 };
		while (jjp_cur(P)->type == JT_STRING) {
			util_buf_add(&b, jjp_cur(P)->s, jjp_cur(P)->n);
			P->i++;
		}
		x = jjp_constant(P, json_stringn(b.p ? b.p : "", b.len));
		free(b.p);
		return x;
	}
	if (k->type == JT_INT) {
		P->i++;
		return jjp_constant(P, json_integer(k->i));
	}
	if (k->type == JT_FLOAT) {
		P->i++;
		return jjp_constant(P, json_real(k->f));
	}
	if (jjp_is_op(P, "(")) {
		P->i++;
		if (jjp_is_op(P, ")")) {
			P->i++;
			return jjp_node(P, JN_TUPLE);
		}
		x = jjp_tuple(P, 1);
		if (!x || jjp_expect_op(P, ")"))
			return NULL;
		return x;
	}
	if (jjp_is_op(P, "[")) {
		P->i++;
		if (!(x = jjp_node(P, JN_LIST)))
			return NULL;
		while (!jjp_is_op(P, "]")) {
			if (x->args.n && jjp_expect_op(P, ","))
				return NULL;
			if (jjp_is_op(P, "]"))
				break;
			jj_node *v = jjp_expr(P);
			if (!v || jjp_list_add(&x->args, v))
				return NULL;
		}
		P->i++;
		return x;
	}
	if (jjp_is_op(P, "{")) {
		P->i++;
		if (!(x = jjp_node(P, JN_DICT)))
			return NULL;
		while (!jjp_is_op(P, "}")) {
			if (x->args.n && jjp_expect_op(P, ","))
				return NULL;
			if (jjp_is_op(P, "}"))
				break;
			jj_node *key = jjp_expr(P);
			if (!key || jjp_expect_op(P, ":"))
				return NULL;
			jj_node *v = jjp_expr(P);
			if (!v || jjp_list_add(&x->args, key) || jjp_list_add(&x->kw, v))
				return NULL;
		}
		P->i++;
		return x;
	}
	return jjp_fail(P, "expected an expression");
}

jj_node *jjp_postfix(parser *P, jj_node *x)
{
	while (x) {
		if (jjp_is_op(P, ".")) {
			P->i++;
			jj_token *k = jjp_cur(P);
			if (k->type == JT_INT) {
				jj_node *it = jjp_node(P, JN_ITEM);
				if (!it || !(it->b = jjp_constant(P, json_integer(k->i))))
					return NULL;
				it->a = x;
				x = it;
			} else if (k->type == JT_NAME) {
				jj_node *at = jjp_node(P, JN_ATTR);
				if (!at || !(at->s = jjp_dup(k->s)))
					return NULL;
				at->a = x;
				x = at;
			} else {
				return jjp_fail(P, "expected an attribute name");
			}
			P->i++;
		} else if (jjp_is_op(P, "[")) {
			P->i++;
			jj_node *a = NULL, *b = NULL, *c = NULL;
			int slice = 0;
			if (!jjp_is_op(P, ":") && !(a = jjp_expr(P)))
				return NULL;
			if (jjp_is_op(P, ":")) {
				slice = 1;
				P->i++;
				if (!jjp_is_op(P, "]") && !jjp_is_op(P, ":") && !(b = jjp_expr(P)))
					return NULL;
				if (jjp_is_op(P, ":")) {
					P->i++;
					if (!jjp_is_op(P, "]") && !(c = jjp_expr(P)))
						return NULL;
				}
			}
			if (jjp_expect_op(P, "]"))
				return NULL;
			jj_node *it = jjp_node(P, slice ? JN_SLICE : JN_ITEM);
			if (!it)
				return NULL;
			it->a = x;
			if (slice) {
				it->b = a;
				it->c = b;
				it->d = c;
			} else {
				it->b = a;
			}
			x = it;
		} else if (jjp_is_op(P, "(")) {
			jj_node *call = jjp_node(P, JN_CALL);
			if (!call)
				return NULL;
			call->a = x;
			if (jjp_call_args(P, call))
				return NULL;
			x = call;
		} else {
			break;
		}
	}
	return x;
}

int jjp_dotted_name(parser *P, jj_node *x)
{
	if (jjp_cur(P)->type != JT_NAME) {
		jjp_fail(P, "expected a filter or test name");
		return -1;
	}
	util_buf b = { 0 };
	util_buf_puts(&b, jjp_cur(P)->s);
	P->i++;
	while (jjp_is_op(P, ".") && P->k[P->i + 1].type == JT_NAME) {
		util_buf_puts(&b, ".");
		util_buf_puts(&b, P->k[P->i + 1].s);
		P->i += 2;
	}
	x->s = b.p;
	return b.p ? 0 : -1;
}

static jj_node *filter_expr(parser *P, jj_node *x)
{
	while (x) {
		if (jjp_is_op(P, "|")) {
			P->i++;
			jj_node *f = jjp_node(P, JN_FILTER);
			if (!f || jjp_dotted_name(P, f))
				return NULL;
			f->a = x;
			if (jjp_is_op(P, "(") && jjp_call_args(P, f))
				return NULL;
			x = f;
		} else if (jjp_is_name(P, "is")) {
			P->i++;
			jj_node *t = jjp_node(P, JN_TEST);
			if (!t)
				return NULL;
			if (jjp_is_name(P, "not")) {
				t->neg = 1;
				P->i++;
			}
			if (jjp_dotted_name(P, t))
				return NULL;
			t->a = x;
			jj_token *k = jjp_cur(P);
			if (jjp_is_op(P, "(")) {
				if (jjp_call_args(P, t))
					return NULL;
			} else if ((k->type == JT_NAME || k->type == JT_STRING || k->type == JT_INT ||
				    k->type == JT_FLOAT || jjp_is_op(P, "[") || jjp_is_op(P, "{")) &&
				   !jjp_is_name(P, "else") && !jjp_is_name(P, "or") && !jjp_is_name(P, "and") &&
				   !jjp_is_name(P, "if")) {
				jj_node *arg = jjp_postfix(P, jjp_primary(P));
				if (!arg || jjp_list_add(&t->args, arg))
					return NULL;
			}
			x = t;
		} else if (jjp_is_op(P, "(")) {
			x = jjp_postfix(P, x);
		} else {
			break;
		}
	}
	return x;
}

int jjp_enter(parser *P)
{
	if (++P->depth <= JJP_MAX_DEPTH)
		return 0;
	jjp_fail(P, "nested too deep");
	return -1;
}

static jj_node *unary_in(parser *P, int with_filter);

static jj_node *unary(parser *P, int with_filter)
{
	jj_node *x = jjp_enter(P) ? NULL : unary_in(P, with_filter);
	P->depth--;
	return x;
}

static jj_node *unary_in(parser *P, int with_filter)
{
	jj_node *x;
	if (jjp_is_op(P, "-") || jjp_is_op(P, "+")) {
		int neg = jjp_is_op(P, "-");
		P->i++;
		if (!(x = jjp_node(P, neg ? JN_NEG : JN_POS)) || !(x->a = unary(P, 0)))
			return NULL;
	} else {
		x = jjp_primary(P);
	}
	x = jjp_postfix(P, x);
	return with_filter ? filter_expr(P, x) : x;
}

static jj_node *binary(parser *P, int level);

static const char *const levels[][5] = {
	{ "+", "-", NULL },
	{ "~", NULL },
	{ "*", "/", "//", "%", NULL },
	{ "**", NULL },
};

static jj_node *binary(parser *P, int level)
{
	if (level == 4)
		return unary(P, 1);
	jj_node *x = binary(P, level + 1);
	for (;;) {
		const char *op = NULL;
		for (int i = 0; levels[level][i]; i++)
			if (jjp_is_op(P, levels[level][i]))
				op = levels[level][i];
		if (!x || !op)
			return x;
		P->i++;
		jj_node *b = jjp_node(P, JN_BIN);
		if (!b || !(b->s = jjp_dup(op)) || !(b->b = binary(P, level + 1)))
			return NULL;
		b->a = x;
		x = b;
	}
}

static jj_node *compare(parser *P)
{
	jj_node *x = binary(P, 0), *left = x, *res = NULL;
	for (;;) {
		const char *op = NULL;
		static const char *const ops[] = { "==", "!=", "<", ">", "<=", ">=", NULL };
		for (int i = 0; ops[i]; i++)
			if (jjp_is_op(P, ops[i]))
				op = ops[i];
		if (!op && jjp_is_name(P, "in"))
			op = "in";
		if (!op && jjp_is_name(P, "not") && P->k[P->i + 1].type == JT_NAME && !strcmp(P->k[P->i + 1].s, "in")) {
			op = "not in";
			P->i++;
		}
		if (!left || !op)
			return res ? res : x;
		P->i++;
		jj_node *c = jjp_node(P, JN_CMP);
		if (!c || !(c->s = jjp_dup(op)) || !(c->b = binary(P, 0)))
			return NULL;
		c->a = left;
		left = c->b;
		if (res) {
			jj_node *a = jjp_node(P, JN_AND);
			if (!a)
				return NULL;
			a->a = res;
			a->b = c;
			res = a;
		} else {
			res = c;
		}
	}
}

static jj_node *not_expr(parser *P)
{
	while (jjp_is_name(P, "not")) {
		P->i++;
		jj_node *x = jjp_node(P, JN_NOT);
		if (!x || jjp_enter(P) || !(x->a = not_expr(P))) {
			P->depth--;
			return NULL;
		}
		P->depth--;
		return x;
	}
	return compare(P);
}

static jj_node *logic(parser *P, int is_or)
{
	jj_node *x = is_or ? logic(P, 0) : not_expr(P);
	while (x && jjp_is_name(P, is_or ? "or" : "and")) {
		P->i++;
		jj_node *b = jjp_node(P, is_or ? JN_OR : JN_AND);
		if (!b || !(b->b = is_or ? logic(P, 0) : not_expr(P)))
			return NULL;
		b->a = x;
		x = b;
	}
	return x;
}

jj_node *jjp_or_expr(parser *P)
{
	return logic(P, 1);
}

static jj_node *expr_in(parser *P);

jj_node *jjp_expr(parser *P)
{
	jj_node *x = jjp_enter(P) ? NULL : expr_in(P);
	P->depth--;
	return x;
}

static jj_node *expr_in(parser *P)
{
	jj_node *x = jjp_or_expr(P);
	while (x && jjp_is_name(P, "if")) {
		P->i++;
		jj_node *c = jjp_node(P, JN_COND);
		if (!c || !(c->b = jjp_or_expr(P)))
			return NULL;
		c->a = x;
		if (jjp_is_name(P, "else")) {
			P->i++;
			if (!(c->c = jjp_expr(P)))
				return NULL;
		}
		x = c;
	}
	return x;
}

