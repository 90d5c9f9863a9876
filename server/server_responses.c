/* server_responses.c - an OpenAI Responses API request body -> srv_resp:
 * the conversation (input items after a stored one's, instructions first)
 * as chat messages, function tools in the chat completions' shape (so the
 * template, the tool-call parser and tool_choice work as there), and the
 * fields the response object echoes.
 *
 * Hosted tools this server cannot run (web_search, file_search, namespace,
 * mcp, ...) are accepted and left out of the prompt, with a line in the -v
 * log: agents send them by default and would fail on a 400. */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coli_log.h"
#include "server_responses.h"
#include "util_array.h"

void srv_resp_free(srv_resp *q)
{
	srv_request_free(&q->req);
	json_decref(q->echo);
	json_decref(q->items);
	memset(q, 0, sizeof *q);
}

/* Text of a content value: a string or text parts joined by newlines
 * (refusals dropped). */
static int parts_text(json_t *c, const char *param, char **out, srv_error *e)
{
	return srv_parse_content(c, param, SRV_CONTENT_NULL | SRV_CONTENT_RESPONSES, out, e);
}

/* Append a message; strings are taken (freed on failure). */
static int push_msg(srv_request *r, int *cap, const char *role, char *content, char *calls, char *call_id,
		    char *name, srv_error *e)
{
	if (util_array_grow(&r->msgs, cap, r->n_msgs + 1, 8)) {
		free(content), free(calls), free(call_id), free(name);
		return srv_oom(e);
	}
	coli_chat_msg *m = &r->msgs[r->n_msgs++];
	memset(m, 0, sizeof *m);
	m->role = strdup(role);
	m->content = content;
	m->tool_calls_json = calls;
	m->tool_call_id = call_id;
	m->name = name;
	return m->role ? 0 : srv_oom(e);
}

/* The function name of call_id among the conversation's calls. */
static const char *call_name(json_t *items, const char *call_id)
{
	size_t i;
	json_t *it;
	json_array_foreach(items, i, it) {
		const char *ty = json_string_value(json_object_get(it, "type"));
		const char *id = json_string_value(json_object_get(it, "call_id"));
		if (ty && id && !strcmp(ty, "function_call") && !strcmp(id, call_id))
			return json_string_value(json_object_get(it, "name"));
	}
	return NULL;
}

/* A function_call item joins the assistant message before it (text and the
 * calls of one turn are one message in the chat shape). */
static int add_call(srv_request *r, int *cap, json_t *it, const char *param, srv_error *e)
{
	json_t *name = json_object_get(it, "name"), *args = json_object_get(it, "arguments");
	json_t *cid = json_object_get(it, "call_id");
	if (!json_is_string(name) || !json_is_string(cid) || (args && !json_is_string(args)))
		return srv_bad_type(e, param, "a function_call with string 'call_id', 'name' and 'arguments'");
	/* no arguments (an empty string) are the empty object the template
	 * can render */
	const char *a = args && json_string_length(args) ? json_string_value(args) : "{}";
	json_t *call = json_pack("{s:O, s:s, s:{s:O, s:s}}", "id", cid, "type", "function", "function", "name",
				 name, "arguments", a);
	if (!call)
		return srv_oom(e);
	coli_chat_msg *last = r->n_msgs ? &r->msgs[r->n_msgs - 1] : NULL;
	json_t *arr = NULL;
	if (last && !strcmp(last->role, "assistant")) {
		arr = last->tool_calls_json ? json_loads(last->tool_calls_json, 0, NULL) : json_array();
	} else {
		if (push_msg(r, cap, "assistant", strdup(""), NULL, NULL, NULL, e)) {
			json_decref(call);
			return -ENOMEM;
		}
		last = &r->msgs[r->n_msgs - 1];
		arr = json_array();
	}
	char *text = arr && !json_array_append_new(arr, call) ? json_dumps(arr, JSON_COMPACT) : NULL;
	json_decref(arr);
	if (!text)
		return srv_oom(e);
	free((char *)last->tool_calls_json);
	last->tool_calls_json = text;
	return 0;
}

