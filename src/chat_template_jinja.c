/* chat_template_jinja.c - a conversation rendered with the checkpoint's
 * own template, given the variables Hugging Face's apply_chat_template
 * (and vLLM's server on top of it) give it:
 *   messages   role ("developer" as "system"), content ("" when the message has none, as vLLM
 *              passes an assistant turn that only calls tools),
 *              reasoning_content, tool_calls with function.arguments as a
 *              mapping (OpenAI sends JSON text; transformers documents a
 *              mapping and GLM's templates iterate arguments.items()),
 *              tool_call_id, name
 *   tools      the OpenAI function envelopes as sent, or none
 *   documents  none
 *   add_generation_prompt, bos_token, eos_token
 * and each chat_template_kwargs key (enable_thinking, clear_thinking, ...)
 * as a variable of its own. enable_thinking set by the request's API
 * (Anthropic thinking) is passed when the kwargs do not name it.
 *
 * Some templates cannot take mapping arguments: DeepSeek-V3's concatenate
 * them as text ('<｜tool▁sep｜>' + arguments), which transformers would
 * refuse. As llama.cpp does by probing the template, a render that fails
 * with mapping arguments is tried once more with the arguments as the JSON
 * text the client sent; if that fails too, the first error is reported. */
#include "config.h"

#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "chat_jinja.h"
#include "chat_template.h"

int coli_chat_jinja_check(const char *src, coli_err *err)
{
	chat_jinja *t;
	int rc = chat_jinja_parse(src, &t, err);
	if (rc)
		return err ? coli_err_wrap(err, "chat template") : rc;
	chat_jinja_free(t);
	return 0;
}

/* OpenAI tool_calls with each function.arguments text parsed (as_text:
 * kept as text, a mapping written as json.dumps writes it) */
static int tool_calls(const char *text, int as_text, json_t **out, coli_err *err)
{
	json_error_t je;
	json_t *calls = json_loads(text, 0, &je);
	*out = NULL;
	if (!json_is_array(calls)) {
		json_decref(calls);
		return coli_err_set(err, -EINVAL, "tool_calls: not a JSON array (%s)", je.text);
	}
	size_t i;
	json_t *c;
	json_array_foreach(calls, i, c) {
		json_t *f = json_object_get(c, "function");
		json_t *a = json_object_get(f, "arguments");
		if (as_text && a && !json_is_string(a)) {
			char *t = json_dumps(a, JSON_ENCODE_ANY | JSON_PRESERVE_ORDER);
			if (t) {
				/* jansson writes ", " and ": " only with indent off and
				 * compact off: its default is what json.dumps writes */
				json_object_set_new(f, "arguments", json_string(t));
				free(t);
			}
			continue;
		}
		if (as_text || !json_is_string(a))
			continue;
		const char *s = json_string_value(a);
		json_t *parsed = *s ? json_loads(s, JSON_DECODE_ANY, &je) : json_object();
		if (!parsed) {
			json_decref(calls);
			return coli_err_set(err, -EINVAL, "tool_calls[%zu].function.arguments: not JSON (%s)", i, je.text);
		}
		json_object_set_new(f, "arguments", parsed);
	}
	*out = calls;
	return 0;
}

static int set_str(json_t *o, const char *k, const char *v)
{
	return v ? json_object_set_new(o, k, json_string(v)) : 0;
}

static int build_vars(const coli_chat_template *tpl, const coli_chat_msg *msgs, int n,
		      const char *tools_json, int agp, int args_text, json_t *vars, coli_err *err)
{
	json_error_t je;
	if (tpl->kwargs_json) {
		json_t *kw = json_loads(tpl->kwargs_json, 0, &je);
		if (!json_is_object(kw)) {
			json_decref(kw);
			return coli_err_set(err, -EINVAL, "chat_template_kwargs: not a JSON object");
		}
		json_object_update(vars, kw);
		json_decref(kw);
	}
	if (tpl->enable_thinking >= 0 && !json_object_get(vars, "enable_thinking"))
		json_object_set_new(vars, "enable_thinking", json_boolean(tpl->enable_thinking));
	json_t *ms = json_array();
	json_object_set_new(vars, "messages", ms);
	for (int i = 0; i < n; i++) {
		const coli_chat_msg *m = &msgs[i];
		json_t *o = json_object();
		json_array_append_new(ms, o);
		/* as the server has always mapped it */
		set_str(o, "role", !strcmp(m->role, "developer") ? "system" : m->role);
		json_object_set_new(o, "content", json_string(m->content ? m->content : ""));
		set_str(o, "reasoning_content", m->reasoning_content);
		if (m->tool_calls_json) {
			json_t *calls;
			int rc = tool_calls(m->tool_calls_json, args_text, &calls, err);
			if (rc)
				return coli_err_wrap(err, "messages[%d]", i);
			json_object_set_new(o, "tool_calls", calls);
		}
		set_str(o, "tool_call_id", m->tool_call_id);
		set_str(o, "name", m->name);
	}
	json_t *tools = json_null();
	if (tools_json && !(tools = json_loads(tools_json, 0, &je)))
		return coli_err_set(err, -EINVAL, "tools: not JSON (%s)", je.text);
	json_object_set_new(vars, "tools", tools);
	json_object_set_new(vars, "documents", json_null());
	json_object_set_new(vars, "add_generation_prompt", json_boolean(agp));
	if (tpl->bos_text && *tpl->bos_text)
		set_str(vars, "bos_token", tpl->bos_text);
	if (tpl->eos_text && *tpl->eos_text)
		set_str(vars, "eos_token", tpl->eos_text);
	return 0;
}

static int render_once(const coli_chat_template *tpl, const chat_jinja *t, const coli_chat_msg *msgs,
		       int n, const char *tools_json, int agp, int args_text, char **out, coli_err *err)
{
	json_t *vars = json_object();
	if (!vars)
		return coli_err_set(err, -ENOMEM, "out of memory");
	int rc = build_vars(tpl, msgs, n, tools_json, agp, args_text, vars, err);
	if (!rc)
		rc = chat_jinja_render(t, vars, out, err);
	json_decref(vars);
	return rc;
}

int coli_chat_render_jinja(const coli_chat_template *tpl, const coli_chat_msg *msgs, int n,
			   const char *tools_json, int add_generation_prompt, char **out,
			   coli_err *err)
{
	chat_jinja *t = NULL;
	*out = NULL;
	/* transformers picks the "tool_use" template whenever tools are given */
	const char *src = tools_json && tpl->jinja_tool_use ? tpl->jinja_tool_use : tpl->jinja;
	int rc = chat_jinja_parse(src, &t, err);
	if (rc)
		return coli_err_wrap(err, "chat template");
	rc = render_once(tpl, t, msgs, n, tools_json, add_generation_prompt, 0, out, err);
	int calls = 0;
	for (int i = 0; i < n; i++)
		calls |= msgs[i].tool_calls_json != NULL;
	if (rc && calls && err->code != -ENOMEM) {
		coli_err first = *err;
		rc = render_once(tpl, t, msgs, n, tools_json, add_generation_prompt, 1, out, err);
		if (rc)
			*err = first;
	}
	chat_jinja_free(t);
	return rc;
}
