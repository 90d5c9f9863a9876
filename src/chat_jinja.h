/* chat_jinja.h - a Jinja interpreter for the chat templates checkpoints
 * ship (chat_template.jinja, tokenizer_config.json's chat_template),
 * rendering as Hugging Face's environment does: trim_blocks and
 * lstrip_blocks on, loop controls, an immutable sandbox (list.append and
 * the other mutating methods refused), tojson with ensure_ascii off,
 * raise_exception and strftime_now. Values are jansson values plus the
 * Jinja kinds JSON lacks (undefined, namespace, macro, bound method), so
 * a template sees none, truthiness and Python's string methods as in
 * Python. The covered subset is listed in colitop-model(5). */
#ifndef COLI_CHAT_JINJA_H
#define COLI_CHAT_JINJA_H

#include <jansson.h>
#include <stddef.h>

#include "coli_err.h"
#include "util_buf.h"

typedef struct chat_jinja chat_jinja;

/* Parse a template; a syntax error names its line. */
int chat_jinja_parse(const char *src, chat_jinja **out, coli_err *err);
void chat_jinja_free(chat_jinja *t);
/* Render with vars (a JSON object: messages, tools, ...); *out is
 * malloc'ed text. A template's raise_exception(msg) is an error whose
 * message is msg. */
int chat_jinja_render(const chat_jinja *t, json_t *vars, char **out, coli_err *err);

/* ---- the interpreter's own parts (chat_jinja_*.c) ---- */

enum jj_tok {
	JT_EOF, JT_TEXT, JT_VAR_BEGIN, JT_VAR_END, JT_BLOCK_BEGIN, JT_BLOCK_END,
	JT_NAME, JT_STRING, JT_INT, JT_FLOAT, JT_OP,
};

typedef struct jj_token {
	int type, line;
	char *s;          /* text, name, string value (decoded), operator */
	size_t n;
	double f;
	long long i;
} jj_token;

/* Tokenize with HF's whitespace settings; raw blocks become text. */
int jj_lex(const char *src, jj_token **toks, size_t *n, coli_err *err);
void jj_tokens_free(jj_token *t, size_t n);

enum jj_kind {
	/* statements */
	JN_BODY, JN_TEXT, JN_OUT, JN_IF, JN_FOR, JN_SET, JN_SETBLOCK, JN_MACRO,
	JN_CALLBLOCK, JN_BREAK, JN_CONTINUE, JN_FILTERBLOCK,
	/* expressions */
	JN_CONST, JN_NAME, JN_ATTR, JN_ITEM, JN_SLICE, JN_CALL, JN_FILTER, JN_TEST,
	JN_BIN, JN_NEG, JN_POS, JN_NOT, JN_AND, JN_OR, JN_COND, JN_LIST, JN_DICT,
	JN_TUPLE, JN_CMP,
};

typedef struct jj_node jj_node;
typedef struct jj_list {
	jj_node **v;
	int n, cap;
} jj_list;

struct jj_node {
	int kind, line;
	char *s;           /* text, name, attribute, filter/test name, operator */
	size_t n;
	json_t *val;       /* constant */
	jj_node *a, *b, *c, *d, *e;
	jj_list args;      /* body, positional arguments, items, parameters */
	jj_list kw;        /* keyword argument values (names in kwn) */
	char **kwn;
	int neg;           /* "is not" */
};

struct chat_jinja {
	jj_node *root;
	jj_node **nodes;   /* every node, for freeing */
	size_t n_nodes, cap_nodes;
};

int jj_parse_tokens(chat_jinja *t, jj_token *toks, size_t n, coli_err *err);

/* ---- values ---- */
enum jv_kind { JV_UNDEF, JV_JSON, JV_NS, JV_MACRO, JV_FUNC, JV_METHOD };

typedef struct jj_scope jj_scope;
typedef struct jv {
	int k;
	json_t *j;          /* JSON value; namespace attributes; method receiver */
	const char *name;   /* undefined: what; func/method: which */
	const jj_node *m;   /* macro */
	jj_scope *closure;  /* caller(): the scope of its call block */
} jv;

