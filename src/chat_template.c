/* chat_template.c - the chat templates of the supported families, written
 * out in C, for checkpoints that ship no template of their own (those that
 * do are interpreted: chat_template_jinja.c).
 *
 * Each renderer reproduces its family's reference template as shipped in
 * tokenizer_config.json, quirks included (DeepSeek-V3 only closes the
 * tool-calls block after a second call; the Llama-3 template always opens
 * the assistant turn), because the model was trained on exactly that text.
 * tests/tokenizer_conformance.sh renders the same conversations with the
 * files' own templates through @huggingface/jinja and compares. Message
 * content is text; JSON values (tools, tool-call arguments) are written as
 * Jinja's tojson writes them: ", " and ": " separators, non-ASCII kept. */
#include "config.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chat_template.h"
#include "util_buf.h"
#include "util_unicode.h"

/* the prompt being rendered; appends are checked once, at the end */
typedef util_buf sb;

static void sb_addn(sb *b, const char *s, size_t n)
{
	util_buf_add(b, s, n);
}

static void sb_add(sb *b, const char *s)
{
	util_buf_puts(b, s ? s : "");
}

/* ---- Python string methods on byte ranges ---- */

typedef struct str {
	const char *p;
	size_t n;
} str;

static str S(const char *s)
{
	return (str){ s ? s : "", s ? strlen(s) : 0 };
}

static str strip_nl(str s, int left, int right)
{
	while (left && s.n && s.p[0] == '\n')
		s.p++, s.n--;
	while (right && s.n && s.p[s.n - 1] == '\n')
		s.n--;
	return s;
}

/* str.strip() with no argument, as the JS Jinja runs it (String.trim). */
static int js_space_at(const char *p, size_t n, size_t *len)
{
	uint32_t cp;
	int r = unicode_utf8_next((const uint8_t *)p, n, &cp);
	if (r <= 0)
		return 0;
	*len = (size_t)r;
	return (cp != 0x85 && unicode_is_white_space(cp)) || cp == 0xFEFF;
}

static str strip_ws(str s)
{
	size_t l;
	while (s.n && js_space_at(s.p, s.n, &l))
		s.p += l, s.n -= l;
	while (s.n) {
		size_t k = s.n - 1;
		while (k > 0 && ((uint8_t)s.p[k] & 0xC0) == 0x80)
			k--;
		if (!js_space_at(s.p + k, s.n - k, &l) || k + l != s.n)
			break;
		s.n = k;
	}
	return s;
}

static const char *find(str s, const char *needle)
{
	size_t m = strlen(needle);
	for (size_t i = 0; i + m <= s.n; i++)
		if (!memcmp(s.p + i, needle, m))
			return s.p + i;
	return NULL;
}

static const char *rfind(str s, const char *needle)
{
	size_t m = strlen(needle);
	for (size_t i = s.n >= m ? s.n - m + 1 : 0; i-- > 0;)
		if (!memcmp(s.p + i, needle, m))
			return s.p + i;
	return NULL;
}

/* content.split(sep)[0] and content.split(sep)[-1] */
static str split_first(str s, const char *sep)
{
	const char *f = find(s, sep);
	return f ? (str){ s.p, (size_t)(f - s.p) } : s;
}

static str split_last(str s, const char *sep)
{
	const char *f = rfind(s, sep);
	if (!f)
		return s;
	size_t off = (size_t)(f - s.p) + strlen(sep);
	return (str){ s.p + off, s.n - off };
}

/* The reasoning/content split the Qwen3 and GLM templates apply to an
 * assistant message that carries "<think>...</think>" in its content. */
static void split_think(str content, str *reasoning, str *answer)
{
	*reasoning = S("");
	*answer = content;
	if (!find(content, "</think>"))
		return;
	*answer = strip_nl(split_last(content, "</think>"), 1, 0);
	*reasoning = strip_nl(split_last(strip_nl(split_first(content, "</think>"), 0, 1), "<think>"), 1, 0);
}

