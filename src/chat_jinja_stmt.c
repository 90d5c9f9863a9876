/* chat_jinja_stmt.c - the statements of a template: if/elif/else, for
 * (with a filter, else, tuple targets), set (to a name, a namespace
 * attribute, a tuple; block set with filters), macro, call blocks,
 * filter blocks, break/continue and transformers' generation tag. */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "chat_jinja.h"
#include "chat_jinja_parser.h"


static jj_node *body(parser *P, const char *const *stops);

static int block_end(parser *P)
{
	if (jjp_cur(P)->type != JT_BLOCK_END) {
		jjp_fail(P, "expected '%}'");
		return -1;
	}
	P->i++;
	return 0;
}

/* at "{% NAME": is NAME one of stops? */
static int at_stop(parser *P, const char *const *stops)
{
	if (jjp_cur(P)->type != JT_BLOCK_BEGIN || P->k[P->i + 1].type != JT_NAME)
		return 0;
	for (int i = 0; stops && stops[i]; i++)
		if (!strcmp(P->k[P->i + 1].s, stops[i]))
			return 1;
	return 0;
}

/* consume "{% name ... %}" where name ends a block */
static int end_tag(parser *P, const char *name)
{
	if (!at_stop(P, (const char *const[]){ name, NULL })) {
		jjp_fail(P, "unexpected end of block");
		return -1;
	}
	P->i += 2;
	return block_end(P);
}

static jj_node *target(parser *P)
{
	jj_node *x = jjp_primary(P);
	if (x && x->kind == JN_NAME && jjp_is_op(P, ".")) {
		x = jjp_postfix(P, x);
		if (x && x->kind != JN_ATTR)
			return jjp_fail(P, "cannot assign to this");
		return x;
	}
	if (!x || !jjp_is_op(P, ","))
		return x;
	jj_node *t = jjp_node(P, JN_TUPLE);
	if (!t || jjp_list_add(&t->args, x))
		return NULL;
	while (jjp_is_op(P, ",")) {
		P->i++;
		jj_node *v = jjp_primary(P);
		if (!v || jjp_list_add(&t->args, v))
			return NULL;
	}
	return t;
}

static jj_node *stmt_if(parser *P)
{
	static const char *const stops[] = { "elif", "else", "endif", NULL };
	jj_node *x = jjp_node(P, JN_IF);
	if (!x || !(x->a = jjp_expr(P)) || block_end(P) || !(x->b = body(P, stops)))
		return NULL;
	const char *k = P->k[P->i + 1].s;
	P->i += 2;
	if (!strcmp(k, "elif")) {
		x->c = stmt_if(P);
		return x->c ? x : NULL;
	}
	if (!strcmp(k, "else")) {
		if (block_end(P) || !(x->c = body(P, (const char *const[]){ "endif", NULL })))
			return NULL;
		P->i += 2;
	}
	return block_end(P) ? NULL : x;
}

static jj_node *stmt_for(parser *P)
{
	jj_node *x = jjp_node(P, JN_FOR);
	if (!x || !(x->a = target(P)))
		return NULL;
	if (!jjp_is_name(P, "in"))
		return jjp_fail(P, "expected 'in'");
	P->i++;
	if (!(x->b = jjp_tuple(P, 0)))
		return NULL;
	if (jjp_is_name(P, "if")) {
		P->i++;
		if (!(x->e = jjp_expr(P)))
			return NULL;
	}
	if (jjp_is_name(P, "recursive"))
		return jjp_fail(P, "recursive loops are not supported");
	if (block_end(P) || !(x->c = body(P, (const char *const[]){ "else", "endfor", NULL })))
		return NULL;
	if (!strcmp(P->k[P->i + 1].s, "else")) {
		P->i += 2;
		if (block_end(P) || !(x->d = body(P, (const char *const[]){ "endfor", NULL })))
			return NULL;
	}
	return end_tag(P, "endfor") ? NULL : x;
}