static int add_item(srv_request *r, int *cap, json_t *items, json_t *it, size_t idx, srv_error *e)
{
	char param[48];
	snprintf(param, sizeof param, "input[%zu]", idx);
	if (!json_is_object(it))
		return srv_bad_type(e, param, "an object");
	const char *ty = json_string_value(json_object_get(it, "type"));
	json_t *role = json_object_get(it, "role");
	if ((!ty && json_is_string(role)) || (ty && !strcmp(ty, "message"))) {
		const char *ro = json_string_value(role);
		if (!ro)
			return srv_bad_type(e, param, "a message with a string 'role'");
		if (!strcmp(ro, "developer"))
			ro = "system";
		if (strcmp(ro, "system") && strcmp(ro, "user") && strcmp(ro, "assistant"))
			return srv_fail(e, 400, "invalid_request_error", "invalid_value", param,
					"'%s.role' must be user, assistant, system or developer (got '%s')", param, ro);
		char cparam[64], *text;
		snprintf(cparam, sizeof cparam, "%s.content", param);
		if (parts_text(json_object_get(it, "content"), cparam, &text, e))
			return -EINVAL;
		coli_chat_msg *last = r->n_msgs ? &r->msgs[r->n_msgs - 1] : NULL;
		if (!strcmp(ro, "assistant") && last && !strcmp(last->role, "assistant") && last->reasoning_content &&
		    !last->tool_calls_json && last->content && !last->content[0]) {
			/* the answer of the turn a reasoning item opened */
			free((char *)last->content);
			last->content = text;
			return 0;
		}
		return push_msg(r, cap, ro, text, NULL, NULL, NULL, e);
	}
	if (ty && !strcmp(ty, "reasoning")) {
		/* the turn's reasoning (its content, else its summary) opens
		 * the assistant message that its answer and calls join; the
		 * template renders it as the model's template does */
		json_t *parts = json_object_get(it, "content");
		if (!json_array_size(parts))
			parts = json_object_get(it, "summary");
		char rparam[64], *text;
		snprintf(rparam, sizeof rparam, "%s.content", param);
		if (parts_text(parts, rparam, &text, e))
			return -EINVAL;
		if (!text[0]) {
			free(text);
			return 0;
		}
		char *empty = strdup("");
		if (!empty) {
			free(text);
			return srv_oom(e);
		}
		if (push_msg(r, cap, "assistant", empty, NULL, NULL, NULL, e)) {
			free(text);
			return -ENOMEM;
		}
		r->msgs[r->n_msgs - 1].reasoning_content = text;
		return 0;
	}
	if (!ty)
		return srv_bad_type(e, param, "an item with a 'type' (or a message with a 'role')");
	if (!strcmp(ty, "function_call"))
		return add_call(r, cap, it, param, e);
	if (!strcmp(ty, "function_call_output")) {
		json_t *cid = json_object_get(it, "call_id");
		if (!json_is_string(cid))
			return srv_bad_type(e, param, "a function_call_output with a string 'call_id'");
		char oparam[64], *text;
		snprintf(oparam, sizeof oparam, "%s.output", param);
		if (parts_text(json_object_get(it, "output"), oparam, &text, e))
			return -EINVAL;
		const char *nm = call_name(items, json_string_value(cid));
		char *id = strdup(json_string_value(cid)), *name = nm ? strdup(nm) : NULL;
		if (!id) {
			free(text);
			free(name);
			return srv_oom(e);
		}
		return push_msg(r, cap, "tool", text, NULL, id, name, e);
	}
	/* the hosted tools' calls and results */
	coli_debug("server: responses: leaving out input item of type '%s'", ty);
	return 0;
}

/* Function tools in the chat completions' shape; the others are left out. */
static int parse_tools(json_t *root, json_t **chat_tools, srv_error *e)
{
	*chat_tools = NULL;
	json_t *tools = json_object_get(root, "tools");
	if (!tools || json_is_null(tools))
		return 0;
	if (!json_is_array(tools))
		return srv_bad_type(e, "tools", "an array");
	json_t *out = json_array();
	if (!out)
		return srv_oom(e);
	size_t i;
	json_t *t;
	json_array_foreach(tools, i, t) {
		const char *ty = json_string_value(json_object_get(t, "type"));
		if (!json_is_object(t) || !ty) {
			json_decref(out);
			return srv_bad_type(e, "tools", "an array of objects with a 'type'");
		}
		if (strcmp(ty, "function")) {
			const char *nm = json_string_value(json_object_get(t, "name"));
			coli_debug("server: responses: tools[%zu] of type '%s'%s%s is not served; left out", i, ty,
				   nm ? " named " : "", nm ? nm : "");
			continue;
		}
		json_t *name = json_object_get(t, "name");
		if (!json_is_string(name)) {
			json_decref(out);
			return srv_bad_type(e, "tools", "function tools with a string 'name'");
		}
		json_t *fn = json_pack("{s:O}", "name", name);
		const char *keys[] = { "description", "parameters", "strict" };
		for (size_t k = 0; fn && k < 3; k++) {
			json_t *v = json_object_get(t, keys[k]);
			if (v && !json_is_null(v))
				json_object_set(fn, keys[k], v);
		}
		if (!fn || json_array_append_new(out, json_pack("{s:s, s:o}", "type", "function", "function", fn))) {
			json_decref(out);
			return srv_oom(e);
		}
	}
	*chat_tools = out;
	return 0;
}

