/* server_toolcall.c - tool calls parsed while they are generated (pure).
 *
 * The arguments of a call grow as the model writes them, so the APIs can
 * stream them (OpenAI tool_calls deltas, Anthropic input_json_delta): the
 * text in a call's `args` only ever grows, and once the call is done it is
 * the whole JSON object. Three modes:
 *   MARKUP  the model's own tool-call markup. GLM-4.5/5 calls
 *           (<tool_call>NAME<arg_key>K</arg_key><arg_value>V</arg_value>...
 *           </tool_call>) are parsed here, like vLLM's glm45/glm47 parser:
 *           a value is typed by the tool's schema: a parameter whose type is
 *           "string" keeps its text raw (not trimmed, not parsed: a JSON file
 *           body, "123" or "true" stay strings, indentation is kept); any
 *           other value is trimmed and read as JSON, then as a Python
 *           literal (True/False/None, single quotes), else kept as a string.
 *           A call left open at the end of the generation is closed. Other
 *           forms (DeepSeek, ChatML JSON) are left to srv_tools_parse at
 *           the end (fmt OTHER).
 *   FORCED  the whole answer is the arguments of one named tool (the
 *           grammar keeps them valid): passed through as generated.
 *   PICK    the answer is {"NAME": ARGUMENTS} for one of the tools (a
 *           forced call of any tool): the name is read, the arguments
 *           object passed through, the closing brace dropped. */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "server_internal.h"

enum { ST_OUT = 0, ST_NAME, ST_ARGS, ST_KEY, ST_PREVAL, ST_VAL, ST_DONE,
       ST_PK_OPEN, ST_PK_NAME, ST_PK_COLON, ST_PK_VALUE, ST_PK_END };

#define TC_OPEN "<tool_call>"
#define TC_CLOSE "</tool_call>"
#define K_OPEN "<arg_key>"
#define K_CLOSE "</arg_key>"
#define V_OPEN "<arg_value>"
#define V_CLOSE "</arg_value>"

void srv_tc_init(srv_tcparse *p, int mode, const char *tools_json, const char *forced, int max_calls,
		 const char *id_prefix)
{
	memset(p, 0, sizeof *p);
	p->mode = mode;
	p->max_calls = max_calls;
	snprintf(p->prefix, sizeof p->prefix, "%s", id_prefix ? id_prefix : "call_");
	if (tools_json)
		p->tools = json_loads(tools_json, 0, NULL);
	if (mode == SRV_TC_FORCED) {
		p->fmt = SRV_TC_FMT_OWN;
		srv_tc_call *c = srv_tc_begin(p, forced, strlen(forced));
		(void)c;
		p->state = ST_VAL;
	} else if (mode == SRV_TC_PICK) {
		p->fmt = SRV_TC_FMT_OWN;
		p->state = ST_PK_OPEN;
	}
}

void srv_tc_free(srv_tcparse *p)
{
	for (int i = 0; i < p->n_calls; i++) {
		free(p->calls[i].name);
		util_buf_free(&p->calls[i].args);
	}
	free(p->calls);
	util_buf_free(&p->in);
	util_buf_free(&p->tmp);
	json_decref(p->tools);
	memset(p, 0, sizeof *p);
}

srv_tc_call *srv_tc_begin(srv_tcparse *p, const char *name, size_t n)
{
	if (p->max_calls > 0 && p->n_calls >= p->max_calls)
		return NULL;
	srv_tc_call *c = realloc(p->calls, sizeof *c * (size_t)(p->n_calls + 1));
	if (!c)
		return NULL;
	p->calls = c;
	c = &c[p->n_calls++];
	memset(c, 0, sizeof *c);
	srv_make_id(c->id, sizeof c->id, p->prefix);
	c->name = strndup(name, n);
	return c;
}

static srv_tc_call *cur(srv_tcparse *p)
{
	return p->n_calls && !p->calls[p->n_calls - 1].done ? &p->calls[p->n_calls - 1] : NULL;
}

