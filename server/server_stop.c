/* server_stop.c - stop strings and tool-call markup in generated text
 * (pure functions).
 *
 * Stop strings are matched here, in the HTTP layer, rather than in the
 * engine, because the APIs report *which* string matched (Anthropic's
 * stop_sequence) and must never show its text: text that could be the start
 * of a stop string is held back until it either matches or cannot. Held text
 * always starts at the first byte of a (valid UTF-8) stop string, so what is
 * released ends on a character boundary.
 *
 * Tool-call markup is handled the same way: once its opening marker appears,
 * the rest of the output is captured instead of shown, and parsed into
 * calls at the end. Forms understood:
 *   DeepSeek V3:   <｜tool▁call▁begin｜>function<｜tool▁sep｜>NAME\n```json\nARGS\n```<｜tool▁call▁end｜>
 *   DeepSeek V3.1: <｜tool▁call▁begin｜>NAME<｜tool▁sep｜>ARGS<｜tool▁call▁end｜>
 *   GLM-4.5/5:     <tool_call>NAME\n<arg_key>K</arg_key>\n<arg_value>V</arg_value>...</tool_call>
 *   ChatML/Qwen:   <tool_call>\n{"name": NAME, "arguments": {...}}\n</tool_call> */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "server_internal.h"

#define DS_CALLS_BEGIN "<\xef\xbd\x9ctool\xe2\x96\x81" "calls\xe2\x96\x81" "begin\xef\xbd\x9c>"
#define DS_CALL_BEGIN "<\xef\xbd\x9ctool\xe2\x96\x81" "call\xe2\x96\x81" "begin\xef\xbd\x9c>"
#define DS_CALL_END "<\xef\xbd\x9ctool\xe2\x96\x81" "call\xe2\x96\x81" "end\xef\xbd\x9c>"
#define DS_SEP "<\xef\xbd\x9ctool\xe2\x96\x81" "sep\xef\xbd\x9c>"
#define TC_BEGIN "<tool_call>"
#define TC_END "</tool_call>"

static const char *const markers[] = { DS_CALLS_BEGIN, DS_CALL_BEGIN, TC_BEGIN, NULL };

void srv_stopper_init(srv_stopper *s, const char *const *stops, int tools)
{
	memset(s, 0, sizeof *s);
	s->stops = stops;
	s->tools = tools;
	s->hit = -1;
}

void srv_stopper_free(srv_stopper *s)
{
	util_buf_free(&s->held);
	util_buf_free(&s->markup);
}

/* Length of the longest suffix of h[0..n) that is a proper prefix of pat. */
static size_t partial_suffix(const char *h, size_t n, const char *pat)
{
	size_t m = strlen(pat);
	if (m == 0)
		return 0;
	size_t k = n < m - 1 ? n : m - 1;
	for (; k > 0; k--)
		if (!memcmp(h + n - k, pat, k))
			return k;
	return 0;
}

static const char *find(const char *h, size_t n, const char *pat)
{
	size_t m = strlen(pat);
	if (m == 0 || m > n)
		return NULL;
	for (size_t i = 0; i + m <= n; i++)
		if (h[i] == pat[0] && !memcmp(h + i, pat, m))
			return h + i;
	return NULL;
}

int srv_stopper_push(srv_stopper *s, const char *text, size_t len, util_buf *out)
{
	if (s->hit >= 0)
		return 1;
	if (s->capturing) {
		util_buf_add(&s->markup, text, len);
		return 0;
	}
	util_buf_add(&s->held, text, len);
	const char *h = s->held.p;
	size_t n = s->held.len;
	const char *best = NULL;
	int best_stop = -1, best_marker = 0;
	for (int i = 0; s->stops && s->stops[i]; i++) {
		const char *p = find(h, n, s->stops[i]);
		if (p && (!best || p < best)) {
			best = p;
			best_stop = i;
		}
	}
	for (int i = 0; s->tools && markers[i]; i++) {
		const char *p = find(h, n, markers[i]);
		if (p && (!best || p < best)) {
			best = p;
			best_stop = -1;
			best_marker = 1;
		}
	}
	if (best) {
		size_t at = (size_t)(best - h);
		util_buf_add(out, h, at);
		if (best_marker) {
			s->capturing = 1;
			util_buf_add(&s->markup, best, n - at);
			util_buf_clear(&s->held);
			return 0;
		}
		s->hit = best_stop;
		util_buf_clear(&s->held);
		return 1;
	}
	size_t keep = 0;
	for (int i = 0; s->stops && s->stops[i]; i++) {
		size_t k = partial_suffix(h, n, s->stops[i]);
		keep = k > keep ? k : keep;
	}
	for (int i = 0; s->tools && markers[i]; i++) {
		size_t k = partial_suffix(h, n, markers[i]);
		keep = k > keep ? k : keep;
	}
	util_buf_add(out, h, n - keep);
	util_buf_consume(&s->held, n - keep);
	return 0;
}

void srv_stopper_flush(srv_stopper *s, util_buf *out)
{
	if (s->hit < 0 && s->held.len)
		util_buf_add(out, s->held.p, s->held.len);
	util_buf_clear(&s->held);
}

/* ---- tool-call markup ---- */