/* ---- tojson as @huggingface/jinja (and Python's json.dumps) writes it ---- */

static void json_str(sb *b, const char *s, size_t n)
{
	sb_add(b, "\"");
	util_buf_json_escape(b, s, n);
	sb_add(b, "\"");
}

static void tojson(sb *b, json_t *v)
{
	char num[64];
	size_t i;
	const char *k;
	json_t *x;
	switch (json_typeof(v)) {
	case JSON_OBJECT:
		sb_add(b, "{");
		i = 0;
		json_object_foreach(v, k, x) {
			if (i++)
				sb_add(b, ", ");
			json_str(b, k, strlen(k));
			sb_add(b, ": ");
			tojson(b, x);
		}
		sb_add(b, "}");
		break;
	case JSON_ARRAY:
		sb_add(b, "[");
		json_array_foreach(v, i, x) {
			if (i)
				sb_add(b, ", ");
			tojson(b, x);
		}
		sb_add(b, "]");
		break;
	case JSON_STRING:
		json_str(b, json_string_value(v), json_string_length(v));
		break;
	case JSON_INTEGER:
		snprintf(num, sizeof num, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
		sb_add(b, num);
		break;
	case JSON_REAL:
		/* shortest text that reads back the same, like JavaScript */
		for (int prec = 1; prec <= 17; prec++) {
			snprintf(num, sizeof num, "%.*g", prec, json_real_value(v));
			if (strtod(num, NULL) == json_real_value(v))
				break;
		}
		sb_add(b, num);
		break;
	case JSON_TRUE: sb_add(b, "true"); break;
	case JSON_FALSE: sb_add(b, "false"); break;
	case JSON_NULL: sb_add(b, "null"); break;
	}
}

/* ---- messages ---- */

static const char *role_of(const coli_chat_msg *m)
{
	return !strcmp(m->role, "developer") ? "system" : m->role;
}

static int is_role(const coli_chat_msg *m, const char *r)
{
	return !strcmp(role_of(m), r);
}

/* A parsed tool call: its function name and arguments. */
typedef struct tcall {
	const char *type, *name;
	json_t *args;      /* string or object */
} tcall;

static int parse_calls(const coli_chat_msg *m, json_t **root, tcall **calls, size_t *n,
		       coli_err *err)
{
	*root = NULL;
	*calls = NULL;
	*n = 0;
	if (!m->tool_calls_json)
		return 0;
	json_error_t je;
	*root = json_loads(m->tool_calls_json, 0, &je);
	if (!json_is_array(*root))
		return coli_err_set(err, -EINVAL, "tool_calls: not a JSON array (%s)", je.text);
	*n = json_array_size(*root);
	*calls = calloc(*n ? *n : 1, sizeof **calls);
	if (!*calls)
		return coli_err_set(err, -ENOMEM, "out of memory");
	for (size_t i = 0; i < *n; i++) {
		json_t *c = json_array_get(*root, i), *f = json_object_get(c, "function");
		if (!json_is_object(f))
			f = c;
		json_t *name = json_object_get(f, "name"), *type = json_object_get(c, "type");
		(*calls)[i].name = json_string_value(name);
		(*calls)[i].type = json_is_string(type) ? json_string_value(type) : "function";
		(*calls)[i].args = json_object_get(f, "arguments");
		if (!(*calls)[i].name || !(*calls)[i].args)
			return coli_err_set(err, -EINVAL, "tool_calls[%zu]: needs function.name and function.arguments", i);
	}
	return 0;
}

/* arguments as text (string as is, else tojson) */
static void args_text(sb *b, json_t *a)
{
	if (json_is_string(a))
		sb_addn(b, json_string_value(a), json_string_length(a));
	else
		tojson(b, a);
}

/* ---- DeepSeek-V3 ---- */

/* rev 0: DeepSeek-V3 as first released; rev 1: the V3-0324/R1 revision. */
static int render_deepseek(const coli_chat_template *tpl, const coli_chat_msg *msgs, int n, int agp,
			   int rev, sb *b, coli_err *err)
{
	int is_first = 0, is_tool = 0, is_output_first = 1, first_sp = 1, rc = 0;
	sb_add(b, tpl->bos_text);
	for (int i = 0; i < n; i++)
		if (is_role(&msgs[i], "system")) {
			if (!first_sp)
				sb_add(b, "\n\n");
			sb_add(b, msgs[i].content);
			first_sp = 0;
		}
	for (int i = 0; i < n && rc == 0; i++) {
		const coli_chat_msg *m = &msgs[i];
		/* rev 0 asks "content is none", rev 1 "'tool_calls' in message" */
		int calls = rev ? m->tool_calls_json != NULL : !m->content;
		if (is_role(m, "user")) {
			is_tool = 0;
			sb_add(b, "<｜User｜>");
			sb_add(b, m->content);
		} else if (is_role(m, "assistant") && calls) {
			json_t *root;
			tcall *c;
			size_t nc;
			is_tool = 0;
			if ((rc = parse_calls(m, &root, &c, &nc, err)) == 0) {
				for (size_t k = 0; k < nc; k++) {
					/* the template never resets is_first: later turns take
					 * the continuation form, as in the reference */
					if (is_first) {
						sb_add(b, "\n<｜tool▁call▁begin｜>");
					} else {
						sb_add(b, "<｜Assistant｜>");
						if (rev && m->content)
							sb_add(b, m->content);
						sb_add(b, "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>");
					}
					sb_add(b, c[k].type);
					sb_add(b, "<｜tool▁sep｜>");
					sb_add(b, c[k].name);
					sb_add(b, "\n```json\n");
					args_text(b, c[k].args);
					sb_add(b, "\n```<｜tool▁call▁end｜>");
					if (!rev && is_first)
						sb_add(b, "<｜tool▁calls▁end｜><｜end▁of▁sentence｜>");
					is_first = 1;
				}
				if (rev)
					sb_add(b, "<｜tool▁calls▁end｜><｜end▁of▁sentence｜>");
			}
			free(c);
			json_decref(root);
		} else if (is_role(m, "assistant")) {
			if (is_tool) {
				sb_add(b, "<｜tool▁outputs▁end｜>");
				sb_add(b, m->content);
			} else {
				sb_add(b, "<｜Assistant｜>");
				str c = S(m->content);
				if (rev && find(c, "</think>"))
					c = split_last(c, "</think>");
				sb_addn(b, c.p, c.n);
			}
			sb_add(b, "<｜end▁of▁sentence｜>");
			is_tool = 0;
		} else if (is_role(m, "tool")) {
			is_tool = 1;
			sb_add(b, is_output_first ? "<｜tool▁outputs▁begin｜><｜tool▁output▁begin｜>"
				  : rev ? "<｜tool▁output▁begin｜>" : "\n<｜tool▁output▁begin｜>");
			sb_add(b, m->content);
			sb_add(b, "<｜tool▁output▁end｜>");
			is_output_first = 0;
		}
	}
	if (is_tool)
		sb_add(b, "<｜tool▁outputs▁end｜>");
	if (agp && !is_tool)
		sb_add(b, "<｜Assistant｜>");
	return rc;
}

/* ---- ChatML (Qwen3) ---- */

static int starts_ends(str s, const char *a, const char *z)
{
	size_t la = strlen(a), lz = strlen(z);
	return s.n >= la && s.n >= lz && !memcmp(s.p, a, la) && !memcmp(s.p + s.n - lz, z, lz);
}

static int render_chatml(const coli_chat_msg *msgs, int n, json_t *tools, int agp, sb *b,
			 coli_err *err)
{
	int rc = 0;
	if (tools && json_array_size(tools)) {
		sb_add(b, "<|im_start|>system\n");
		if (n && is_role(&msgs[0], "system")) {
			sb_add(b, msgs[0].content);
			sb_add(b, "\n\n");
		}
		sb_add(b, "# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
			  "You are provided with function signatures within <tools></tools> XML tags:\n<tools>");
		size_t i;
		json_t *t;
		json_array_foreach(tools, i, t) {
			sb_add(b, "\n");
			tojson(b, t);
		}
		sb_add(b, "\n</tools>\n\nFor each function call, return a json object with function name and "
			  "arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": "
			  "<function-name>, \"arguments\": <args-json-object>}\n</tool_call><|im_end|>\n");
	} else if (n && is_role(&msgs[0], "system")) {
		sb_add(b, "<|im_start|>system\n");
		sb_add(b, msgs[0].content);
		sb_add(b, "<|im_end|>\n");
	}
	/* the last user turn that is not a wrapped tool response */
	int last_query = n - 1;
	for (int i = n - 1; i >= 0; i--)
		if (is_role(&msgs[i], "user") &&
		    !starts_ends(S(msgs[i].content), "<tool_response>", "</tool_response>")) {
			last_query = i;
			break;
		}
	for (int i = 0; i < n && rc == 0; i++) {
		const coli_chat_msg *m = &msgs[i];
		if (is_role(m, "user") || (is_role(m, "system") && i > 0)) {
			sb_add(b, "<|im_start|>");
			sb_add(b, role_of(m));
			sb_add(b, "\n");
			sb_add(b, m->content);
			sb_add(b, "<|im_end|>\n");
		} else if (is_role(m, "assistant")) {
			str reasoning, content;
			split_think(S(m->content), &reasoning, &content);
			sb_add(b, "<|im_start|>assistant\n");
			if (i > last_query && (i == n - 1 || reasoning.n)) {
				str r = strip_nl(reasoning, 1, 1), c = strip_nl(content, 1, 0);
				sb_add(b, "<think>\n");
				sb_addn(b, r.p, r.n);
				sb_add(b, "\n</think>\n\n");
				sb_addn(b, c.p, c.n);
			} else {
				sb_addn(b, content.p, content.n);
			}
			json_t *root;
			tcall *c;
			size_t nc;
			if ((rc = parse_calls(m, &root, &c, &nc, err)) == 0)
				for (size_t k = 0; k < nc; k++) {
					if (k > 0 || content.n)
						sb_add(b, "\n");
					sb_add(b, "<tool_call>\n{\"name\": \"");
					sb_add(b, c[k].name);
					sb_add(b, "\", \"arguments\": ");
					args_text(b, c[k].args);
					sb_add(b, "}\n</tool_call>");
				}
			free(c);
			json_decref(root);
			sb_add(b, "<|im_end|>\n");
		} else if (is_role(m, "tool")) {
			if (i == 0 || !is_role(&msgs[i - 1], "tool"))
				sb_add(b, "<|im_start|>user");
			sb_add(b, "\n<tool_response>\n");
			sb_add(b, m->content);
			sb_add(b, "\n</tool_response>");
			if (i == n - 1 || !is_role(&msgs[i + 1], "tool"))
				sb_add(b, "<|im_end|>\n");
		}
	}
	if (agp)
		sb_add(b, "<|im_start|>assistant\n");
	return rc;
}

/* ---- GLM-4.5 / GLM-5 ---- */

static int render_glm(const coli_chat_msg *msgs, int n, json_t *tools, int agp, int thinking, sb *b,
		      coli_err *err)
{
	int rc = 0;
	sb_add(b, "[gMASK]<sop>");
	if (tools && json_array_size(tools)) {
		sb_add(b, "<|system|>\n# Tools\n\nYou may call one or more functions to assist with the user "
			  "query.\n\nYou are provided with function signatures within <tools></tools> XML tags:\n<tools>\n");
		size_t i;
		json_t *t;
		json_array_foreach(tools, i, t) {
			tojson(b, t);
			sb_add(b, "\n");
		}
		sb_add(b, "</tools>\n\nFor each function call, output the function name and arguments within "
			  "the following XML format:\n<tool_call>{function-name}<arg_key>{arg-key-1}</arg_key>"
			  "<arg_value>{arg-value-1}</arg_value><arg_key>{arg-key-2}</arg_key><arg_value>"
			  "{arg-value-2}</arg_value>...</tool_call>");
	}
	int last_user = -1;
	for (int i = 0; i < n; i++)
		if (is_role(&msgs[i], "user"))
			last_user = i;
	for (int i = 0; i < n && rc == 0; i++) {
		const coli_chat_msg *m = &msgs[i];
		if (is_role(m, "user")) {
			sb_add(b, "<|user|>");
			sb_add(b, m->content);
		} else if (is_role(m, "assistant")) {
			str reasoning, content;
			split_think(S(m->content), &reasoning, &content);
			sb_add(b, "<|assistant|>");
			if (i > last_user && reasoning.n) {
				str r = strip_ws(reasoning);
				sb_add(b, "<think>");
				sb_addn(b, r.p, r.n);
				sb_add(b, "</think>");
			} else {
				sb_add(b, "</think>");
			}
			str c = strip_ws(content);
			sb_addn(b, c.p, c.n);
			json_t *root;
			tcall *calls;
			size_t nc;
			if ((rc = parse_calls(m, &root, &calls, &nc, err)) == 0)
				for (size_t k = 0; k < nc && rc == 0; k++) {
					/* OpenAI sends arguments as JSON text; the template
					 * iterates them as a mapping */
					json_t *args = calls[k].args, *parsed = NULL;
					if (json_is_string(args))
						args = parsed = json_loads(json_string_value(args), 0, NULL);
					if (!json_is_object(args)) {
						rc = coli_err_set(err, -EINVAL, "tool_calls[%zu].function.arguments: not a JSON object", k);
						json_decref(parsed);
						break;
					}
					sb_add(b, "<tool_call>");
					sb_add(b, calls[k].name);
					const char *key;
					json_t *v;
					json_object_foreach(args, key, v) {
						sb_add(b, "<arg_key>");
						sb_add(b, key);
						sb_add(b, "</arg_key><arg_value>");
						args_text(b, v);
						sb_add(b, "</arg_value>");
					}
					sb_add(b, "</tool_call>");
					json_decref(parsed);
				}
			free(calls);
			json_decref(root);
		} else if (is_role(m, "tool")) {
			if (i == 0 || !is_role(&msgs[i - 1], "tool"))
				sb_add(b, "<|observation|>");
			sb_add(b, "<tool_response>");
			sb_add(b, m->content);
			sb_add(b, "</tool_response>");
		} else if (is_role(m, "system")) {
			sb_add(b, "<|system|>");
			sb_add(b, m->content);
		}
	}
	if (agp)
		sb_add(b, thinking == 0 ? "<|assistant|></think>" : "<|assistant|><think>");
	return rc;
}

/* ---- Llama-3 (the base template: no tools) ---- */

static int render_llama3(const coli_chat_template *tpl, const coli_chat_msg *msgs, int n, sb *b)
{
	for (int i = 0; i < n; i++) {
		if (i == 0)
			sb_add(b, tpl->bos_text);
		sb_add(b, "<|start_header_id|>");
		sb_add(b, role_of(&msgs[i]));
		sb_add(b, "<|end_header_id|>\n\n");
		str c = strip_ws(S(msgs[i].content));
		sb_addn(b, c.p, c.n);
		sb_add(b, "<|eot_id|>");
	}
	/* this template opens the assistant turn unconditionally */
	sb_add(b, "<|start_header_id|>assistant<|end_header_id|>\n\n");
	return 0;
}

/* ---- dispatch (detection: chat_template_detect.c) ---- */

int coli_chat_render(const coli_chat_template *tpl, const coli_chat_msg *msgs, int n,
		     const char *tools_json, int add_generation_prompt, char **out, coli_err *err)
{
	sb b = { 0 };
	json_t *tools = NULL;
	int rc = 0;
	*out = NULL;
	for (int i = 0; i < n; i++)
		if (!msgs[i].role || (!msgs[i].content && !msgs[i].tool_calls_json))
			return coli_err_set(err, -EINVAL, "messages[%d]: needs a role and content or tool_calls", i);
	if (tpl->family == COLI_CHAT_JINJA)
		return coli_chat_render_jinja(tpl, msgs, n, tools_json, add_generation_prompt, out, err);
	int oom;
	coli_chat_msg *folded = coli_chat_fold_reasoning(msgs, n, &oom);
	if (oom)
		return coli_err_set(err, -ENOMEM, "out of memory");
	const coli_chat_msg *given = msgs;
	if (folded)
		msgs = folded;
	if (tools_json) {
		json_error_t je;
		tools = json_loads(tools_json, 0, &je);
		if (!json_is_array(tools)) {
			json_decref(tools);
			coli_chat_fold_reasoning_free(folded, given, n);
			return coli_err_set(err, -EINVAL, "tools: not a JSON array (%s)", je.text);
		}
	}
	switch (tpl->family) {
	case COLI_CHAT_DEEPSEEK_V3:
		rc = render_deepseek(tpl, msgs, n, add_generation_prompt, 0, &b, err);
		break;
	case COLI_CHAT_DEEPSEEK_R1:
	case COLI_CHAT_DEFAULT_MODEL: /* the default model is made by coli synth */
		rc = render_deepseek(tpl, msgs, n, add_generation_prompt, 1, &b, err);
		break;
	case COLI_CHAT_GLM5:
		rc = render_glm(msgs, n, tools, add_generation_prompt, tpl->enable_thinking, &b, err);
		break;
	case COLI_CHAT_CHATML:
		rc = render_chatml(msgs, n, tools, add_generation_prompt, &b, err);
		break;
	case COLI_CHAT_LLAMA3:
		rc = render_llama3(tpl, msgs, n, &b);
		break;
	default:
		rc = coli_err_set(err, -ENOTSUP, "chat family %d has no renderer", tpl->family);
	}
	json_decref(tools);
	coli_chat_fold_reasoning_free(folded, given, n);
	if (rc < 0) {
		util_buf_free(&b);
		return rc;
	}
	if (!(*out = util_buf_steal(&b, NULL)))
		return coli_err_set(err, -ENOMEM, "out of memory");
	return 0;
}

int coli_chat_render_turn(const coli_chat_template *tpl, const coli_chat_msg *msgs, int n,
			  int has_history, int prev_unfinished, char **out, coli_err *err)
{
	char *r = NULL;
	int rc = coli_chat_render(tpl, msgs, n, NULL, 1, &r, err);
	if (rc)
		return rc;
	const char *body = r;
	const char *bos = tpl->bos_text ? tpl->bos_text : "";
	size_t bl = strlen(bos);
	if (has_history && bl && !strncmp(body, bos, bl))
		body += bl;
	const char *pre = has_history && prev_unfinished && tpl->eos_text ? tpl->eos_text : "";
	size_t len = strlen(pre) + strlen(body) + 1;
	*out = malloc(len);
	if (!*out) {
		free(r);
		return coli_err_set(err, -ENOMEM, "out of memory");
	}
	snprintf(*out, len, "%s%s", pre, body);
	free(r);
	return 0;
}

int coli_chat_opens_thinking(const char *prompt)
{
	size_t n = strlen(prompt);
	while (n > 0 && (prompt[n - 1] == '\n' || prompt[n - 1] == ' '))
		n--;
	return n >= 7 && !memcmp(prompt + n - 7, "<think>", 7);
}