static int is_ws(char c)
{
	return c == ' ' || c == '\n' || c == '\r' || c == '\t';
}

/* The type the tool's schema gives a parameter is "string". */
static int param_is_string(const srv_tcparse *p, const char *tool, const char *key)
{
	size_t i;
	json_t *t;
	json_array_foreach(p->tools, i, t) {
		json_t *fn = json_object_get(t, "function");
		json_t *n = json_object_get(fn, "name");
		if (!json_is_string(n) || strcmp(json_string_value(n), tool))
			continue;
		json_t *ty = json_object_get(json_object_get(json_object_get(json_object_get(fn, "parameters"),
									     "properties"), key), "type");
		return json_is_string(ty) && !strcmp(json_string_value(ty), "string");
	}
	return 0;
}

static int is_ident(char c)
{
	return c == '_' || (c >= '0' && c <= '9') || ((c | 32) >= 'a' && (c | 32) <= 'z');
}

/* Python literal -> JSON text: True/False/None outside strings, single-
 * quoted strings re-quoted. NULL when nothing needed changing. */
static char *py_to_json(const char *s, size_t n)
{
	util_buf b = { 0 };
	int changed = 0;
	for (size_t i = 0; i < n;) {
		char c = s[i];
		if (c == '"' || c == '\'') {
			char q = c;
			util_buf_puts(&b, "\"");
			changed |= q == '\'';
			for (i++; i < n && s[i] != q; i++) {
				if (s[i] == '\\' && i + 1 < n) {
					if (q == '\'' && s[i + 1] == '\'') {
						util_buf_puts(&b, "'");
					} else {
						util_buf_add(&b, s + i, 2);
					}
					i++;
				} else if (q == '\'' && s[i] == '"') {
					util_buf_puts(&b, "\\\"");
				} else {
					util_buf_add(&b, s + i, 1);
				}
			}
			util_buf_puts(&b, "\"");
			i++;
			continue;
		}
		static const char *const from[] = { "True", "False", "None" };
		static const char *const to[] = { "true", "false", "null" };
		int hit = -1;
		for (int k = 0; k < 3 && hit < 0; k++) {
			size_t l = strlen(from[k]);
			if (i + l <= n && !memcmp(s + i, from[k], l) && (i == 0 || !is_ident(s[i - 1])) &&
			    (i + l == n || !is_ident(s[i + l])))
				hit = k;
		}
		if (hit >= 0) {
			util_buf_puts(&b, to[hit]);
			i += strlen(from[hit]);
			changed = 1;
			continue;
		}
		util_buf_add(&b, &c, 1);
		i++;
	}
	if (!changed || b.oom) {
		util_buf_free(&b);
		return NULL;
	}
	return b.p;
}

/* A non-string value: JSON, then a Python literal, else the trimmed text. */
static void add_typed(util_buf *out, const char *s, size_t n)
{
	while (n && is_ws(*s))
		s++, n--;
	while (n && is_ws(s[n - 1]))
		n--;
	json_t *j = json_loadb(s, n, JSON_DECODE_ANY, NULL);
	if (!j) {
		char *alt = py_to_json(s, n);
		if (alt)
			j = json_loads(alt, JSON_DECODE_ANY, NULL);
		free(alt);
	}
	char *txt = j ? json_dumps(j, JSON_COMPACT | JSON_ENCODE_ANY) : NULL;
	json_decref(j);
	if (txt) {
		util_buf_puts(out, txt);
	} else {
		util_buf_puts(out, "\"");
		util_buf_json_escape(out, s, n);
		util_buf_puts(out, "\"");
	}
	free(txt);
}

static const char *find_n(const char *h, size_t n, const char *pat)
{
	size_t m = strlen(pat);
	for (size_t i = 0; i + m <= n; i++)
		if (h[i] == pat[0] && !memcmp(h + i, pat, m))
			return h + i;
	return NULL;
}