static jj_node *stmt_set(parser *P)
{
	jj_node *t = target(P);
	if (!t)
		return NULL;
	if (jjp_is_op(P, "=")) {
		P->i++;
		jj_node *x = jjp_node(P, JN_SET);
		if (!x || !(x->b = jjp_tuple(P, 1)) || block_end(P))
			return NULL;
		x->a = t;
		return x;
	}
	jj_node *x = jjp_node(P, JN_SETBLOCK);
	if (!x)
		return NULL;
	x->a = t;
	while (jjp_is_op(P, "|")) {
		P->i++;
		jj_node *f = jjp_node(P, JN_FILTER);
		if (!f || jjp_dotted_name(P, f) || (jjp_is_op(P, "(") && jjp_call_args(P, f)))
			return NULL;
		f->a = x->c;
		x->c = f;
	}
	if (block_end(P) || !(x->b = body(P, (const char *const[]){ "endset", NULL })) ||
	    end_tag(P, "endset"))
		return NULL;
	return x;
}

/* "(" NAME ["=" default], ... ")" into x->args (default in param->a) */
static int params(parser *P, jj_node *x)
{
	if (jjp_expect_op(P, "("))
		return -1;
	while (!jjp_is_op(P, ")")) {
		if (x->args.n && jjp_expect_op(P, ","))
			return -1;
		if (jjp_cur(P)->type != JT_NAME) {
			jjp_fail(P, "expected a parameter name");
			return -1;
		}
		jj_node *p = jjp_node(P, JN_NAME);
		if (!p || !(p->s = jjp_dup(jjp_cur(P)->s)) || jjp_list_add(&x->args, p))
			return -1;
		P->i++;
		if (jjp_is_op(P, "=")) {
			P->i++;
			if (!(p->a = jjp_expr(P)))
				return -1;
		}
	}
	P->i++;
	return 0;
}

static jj_node *stmt_macro(parser *P)
{
	jj_node *x = jjp_node(P, JN_MACRO);
	if (!x)
		return NULL;
	if (jjp_cur(P)->type != JT_NAME)
		return jjp_fail(P, "expected a macro name");
	if (!(x->s = jjp_dup(jjp_cur(P)->s)))
		return NULL;
	P->i++;
	if (params(P, x) || block_end(P) || !(x->b = body(P, (const char *const[]){ "endmacro", NULL })) ||
	    end_tag(P, "endmacro"))
		return NULL;
	return x;
}

static jj_node *stmt_call(parser *P)
{
	jj_node *x = jjp_node(P, JN_CALLBLOCK);
	if (!x || (jjp_is_op(P, "(") && params(P, x)) || !(x->a = jjp_expr(P)))
		return NULL;
	if (x->a->kind != JN_CALL)
		return jjp_fail(P, "expected a macro call");
	if (block_end(P) || !(x->b = body(P, (const char *const[]){ "endcall", NULL })) || end_tag(P, "endcall"))
		return NULL;
	return x;
}

static jj_node *statement(parser *P)
{
	P->i++; /* {% */
	jj_token *k = jjp_cur(P);
	if (k->type != JT_NAME)
		return jjp_fail(P, "expected a statement");
	P->i++;
	const char *s = k->s;
	if (!strcmp(s, "if"))
		return stmt_if(P);
	if (!strcmp(s, "for"))
		return stmt_for(P);
	if (!strcmp(s, "set"))
		return stmt_set(P);
	if (!strcmp(s, "macro"))
		return stmt_macro(P);
	if (!strcmp(s, "call"))
		return stmt_call(P);
	if (!strcmp(s, "break") || !strcmp(s, "continue")) {
		jj_node *x = jjp_node(P, s[0] == 'b' ? JN_BREAK : JN_CONTINUE);
		return !x || block_end(P) ? NULL : x;
	}
	if (!strcmp(s, "filter")) {
		jj_node *x = jjp_node(P, JN_FILTERBLOCK), *f = jjp_node(P, JN_FILTER);
		if (!x || !f || jjp_dotted_name(P, f) || (jjp_is_op(P, "(") && jjp_call_args(P, f)) || block_end(P) ||
		    !(x->b = body(P, (const char *const[]){ "endfilter", NULL })) || end_tag(P, "endfilter"))
			return NULL;
		x->a = f;
		return x;
	}
	if (!strcmp(s, "generation")) {
		/* transformers' AssistantTracker tag: marks, renders its body */
		jj_node *x;
		if (block_end(P) || !(x = body(P, (const char *const[]){ "endgeneration", NULL })) ||
		    end_tag(P, "endgeneration"))
			return NULL;
		return x;
	}
	P->i--;
	return jjp_fail(P, "unknown or misplaced statement");
}