/* tool_choice onto the representation every API shares (srv_request's
 * tool_choice, applied by srv_tool_choice_apply once the tools are set):
 * "none" offers no tools, "required" (or allowed_tools in required mode)
 * forces a call of some tool, a named function forces that call; the
 * grammar keeps the arguments valid under the tool's schema. */
static int parse_tool_choice(json_t *root, json_t *tools, srv_request *r, int *none, srv_error *e)
{
	json_t *tc = json_object_get(root, "tool_choice");
	*none = 0;
	if (!tc || json_is_null(tc))
		return 0;
	if (json_is_string(tc)) {
		const char *v = json_string_value(tc);
		if (!strcmp(v, "none"))
			*none = 1;
		else if (!strcmp(v, "required"))
			r->tool_choice = SRV_TOOLS_REQUIRED;
		else if (strcmp(v, "auto"))
			return srv_fail(e, 400, "invalid_request_error", "invalid_value", "tool_choice",
					"'tool_choice' must be none, auto, required or an object (got '%s')", v);
		return 0;
	}
	const char *ty = json_string_value(json_object_get(tc, "type"));
	if (!json_is_object(tc) || !ty)
		return srv_bad_type(e, "tool_choice", "\"none\", \"auto\", \"required\" or an object with a 'type'");
	if (!strcmp(ty, "function")) {
		const char *name = json_string_value(json_object_get(tc, "name"));
		if (!name)
			return srv_bad_type(e, "tool_choice.name", "a string");
		(void)tools;
		r->tool_choice = SRV_TOOLS_NAMED;
		return (r->tool_choice_name = strdup(name)) ? 0 : srv_oom(e);
	}
	if (!strcmp(ty, "allowed_tools")) {
		const char *mode = json_string_value(json_object_get(tc, "mode"));
		if (mode && !strcmp(mode, "required"))
			r->tool_choice = SRV_TOOLS_REQUIRED;
		return 0;
	}
	coli_debug("server: responses: tool_choice of type '%s' names a tool not served; as auto", ty);
	return 0;
}

/* text.format through the chat path's response_format (same grammar). */
static int parse_text_format(json_t *root, srv_request *r, srv_error *e)
{
	json_t *text = json_object_get(root, "text");
	if (!text || json_is_null(text))
		return 0;
	if (!json_is_object(text))
		return srv_bad_type(e, "text", "an object");
	json_t *f = json_object_get(text, "format");
	if (!f || json_is_null(f))
		return 0;
	const char *ty = json_string_value(json_object_get(f, "type"));
	if (!json_is_object(f) || !ty)
		return srv_bad_type(e, "text.format", "an object with a 'type'");
	json_t *rf;
	if (!strcmp(ty, "json_schema")) {
		json_t *js = json_object();
		const char *keys[] = { "name", "schema", "strict" };
		for (size_t k = 0; js && k < 3; k++)
			if (json_object_get(f, keys[k]))
				json_object_set(js, keys[k], json_object_get(f, keys[k]));
		rf = js ? json_pack("{s:{s:s, s:o}}", "response_format", "type", "json_schema", "json_schema", js) : NULL;
	} else {
		rf = json_pack("{s:{s:s}}", "response_format", "type", ty);
	}
	if (!rf)
		return srv_oom(e);
	int rc = srv_parse_response_format(rf, r, e);
	json_decref(rf);
	if (rc && !strncmp(e->param, "response_format", 15)) {
		/* name the field as this API spells it */
		char p[64];
		const char *rest = e->param + 15;
		if (!strncmp(rest, ".json_schema", 12))
			rest += 12;
		snprintf(p, sizeof p, "text.format%.50s", rest);
		snprintf(e->param, sizeof e->param, "%s", p);
	}
	return rc;
}