/* Longest suffix of h[0..n) that is a proper prefix of pat. */
static size_t tail_prefix(const char *h, size_t n, const char *pat)
{
	size_t m = strlen(pat);
	for (size_t k = n < m - 1 ? n : m - 1; k > 0; k--)
		if (!memcmp(h + n - k, pat, k))
			return k;
	return 0;
}

static void end_call(srv_tcparse *p)
{
	srv_tc_call *c = cur(p);
	if (c) {
		util_buf_puts(&c->args, "}");
		c->done = 1;
	}
}

/* A step needs more input than there is. */
#define MORE ((size_t)-1)

/* One step of the GLM machine on the pending bytes; returns the bytes
 * consumed (0: the state changed), MORE when more input is needed. */
static size_t glm_step(srv_tcparse *p, const char *s, size_t n)
{
	srv_tc_call *c = cur(p);
	const char *q;
	switch (p->state) {
	case ST_OUT:
		if (n && is_ws(*s))
			return 1;
		if (n >= strlen(TC_OPEN)) {
			if (memcmp(s, TC_OPEN, strlen(TC_OPEN))) {
				p->state = ST_DONE;   /* text after the calls: dropped */
				return n;
			}
			p->state = ST_NAME;
			return strlen(TC_OPEN);
		}
		return memcmp(s, TC_OPEN, n) ? (p->state = ST_DONE, n) : MORE;
	case ST_NAME: {
		size_t i = 0;
		while (i < n && is_ws(s[i]))
			i++;
		if (i < n && s[i] == '{') {
			p->fmt = SRV_TC_FMT_OTHER;   /* JSON inside <tool_call>: parsed at the end */
			return MORE;
		}
		const char *e = NULL;
		for (size_t j = i; j < n && !e; j++)
			if (s[j] == '\n' || s[j] == '<')
				e = s + j;
		if (!e)
			return MORE;
		size_t len = (size_t)(e - s);
		while (len > i && is_ws(s[len - 1]))
			len--;
		p->fmt = SRV_TC_FMT_OWN;
		if (len == i) {
			p->state = ST_DONE;   /* no name: not a call */
			return n;
		}
		c = srv_tc_begin(p, s + i, len - i);
		if (c)
			util_buf_puts(&c->args, "{");
		p->state = c ? ST_ARGS : ST_DONE;
		p->n_args = 0;
		return (size_t)(e - s);
	}
	case ST_ARGS:
		if (n && is_ws(*s))
			return 1;
		if (n >= strlen(TC_CLOSE) && !memcmp(s, TC_CLOSE, strlen(TC_CLOSE))) {
			end_call(p);
			p->state = ST_OUT;
			return strlen(TC_CLOSE);
		}
		if (n >= strlen(K_OPEN) && !memcmp(s, K_OPEN, strlen(K_OPEN))) {
			p->state = ST_KEY;
			return strlen(K_OPEN);
		}
		if (n < strlen(TC_CLOSE) && (!memcmp(s, TC_CLOSE, n) || !memcmp(s, K_OPEN, n < strlen(K_OPEN) ? n : strlen(K_OPEN))))
			return MORE;
		return 1;   /* stray text between arguments */
	case ST_KEY:
		if (!(q = find_n(s, n, K_CLOSE)))
			return MORE;
		util_buf_clear(&p->tmp);
		{
			const char *a = s, *b = q;
			while (a < b && is_ws(*a))
				a++;
			while (b > a && is_ws(b[-1]))
				b--;
			util_buf_add(&p->tmp, a, (size_t)(b - a));
		}
		p->state = ST_PREVAL;
		return (size_t)(q - s) + strlen(K_CLOSE);
	case ST_PREVAL:
		if (n && is_ws(*s))
			return 1;
		if (n < strlen(V_OPEN))
			return memcmp(s, V_OPEN, n) ? (p->state = ST_ARGS, 0) : MORE;
		if (memcmp(s, V_OPEN, strlen(V_OPEN))) {
			p->state = ST_ARGS;   /* a key without a value: dropped */
			return 0;
		}
		if (c) {
			if (p->n_args++)
				util_buf_puts(&c->args, ",");
			util_buf_puts(&c->args, "\"");
			util_buf_json_escape(&c->args, p->tmp.p ? p->tmp.p : "", p->tmp.len);
			util_buf_puts(&c->args, "\":");
			p->val_string = param_is_string(p, c->name, p->tmp.p ? p->tmp.p : "");
			if (p->val_string)
				util_buf_puts(&c->args, "\"");
		}
		util_buf_clear(&p->tmp);
		p->state = ST_VAL;
		return strlen(V_OPEN);
	case ST_VAL: {
		if (p->mode == SRV_TC_FORCED) {
			size_t i = 0;
			if (!c)
				return n;   /* out of memory at the start: nothing to fill */
			while (!c->args.len && i < n && is_ws(s[i]))
				i++;
			util_buf_add(&c->args, s + i, n - i);
			return n;
		}
		q = find_n(s, n, V_CLOSE);
		size_t take = q ? (size_t)(q - s) : n - tail_prefix(s, n, V_CLOSE);
		if (c && p->val_string)
			util_buf_json_escape(&c->args, s, take);   /* streamed as it comes */
		else
			util_buf_add(&p->tmp, s, take);
		if (!q)
			return take ? take : MORE;
		if (c && p->val_string)
			util_buf_puts(&c->args, "\"");
		else if (c)
			add_typed(&c->args, p->tmp.p ? p->tmp.p : "", p->tmp.len);
		util_buf_clear(&p->tmp);
		p->state = ST_ARGS;
		return take + strlen(V_CLOSE);
	}
	default:
		return n;
	}
}