/* An evaluation: every value made is kept until the render ends. */
typedef struct jj_ctx {
	util_buf *out;
	json_t *vars;
	jj_scope *root;
	json_t **keep;
	size_t n_keep, cap_keep;
	jj_scope **scopes;
	size_t n_scopes, cap_scopes;
	coli_err *err;
	int depth;
	const jv *caller;
	long long steps;    /* loop iterations so far */
} jj_ctx;

#define JJ_MAX_STEPS 10000000     /* loop iterations in one render */
#define JJ_MAX_OUTPUT (256 << 20)  /* bytes of one rendering (or block) */

json_t *jj_keep(jj_ctx *c, json_t *j);
jv jv_json(json_t *j);
jv jv_undef(const char *what);
int jj_err(jj_ctx *c, int line, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
int jj_truthy(jv v);
/* str(v) appended to b (Python's str: None, True, repr of lists) */
int jj_str(jj_ctx *c, jv v, util_buf *b);
/* a new string value of str(v) */
int jj_to_string(jj_ctx *c, jv v, jv *out);
int jj_equal(jv a, jv b);
/* HF's tojson: json.dumps(x, ensure_ascii, indent, separators, sort_keys) */
int jj_tojson(jj_ctx *c, json_t *v, int ensure_ascii, int indent, const char *item_sep,
	      const char *key_sep, int sort_keys, util_buf *b);
void jj_py_float(double d, util_buf *b);
/* code-point helpers */
size_t jj_utf8_len(const char *s, size_t n);
size_t jj_utf8_off(const char *s, size_t n, size_t cp);
int jj_py_space(const char *s, size_t n, size_t *len);
const char *jj_type_name(jv v);

/* attribute and item access, filters, tests, methods, globals */
int jj_getattr(jj_ctx *c, jv obj, const char *name, jv *out);
int jj_getitem(jj_ctx *c, jv obj, jv key, jv *out);
int jj_call_method(jj_ctx *c, jv m, jv *args, int na, char **kwn, jv *kw, int nk, jv *out, int line);
int jj_call_global(jj_ctx *c, jv f, jv *args, int na, char **kwn, jv *kw, int nk, jv *out, int line);
int jj_filter(jj_ctx *c, const char *name, jv v, jv *args, int na, char **kwn, jv *kw, int nk,
	      jv *out, int line);
int jj_test(jj_ctx *c, const char *name, jv v, jv *args, int na, int *out, int line);
/* the items of a list, dict (keys), string (chars) or undefined (none) */
int jj_iter(jj_ctx *c, jv v, json_t **list, int line);
/* call a macro value (chat_jinja_eval.c) */
int jj_call_macro(jj_ctx *c, jv m, jv *args, int na, char **kwn, jv *kw, int nk, jv *out, int line);

/* small value predicates shared by the evaluator's files */
static inline int jv_is_num(jv v)
{
	return v.k == JV_JSON && (json_is_number(v.j) || json_is_boolean(v.j));
}

static inline int jv_is_int(jv v)
{
	return v.k == JV_JSON && (json_is_integer(v.j) || json_is_boolean(v.j));
}

static inline double jv_num(jv v)
{
	return json_is_boolean(v.j) ? (double)json_is_true(v.j) : json_number_value(v.j);
}

static inline long long jv_int(jv v)
{
	return json_is_boolean(v.j) ? json_is_true(v.j) : (long long)json_integer_value(v.j);
}

static inline int jv_is_str(jv v)
{
	return v.k == JV_JSON && json_is_string(v.j);
}

int jj_arith(jj_ctx *c, const char *op, jv a, jv b, jv *out, int line);
int jj_compare(jj_ctx *c, const char *op, jv a, jv b, int *res, int line);
int jj_format_percent(jj_ctx *c, jv fmt, jv args, jv *out, int line);

#endif