/* reasoning.effort: none/minimal turn thinking off, low..xhigh on. */
static int parse_reasoning(json_t *root, srv_request *r, srv_error *e)
{
	json_t *rs = json_object_get(root, "reasoning");
	if (!rs || json_is_null(rs))
		return 0;
	if (!json_is_object(rs))
		return srv_bad_type(e, "reasoning", "an object");
	json_t *eff = json_object_get(rs, "effort");
	if (!eff || json_is_null(eff))
		return 0;
	const char *v = json_string_value(eff);
	if (!v)
		return srv_bad_type(e, "reasoning.effort", "a string");
	if (!strcmp(v, "none") || !strcmp(v, "minimal"))
		r->enable_thinking = 0;
	else if (!strcmp(v, "low") || !strcmp(v, "medium") || !strcmp(v, "high") || !strcmp(v, "xhigh"))
		r->enable_thinking = 1;
	else
		return srv_fail(e, 400, "invalid_request_error", "invalid_value", "reasoning.effort",
				"'reasoning.effort' must be none, minimal, low, medium, high or xhigh (got '%s')", v);
	return 0;
}

static int parse_scalars(json_t *root, srv_resp *q, srv_error *e)
{
	srv_request *r = &q->req;
	json_t *v = json_object_get(root, "model");
	if (v && !json_is_null(v)) {
		if (!json_is_string(v))
			return srv_bad_type(e, "model", "a string");
		if (!(r->model = strdup(json_string_value(v))))
			return srv_oom(e);
	}
	if (srv_parse_sampling(root, r, 2.0, e))
		return -EINVAL;
	v = json_object_get(root, "max_output_tokens");
	if (v && !json_is_null(v)) {
		if (!json_is_integer(v) || json_integer_value(v) < 1)
			return srv_fail(e, 400, "invalid_request_error", "invalid_value", "max_output_tokens",
					"'max_output_tokens' must be an integer of at least 1");
		r->max_tokens = json_integer_value(v) > INT_MAX ? 0 : (int)json_integer_value(v);
	}
	const char *bools[] = { "store", "parallel_tool_calls", "background" };
	int val[3] = { 1, 1, 0 };
	for (int k = 0; k < 3; k++) {
		v = json_object_get(root, bools[k]);
		if (v && !json_is_null(v) && !json_is_boolean(v))
			return srv_bad_type(e, bools[k], "a boolean");
		if (json_is_boolean(v))
			val[k] = json_is_true(v);
	}
	q->store = val[0];
	r->no_parallel_tools = !val[1];
	if (val[2])
		return srv_fail(e, 400, "invalid_request_error", "unsupported_value", "background",
				"background responses are not supported");
	v = json_object_get(root, "conversation");
	if (v && !json_is_null(v))
		return srv_fail(e, 400, "invalid_request_error", "unsupported_value", "conversation",
				"conversations are not supported; use previous_response_id");
	v = json_object_get(root, "metadata");
	if (v && !json_is_null(v)) {
		const char *k;
		json_t *x;
		if (!json_is_object(v) || json_object_size(v) > 16)
			return srv_bad_type(e, "metadata", "an object of at most 16 string values");
		json_object_foreach(v, k, x) {
			if (!json_is_string(x) || strlen(k) > 64 || json_string_length(x) > 512)
				return srv_bad_type(e, "metadata", "keys of up to 64 and string values of up to 512 characters");
		}
	}
	v = json_object_get(root, "instructions");
	if (v && !json_is_null(v) && !json_is_string(v))
		return srv_bad_type(e, "instructions", "a string");
	return 0;
}

int srv_responses_prev_id(const char *body, size_t len, char *out, size_t cap, srv_error *e)
{
	json_t *root;
	*out = 0;
	if (srv_parse_load(body, len, &root, e))
		return -EINVAL;
	json_t *v = json_object_get(root, "previous_response_id");
	int rc = 0;
	if (v && !json_is_null(v)) {
		if (!json_is_string(v))
			rc = srv_bad_type(e, "previous_response_id", "a string");
		else if (json_string_length(v) >= cap)
			rc = srv_fail(e, 404, "invalid_request_error", "previous_response_not_found",
				      "previous_response_id", "Previous response with id '%.80s' not found.",
				      json_string_value(v));
		else
			snprintf(out, cap, "%s", json_string_value(v));
	}
	json_decref(root);
	return rc;
}