/* PICK: {"NAME": {...}} - the name, then the object passed through until
 * its braces balance. */
static size_t pick_step(srv_tcparse *p, const char *s, size_t n)
{
	srv_tc_call *c = cur(p);
	switch (p->state) {
	case ST_PK_OPEN:
		if (*s == '{')
			p->state = ST_PK_NAME;
		return 1;
	case ST_PK_NAME: {
		if (is_ws(*s))
			return 1;
		const char *e = n > 1 && *s == '"' ? memchr(s + 1, '"', n - 1) : NULL;
		if (*s != '"')
			return 1;
		if (!e)
			return MORE;
		srv_tc_begin(p, s + 1, (size_t)(e - s - 1));
		p->state = ST_PK_COLON;
		return (size_t)(e - s) + 1;
	}
	case ST_PK_COLON:
		if (*s == ':')
			p->state = ST_PK_VALUE;
		return 1;
	case ST_PK_VALUE: {
		size_t i = 0;
		if (!p->depth)
			while (i < n && is_ws(s[i]))
				i++;
		size_t a = i;
		for (; i < n; i++) {
			char ch = s[i];
			if (p->in_str) {
				if (p->esc)
					p->esc = 0;
				else if (ch == '\\')
					p->esc = 1;
				else if (ch == '"')
					p->in_str = 0;
			} else if (ch == '"') {
				p->in_str = 1;
			} else if (ch == '{' || ch == '[') {
				p->depth++;
			} else if (ch == '}' || ch == ']') {
				if (--p->depth == 0) {
					i++;
					break;
				}
			}
		}
		if (c)
			util_buf_add(&c->args, s + a, i - a);
		if (!p->depth && i > a) {
			if (c)
				c->done = 1;
			p->state = ST_PK_END;
		}
		return i ? i : n;
	}
	default:
		return n;
	}
}

void srv_tc_feed(srv_tcparse *p, const char *s, size_t n)
{
	if (p->fmt == SRV_TC_FMT_OTHER || !n)
		return;
	util_buf_add(&p->in, s, n);
	size_t at = 0;
	while (at < p->in.len && p->fmt != SRV_TC_FMT_OTHER) {
		size_t k = p->mode == SRV_TC_PICK ? pick_step(p, p->in.p + at, p->in.len - at)
						  : glm_step(p, p->in.p + at, p->in.len - at);
		if (k == MORE)
			break;
		at += k;
	}
	if (p->fmt == SRV_TC_FMT_OTHER)
		return;
	util_buf_consume(&p->in, at);
}