static char *dup_trim(const char *a, const char *b)
{
	while (a < b && (*a == ' ' || *a == '\n' || *a == '\r' || *a == '\t'))
		a++;
	while (b > a && (b[-1] == ' ' || b[-1] == '\n' || b[-1] == '\r' || b[-1] == '\t'))
		b--;
	char *s = malloc((size_t)(b - a) + 1);
	if (s) {
		memcpy(s, a, (size_t)(b - a));
		s[b - a] = '\0';
	}
	return s;
}

static const char *find_in(const char *a, const char *b, const char *pat)
{
	const char *p = find(a, (size_t)(b - a), pat);
	return p;
}

static int add_call(srv_tool_call **calls, int *n, char *name, char *args)
{
	srv_tool_call *c = realloc(*calls, (size_t)(*n + 1) * sizeof *c);
	if (!c || !name || !*name) {
		free(name);
		free(args);
		if (c)
			*calls = c;
		return -1;
	}
	*calls = c;
	c = &c[*n];
	memset(c, 0, sizeof *c);
	srv_make_id(c->id, sizeof c->id, "call_");
	c->name = name;
	c->arguments = args ? args : strdup("{}");
	(*n)++;
	return 0;
}

static void parse_deepseek(const char *a, const char *b, srv_tool_call **calls, int *n)
{
	const char *sep = find_in(a, b, DS_SEP);
	if (!sep)
		return;
	const char *end = find_in(sep, b, DS_CALL_END);
	if (!end)
		end = b;
	char *head = dup_trim(a, sep);
	const char *body = sep + strlen(DS_SEP);
	if (head && !strcmp(head, "function")) {
		free(head);
		const char *nl = memchr(body, '\n', (size_t)(end - body));
		const char *name_end = nl ? nl : end;
		char *name = dup_trim(body, name_end);
		const char *ja = find_in(name_end, end, "```json");
		const char *args_a = ja ? ja + 7 : name_end;
		const char *args_b = find_in(args_a, end, "```");
		add_call(calls, n, name, dup_trim(args_a, args_b ? args_b : end));
	} else {
		add_call(calls, n, head, dup_trim(body, end));
	}
}

/* GLM: <arg_key>K</arg_key><arg_value>V</arg_value> pairs -> JSON object. */
static char *glm_args(const char *a, const char *b)
{
	json_t *obj = json_object();
	const char *p = a;
	for (;;) {
		const char *k = find_in(p, b, "<arg_key>");
		if (!k)
			break;
		k += 9;
		const char *ke = find_in(k, b, "</arg_key>");
		const char *v = ke ? find_in(ke, b, "<arg_value>") : NULL;
		const char *ve = v ? find_in(v, b, "</arg_value>") : NULL;
		if (!ve)
			break;
		v += 11;
		char *key = dup_trim(k, ke), *val = dup_trim(v, ve);
		json_t *jv = val ? json_loads(val, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL) : NULL;
		if (!jv)
			jv = json_string(val ? val : "");
		if (key)
			json_object_set_new(obj, key, jv);
		else
			json_decref(jv);
		free(key);
		free(val);
		p = ve + 12;
	}
	char *s = json_dumps(obj, JSON_COMPACT);
	json_decref(obj);
	return s;
}

static void parse_tool_call_tag(const char *a, const char *b, srv_tool_call **calls, int *n)
{
	while (a < b && (*a == ' ' || *a == '\n' || *a == '\r' || *a == '\t'))
		a++;
	if (a < b && *a == '{') {
		char *txt = dup_trim(a, b);
		json_t *j = txt ? json_loads(txt, JSON_ALLOW_NUL, NULL) : NULL;
		free(txt);
		json_t *name = json_object_get(j, "name");
		json_t *args = json_object_get(j, "arguments");
		if (json_is_string(name)) {
			char *as = json_is_string(args) ? strdup(json_string_value(args))
				 : args ? json_dumps(args, JSON_COMPACT) : strdup("{}");
			add_call(calls, n, strdup(json_string_value(name)), as);
		}
		json_decref(j);
		return;
	}
	const char *ak = find_in(a, b, "<arg_key>");
	const char *nl = memchr(a, '\n', (size_t)(b - a));
	const char *name_end = ak && (!nl || ak < nl) ? ak : nl ? nl : b;
	add_call(calls, n, dup_trim(a, name_end), glm_args(name_end, b));
}

int srv_tools_parse(const char *markup, size_t len, srv_tool_call **calls)
{
	int n = 0;
	*calls = NULL;
	const char *p = markup, *end = markup + len;
	while (p < end) {
		const char *ds = find_in(p, end, DS_CALL_BEGIN);
		const char *tc = find_in(p, end, TC_BEGIN);
		if (ds && (!tc || ds < tc)) {
			const char *a = ds + strlen(DS_CALL_BEGIN);
			const char *e = find_in(a, end, DS_CALL_END);
			parse_deepseek(a, e ? e : end, calls, &n);
			p = e ? e + strlen(DS_CALL_END) : end;
		} else if (tc) {
			const char *a = tc + strlen(TC_BEGIN);
			const char *e = find_in(a, end, TC_END);
			parse_tool_call_tag(a, e ? e : end, calls, &n);
			p = e ? e + strlen(TC_END) : end;
		} else {
			break;
		}
	}
	return n;
}

void srv_tools_free(srv_tool_call *calls, int n)
{
	for (int i = 0; i < n; i++) {
		free(calls[i].name);
		free(calls[i].arguments);
	}
	free(calls);
}