/* The echoed fields, as the response object spells them. */
static json_t *make_echo(json_t *root, const srv_resp *q)
{
	json_t *x = json_object();
	if (!x)
		return NULL;
	const char *copy[] = { "instructions", "tools", "tool_choice", "text", "reasoning", "metadata",
			       "temperature", "top_p", "max_output_tokens", "parallel_tool_calls", "truncation",
			       "user", "previous_response_id", "prompt_cache_key", "safety_identifier",
			       "service_tier", "top_logprobs", "max_tool_calls" };
	for (size_t k = 0; k < sizeof copy / sizeof *copy; k++) {
		json_t *v = json_object_get(root, copy[k]);
		json_object_set(x, copy[k], v ? v : json_null());
	}
	const struct { const char *k; json_t *v; } dflt[] = {
		{ "tools", json_array() }, { "tool_choice", json_string("auto") },
		{ "text", json_pack("{s:{s:s}}", "format", "type", "text") },
		{ "reasoning", json_pack("{s:n, s:n}", "effort", "summary") }, { "metadata", json_object() },
		{ "parallel_tool_calls", json_true() }, { "truncation", json_string("disabled") },
		{ "service_tier", json_string("default") }, { "top_logprobs", json_integer(0) },
	};
	for (size_t k = 0; k < sizeof dflt / sizeof *dflt; k++) {
		if (json_is_null(json_object_get(x, dflt[k].k)))
			json_object_set(x, dflt[k].k, dflt[k].v);
		json_decref(dflt[k].v);
	}
	/* numbers as the API writes them (0 is 0.0) */
	json_object_set_new(x, "temperature", json_real(q->req.temperature));
	json_object_set_new(x, "top_p", json_real(q->req.top_p));
	json_object_set_new(x, "store", json_boolean(q->store));
	return x;
}

int srv_responses_parse(const char *body, size_t len, const json_t *prev, srv_resp *q, srv_error *e)
{
	static const char *const known[] = {
		"model", "input", "instructions", "tools", "tool_choice", "parallel_tool_calls",
		"max_output_tokens", "temperature", "top_p", "seed", "stream", "text", "reasoning",
		"metadata", "store", "previous_response_id", "background", "conversation", "draft", NULL,
	};
	json_t *root, *tools = NULL;
	int cap = 0, rc = -EINVAL, none = 0;
	srv_request *r = &q->req;
	memset(r, 0, sizeof *r);
	r->api = SRV_API_RESPONSES;
	r->enable_thinking = -1;
	r->temperature = r->top_p = 1.0;
	if (srv_parse_load(body, len, &root, e))
		return -EINVAL;
	if (parse_scalars(root, q, e) || parse_text_format(root, r, e) || parse_reasoning(root, r, e) ||
	    parse_tools(root, &tools, e) || parse_tool_choice(root, tools, r, &none, e))
		goto out;
	if (!none && tools && json_array_size(tools) && !(r->tools_json = json_dumps(tools, JSON_COMPACT))) {
		srv_oom(e);
		goto out;
	}
	r->one_call = r->no_parallel_tools;
	if (!none && srv_tool_choice_apply(r, e))
		goto out;
	/* the conversation: the stored one, then this input */
	json_t *prior = prev ? json_object_get(prev, "conversation") : NULL;
	q->items = json_is_array(prior) ? json_deep_copy(prior) : json_array();
	json_t *in = json_object_get(root, "input");
	if (json_is_string(in)) {
		json_array_append_new(q->items, json_pack("{s:s, s:s, s:O}", "type", "message", "role", "user",
							  "content", in));
	} else if (json_is_array(in)) {
		json_array_extend(q->items, in);
	} else if (in && !json_is_null(in)) {
		srv_bad_type(e, "input", "a string or an array of input items");
		goto out;
	}
	if (!q->items || (!json_array_size(q->items) && !json_is_string(json_object_get(root, "instructions")))) {
		srv_fail(e, 400, "invalid_request_error", "missing_required_parameter", "input",
			 "'input' is required (a string or an array of input items)");
		goto out;
	}
	json_t *ins = json_object_get(root, "instructions");
	if (json_is_string(ins)) {
		char *t = strdup(json_string_value(ins));
		if (!t || push_msg(r, &cap, "system", t, NULL, NULL, NULL, e))
			goto out;
	}
	size_t base = prior ? json_array_size(prior) : 0, i;
	json_t *it;
	json_array_foreach(q->items, i, it) {
		/* errors name the index in this request's input */
		if (add_item(r, &cap, q->items, it, i >= base ? i - base : i, e))
			goto out;
	}
	if (!r->n_msgs) {
		srv_fail(e, 400, "invalid_request_error", "invalid_value", "input", "the input holds no message");
		goto out;
	}
	if (!(q->echo = make_echo(root, q))) {
		srv_oom(e);
		goto out;
	}
	srv_log_ignored(root, known);
	rc = 0;
out:
	json_decref(tools);
	json_decref(root);
	return rc;
}
