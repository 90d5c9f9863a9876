/* chat_jinja_parser.h - the parser's state and the expression parser
 * (chat_jinja_parse.c), shared with the statement parser
 * (chat_jinja_stmt.c). */
#ifndef COLI_CHAT_JINJA_PARSER_H
#define COLI_CHAT_JINJA_PARSER_H

#include "chat_jinja.h"

typedef struct parser {
	chat_jinja *t;
	jj_token *k;
	size_t n, i;
	coli_err *err;
	int failed;
	int depth;         /* nesting: a hostile template cannot exhaust the stack */
} parser;

#define JJP_MAX_DEPTH 200

jj_node *jjp_node(parser *P, int kind);
int jjp_list_add(jj_list *l, jj_node *x);
jj_token *jjp_cur(parser *P);
int jjp_is_op(parser *P, const char *op);
int jjp_is_name(parser *P, const char *name);
jj_node *jjp_fail(parser *P, const char *what);
int jjp_expect_op(parser *P, const char *op);
char *jjp_dup(const char *s);
jj_node *jjp_expr(parser *P);
jj_node *jjp_or_expr(parser *P);
jj_node *jjp_tuple(parser *P, int condexpr);
jj_node *jjp_primary(parser *P);
jj_node *jjp_postfix(parser *P, jj_node *x);
int jjp_dotted_name(parser *P, jj_node *x);
int jjp_call_args(parser *P, jj_node *x);
jj_node *jjp_constant(parser *P, json_t *v);
/* enter a nested construct (0), or fail when nested too deep (-1) */
int jjp_enter(parser *P);

#endif