static jj_node *body_in(parser *P, const char *const *stops);

static jj_node *body(parser *P, const char *const *stops)
{
	jj_node *b = jjp_enter(P) ? NULL : body_in(P, stops);
	P->depth--;
	return b;
}

static jj_node *body_in(parser *P, const char *const *stops)
{
	jj_node *b = jjp_node(P, JN_BODY);
	if (!b)
		return NULL;
	for (;;) {
		jj_token *k = jjp_cur(P);
		jj_node *x = NULL;
		if (k->type == JT_EOF) {
			if (stops)
				return jjp_fail(P, "missing end of block");
			return b;
		}
		if (at_stop(P, stops))
			return b;
		if (k->type == JT_TEXT) {
			if (!(x = jjp_node(P, JN_TEXT)) || !(x->s = malloc(k->n + 1)))
				return NULL;
			memcpy(x->s, k->s, k->n + 1);
			x->n = k->n;
			P->i++;
		} else if (k->type == JT_VAR_BEGIN) {
			P->i++;
			if (!(x = jjp_node(P, JN_OUT)) || !(x->a = jjp_expr(P)))
				return NULL;
			if (jjp_cur(P)->type != JT_VAR_END)
				return jjp_fail(P, "expected '}}'");
			P->i++;
		} else if (k->type == JT_BLOCK_BEGIN) {
			if (!(x = statement(P)))
				return NULL;
		} else {
			return jjp_fail(P, "unexpected token");
		}
		if (jjp_list_add(&b->args, x))
			return jjp_fail(P, "out of memory");
	}
}

int jj_parse_tokens(chat_jinja *t, jj_token *toks, size_t n, coli_err *err)
{
	parser P = { .t = t, .k = toks, .n = n, .err = err };
	t->root = body(&P, NULL);
	if (!t->root && !P.failed)
		coli_err_set(err, -ENOMEM, "out of memory");
	return t->root ? 0 : -EINVAL;
}

int chat_jinja_parse(const char *src, chat_jinja **out, coli_err *err)
{
	jj_token *toks;
	size_t n;
	coli_err local = { 0 };
	if (!err)
		err = &local;
	*out = NULL;
	int rc = jj_lex(src, &toks, &n, err);
	if (rc)
		return rc;
	chat_jinja *t = calloc(1, sizeof *t);
	if (!t) {
		jj_tokens_free(toks, n);
		return coli_err_set(err, -ENOMEM, "out of memory");
	}
	rc = jj_parse_tokens(t, toks, n, err);
	jj_tokens_free(toks, n);
	if (rc) {
		chat_jinja_free(t);
		return rc;
	}
	*out = t;
	return 0;
}

void chat_jinja_free(chat_jinja *t)
{
	if (!t)
		return;
	for (size_t i = 0; i < t->n_nodes; i++) {
		jj_node *x = t->nodes[i];
		free(x->s);
		json_decref(x->val);
		free(x->args.v);
		free(x->kw.v);
		for (int k = 0; x->kwn && k < x->kw.n; k++)
			free(x->kwn[k]);
		free(x->kwn);
		free(x);
	}
	free(t->nodes);
	free(t);
}