void srv_tc_finish(srv_tcparse *p)
{
	srv_tc_call *c = cur(p);
	if (p->fmt == SRV_TC_FMT_OTHER)
		return;
	if (p->mode == SRV_TC_FORCED) {
		if (c) {
			if (!c->args.len)
				util_buf_puts(&c->args, "{}");
			c->done = 1;
		}
		return;
	}
	if (p->mode == SRV_TC_PICK) {
		if (c) {
			/* cut short (max_tokens): what there is, closed as far as it
			 * can be; a client sees the same through the stream */
			if (!c->args.len)
				util_buf_puts(&c->args, "{}");
			c->done = 1;
		}
		return;
	}
	/* GLM: an unclosed call is closed; a partial closing tag held back is
	 * dropped with it */
	if (p->state == ST_NAME && p->in.len) {
		const char *s = p->in.p;
		size_t n = p->in.len, i = 0;
		while (i < n && is_ws(s[i]))
			i++;
		while (n > i && is_ws(s[n - 1]))
			n--;
		if (n > i && s[i] != '{') {
			p->fmt = SRV_TC_FMT_OWN;
			c = srv_tc_begin(p, s + i, n - i);
			if (c)
				util_buf_puts(&c->args, "{");
		}
	} else if (p->state == ST_VAL && c) {
		if (p->val_string)
			util_buf_puts(&c->args, "\"");
		else
			add_typed(&c->args, p->tmp.p ? p->tmp.p : "", p->tmp.len);
	}
	end_call(p);
	util_buf_clear(&p->in);
	p->state = ST_DONE;
}

int srv_tc_take(srv_tcparse *p, srv_tool_call **out)
{
	*out = NULL;
	int n = 0;
	srv_tool_call *a = p->n_calls ? calloc((size_t)p->n_calls, sizeof *a) : NULL;
	for (int i = 0; a && i < p->n_calls; i++) {
		if (!p->calls[i].done || !p->calls[i].name)
			continue;
		memcpy(a[n].id, p->calls[i].id, sizeof a[n].id);
		a[n].name = strdup(p->calls[i].name);
		a[n].arguments = strndup(p->calls[i].args.p ? p->calls[i].args.p : "{}",
					 p->calls[i].args.p ? p->calls[i].args.len : 2);
		n++;
	}
	*out = a;
	return n;
}

void srv_tc_adopt(srv_tcparse *p, const srv_tool_call *calls, int n)
{
	for (int i = 0; i < n; i++) {
		srv_tc_call *c = srv_tc_begin(p, calls[i].name, strlen(calls[i].name));
		if (!c)
			break;
		util_buf_puts(&c->args, calls[i].arguments ? calls[i].arguments : "{}");
		c->done = 1;
	}
}

/* n less an incomplete UTF-8 character at the end of p[0..n). */
static size_t utf8_whole(const char *p, size_t n)
{
	size_t i = n, k = 0;
	while (i > 0 && k < 4 && ((unsigned char)p[i - 1] & 0xC0) == 0x80)
		i--, k++;
	if (i == 0 || (unsigned char)p[i - 1] < 0x80)
		return n;
	unsigned char lead = (unsigned char)p[i - 1];
	size_t need = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : 2;
	return k + 1 >= need ? n : i - 1;
}

void srv_tc_stream(srv_tcparse *p, const srv_tc_sink *k)
{
	for (int i = 0; i < p->n_calls; i++) {
		srv_tc_call *c = &p->calls[i];
		if (c->closed)
			continue;
		if (!c->announced)
			c->announced = k->start(k->ctx, i, c);
		size_t upto = c->done ? c->args.len : utf8_whole(c->args.p, c->args.len);
		if (upto > c->sent) {
			k->args(k->ctx, i, c, c->args.p + c->sent, upto - c->sent);
			c->sent = upto;
		}
		if (!c->done)
			break;   /* the calls after it are not begun yet */
		k->end(k->ctx, i, c);
		c->closed = 1;
	}
}
