/* server_anthropic.c - the Anthropic Messages API: request parsing and
 * response/event formatting (pure functions).
 *
 * Anthropic blocks are mapped onto the chat template's message list the way
 * OpenAI-style tools would be: tool_use blocks become the assistant's
 * tool_calls, each tool_result block becomes a "tool" message. Usage follows
 * Anthropic's split: input_tokens counts the prompt tokens that were not read
 * from the KV cache, cache_read_input_tokens the ones that were. */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "coli_log.h"
#include "server_internal.h"

static int a_bad(srv_error *e, const char *param, const char *want)
{
	return srv_fail(e, 400, "invalid_request_error", "invalid_type", param, "%s: must be %s",
			param, want);
}

/* Text of a string or an array of text blocks (other block kinds refused). */
static int a_text(json_t *c, const char *param, char **out, srv_error *e)
{
	*out = NULL;
	if (json_is_string(c)) {
		*out = strdup(json_string_value(c));
		return 0;
	}
	if (!json_is_array(c))
		return a_bad(e, param, "a string or an array of text blocks");
	util_buf b = { 0 };
	size_t i;
	json_t *blk;
	json_array_foreach(c, i, blk) {
		json_t *ty = json_object_get(blk, "type");
		json_t *tx = json_object_get(blk, "text");
		if (!json_is_string(ty) || strcmp(json_string_value(ty), "text") || !json_is_string(tx)) {
			util_buf_free(&b);
			return a_bad(e, param, "text blocks");
		}
		if (b.len)
			util_buf_puts(&b, "\n");
		util_buf_add(&b, json_string_value(tx), json_string_length(tx));
	}
	*out = b.p ? b.p : strdup("");
	return 0;
}

static coli_chat_msg *push_msg(srv_request *r, const char *role)
{
	coli_chat_msg *m = &r->msgs[r->n_msgs++];
	m->role = strdup(role);
	return m;
}

/* One Anthropic message may expand to several template messages. */
static int a_message(json_t *m, size_t idx, srv_request *r, srv_error *e)
{
	char param[48];
	snprintf(param, sizeof param, "messages.%zu", idx);
	json_t *role = json_object_get(m, "role");
	if (!json_is_object(m) || !json_is_string(role))
		return a_bad(e, param, "an object with a string 'role'");
	const char *rl = json_string_value(role);
	json_t *c = json_object_get(m, "content");
	if (!strcmp(rl, "system")) {
		/* Claude Code sends one for models it does not know: system text
		 * where it stands, rendered where the template puts system text */
		char *st;
		if (a_text(c, param, &st, e))
			return -EINVAL;
		push_msg(r, "system")->content = st;
		return 0;
	}
	if (strcmp(rl, "user") && strcmp(rl, "assistant"))
		return srv_fail(e, 400, "invalid_request_error", "invalid_value", param,
				"%s.role: must be 'user', 'assistant' or 'system'", param);
	if (json_is_string(c)) {
		push_msg(r, rl)->content = strdup(json_string_value(c));
		return 0;
	}
	if (!json_is_array(c))
		return srv_fail(e, 400, "invalid_request_error", "invalid_type", param,
				"%s.content: must be a string or an array of content blocks", param);
	util_buf text = { 0 }, think = { 0 };
	json_t *calls = json_array();
	int rc = 0;
	size_t i;
	json_t *blk;
	json_array_foreach(c, i, blk) {
		json_t *ty = json_object_get(blk, "type");
		if (!json_is_object(blk) || !json_is_string(ty)) {
			rc = a_bad(e, param, "content blocks with a 'type'");
			goto out;
		}
		const char *t = json_string_value(ty);
		if (!strcmp(t, "text")) {
			json_t *tx = json_object_get(blk, "text");
			if (!json_is_string(tx)) {
				rc = a_bad(e, param, "text blocks with a string 'text'");
				goto out;
			}
			if (text.len)
				util_buf_puts(&text, "\n");
			util_buf_add(&text, json_string_value(tx), json_string_length(tx));
		} else if (!strcmp(t, "tool_use")) {
			json_t *id = json_object_get(blk, "id"), *name = json_object_get(blk, "name");
			json_t *input = json_object_get(blk, "input");
			if (!json_is_string(id) || !json_is_string(name)) {
				rc = a_bad(e, param, "tool_use blocks with string 'id' and 'name'");
				goto out;
			}
			/* a missing input is an empty object; no temporary json_t to leak */
			char *args = input ? json_dumps(input, JSON_COMPACT) : strdup("{}");
			json_array_append_new(calls, json_pack("{s:O, s:s, s:{s:O, s:s}}", "id", id,
							       "type", "function", "function", "name", name,
							       "arguments", args ? args : "{}"));
			free(args);
		} else if (!strcmp(t, "tool_result")) {
			json_t *id = json_object_get(blk, "tool_use_id");
			json_t *rc_content = json_object_get(blk, "content");
			char *res = NULL;
			if (!json_is_string(id)) {
				rc = a_bad(e, param, "tool_result blocks with a string 'tool_use_id'");
				goto out;
			}
			if (rc_content && !json_is_null(rc_content)) {
				if (a_text(rc_content, "tool_result.content", &res, e)) {
					rc = -EINVAL;
					goto out;
				}
			}
			coli_chat_msg *tm = push_msg(r, "tool");
			tm->content = res ? res : strdup("");
			tm->tool_call_id = strdup(json_string_value(id));
		} else if (!strcmp(t, "thinking")) {
			/* back into the prompt as the template renders reasoning */
			json_t *th = json_object_get(blk, "thinking");
			if (json_is_string(th))
				util_buf_add(&think, json_string_value(th), json_string_length(th));
		} else if (!strcmp(t, "redacted_thinking")) {
			continue;
		} else {
			rc = srv_fail(e, 400, "invalid_request_error", "unsupported_content", param,
				      "%s: content block type '%s' is not supported", param, t);
			goto out;
		}
	}
	if (text.len || json_array_size(calls) || !strcmp(rl, "assistant")) {
		coli_chat_msg *mm = push_msg(r, rl);
		mm->content = strdup(text.p ? text.p : "");
		/* back into the prompt as the template renders reasoning */
		if (think.len)
			mm->reasoning_content = strndup(think.p, think.len);
		if (json_array_size(calls))
			mm->tool_calls_json = json_dumps(calls, JSON_COMPACT);
	}
out:
	util_buf_free(&text);
	util_buf_free(&think);
	json_decref(calls);
	return rc;
}

/* tool_choice {"type": "auto"|"any"|"tool"|"none", "name",
 * "disable_parallel_tool_use"} -> the request's tool_choice fields. */
static int a_tool_choice(json_t *root, srv_request *r, srv_error *e)
{
	json_t *choice = json_object_get(root, "tool_choice");
	if (!choice || json_is_null(choice))
		return 0;
	json_t *ct = json_object_get(choice, "type");
	if (!json_is_object(choice) || !json_is_string(ct))
		return a_bad(e, "tool_choice", "an object with a 'type'");
	const char *t = json_string_value(ct);
	json_t *dp = json_object_get(choice, "disable_parallel_tool_use");
	r->one_call = json_is_true(dp);
	if (!strcmp(t, "auto"))
		r->tool_choice = SRV_TOOLS_AUTO;
	else if (!strcmp(t, "none"))
		r->tool_choice = SRV_TOOLS_NONE;
	else if (!strcmp(t, "any"))
		r->tool_choice = SRV_TOOLS_REQUIRED;
	else if (!strcmp(t, "tool")) {
		json_t *name = json_object_get(choice, "name");
		if (!json_is_string(name))
			return a_bad(e, "tool_choice.name", "the name of a tool");
		r->tool_choice = SRV_TOOLS_NAMED;
		r->tool_choice_name = strdup(json_string_value(name));
	} else
		return srv_fail(e, 400, "invalid_request_error", "invalid_value", "tool_choice.type",
				"tool_choice.type: must be 'auto', 'any', 'tool' or 'none'");
	return 0;
}

/* Anthropic tool definitions -> OpenAI-style tools for the chat template. */
static int a_tools(json_t *root, srv_request *r, srv_error *e)
{
	json_t *tools = json_object_get(root, "tools");
	if (a_tool_choice(root, r, e))
		return -EINVAL;
	if (!tools || json_is_null(tools))
		return r->tool_choice == SRV_TOOLS_AUTO || r->tool_choice == SRV_TOOLS_NONE
		       ? 0 : srv_tool_choice_apply(r, e);
	if (!json_is_array(tools))
		return a_bad(e, "tools", "an array");
	json_t *out = json_array();
	size_t i;
	json_t *t;
	json_array_foreach(tools, i, t) {
		json_t *name = json_object_get(t, "name");
		json_t *schema = json_object_get(t, "input_schema");
		if (!json_is_string(name)) {
			json_decref(out);
			return a_bad(e, "tools", "tool definitions with a string 'name'");
		}
		if (!schema) {
			coli_debug("server: ignoring server tool '%s'", json_string_value(name));
			continue;
		}
		json_t *fn = json_pack("{s:O, s:O}", "name", name, "parameters", schema);
		json_t *desc = json_object_get(t, "description");
		if (json_is_string(desc))
			json_object_set(fn, "description", desc);
		json_array_append_new(out, json_pack("{s:s, s:o}", "type", "function", "function", fn));
	}
	if (json_array_size(out))
		r->tools_json = json_dumps(out, JSON_COMPACT);
	json_decref(out);
	return srv_tool_choice_apply(r, e);
}

int srv_parse_messages(const char *body, size_t len, int count_only, srv_request *r, srv_error *e)
{
	json_t *root;
	memset(r, 0, sizeof *r);
	r->api = count_only ? SRV_API_COUNT_TOKENS : SRV_API_MESSAGES;
	r->temperature = 1.0;
	r->top_p = 1.0;
	if (srv_parse_load(body, len, &root, e))
		return -EINVAL;
	int rc = -EINVAL;
	json_t *model = json_object_get(root, "model");
	if (!json_is_string(model)) {
		srv_fail(e, 400, "invalid_request_error", NULL, "model", "model: Field required (string)");
		goto out;
	}
	r->model = strdup(json_string_value(model));
	json_t *mt = json_object_get(root, "max_tokens");
	if (!count_only || mt) {
		if (!json_is_integer(mt) || json_integer_value(mt) < 1) {
			srv_fail(e, 400, "invalid_request_error", NULL, "max_tokens",
				 "max_tokens: Field required (integer >= 1)");
			goto out;
		}
		r->max_tokens = json_integer_value(mt) > INT_MAX ? 0 : (int)json_integer_value(mt);
	}
	if (srv_parse_sampling(root, r, 1.0, e) ||
	    srv_parse_stop(json_object_get(root, "stop_sequences"), "stop_sequences", r, e) ||
	    a_tools(root, r, e))
		goto out;
	json_t *msgs = json_object_get(root, "messages");
	if (!json_is_array(msgs) || json_array_size(msgs) == 0) {
		srv_fail(e, 400, "invalid_request_error", NULL, "messages",
			 "messages: Field required (non-empty array)");
		goto out;
	}
	/* worst case: system + per message one text message + one per block */
	size_t cap = 2;
	size_t i;
	json_t *m;
	json_array_foreach(msgs, i, m) {
		json_t *c = json_object_get(m, "content");
		cap += 1 + (json_is_array(c) ? json_array_size(c) : 0);
	}
	r->msgs = calloc(cap, sizeof *r->msgs);
	if (!r->msgs) {
		srv_fail(e, 500, "api_error", NULL, NULL, "out of memory");
		goto out;
	}
	json_t *sys = json_object_get(root, "system");
	if (sys && !json_is_null(sys)) {
		char *st;
		if (a_text(sys, "system", &st, e))
			goto out;
		push_msg(r, "system")->content = st;
	}
	json_array_foreach(msgs, i, m) {
		if (a_message(m, i, r, e))
			goto out;
	}
	/* thinking: {"type":"enabled", "budget_tokens"} asks for thinking blocks;
	 * otherwise the template is asked not to think */
	json_t *th = json_object_get(root, "thinking");
	r->enable_thinking = 0;
	if (th && !json_is_null(th)) {
		json_t *tt = json_object_get(th, "type");
		if (!json_is_object(th) || !json_is_string(tt) ||
		    (strcmp(json_string_value(tt), "enabled") && strcmp(json_string_value(tt), "disabled") &&
		     strcmp(json_string_value(tt), "adaptive"))) {
			a_bad(e, "thinking", "{\"type\":\"enabled\"|\"disabled\", ...}");
			goto out;
		}
		r->show_thinking = r->enable_thinking = strcmp(json_string_value(tt), "disabled") != 0;
	}
	static const char *const known[] = {
		"model", "max_tokens", "messages", "system", "stop_sequences", "temperature",
		"top_p", "stream", "tools", "tool_choice", "thinking", "draft", NULL,
	};
	srv_log_ignored(root, known);
	rc = 0;
out:
	json_decref(root);
	return rc;
}

/* ---- formatting ---- */

static const char *srv_finish_anthropic(int finish)
{
	switch (finish) {
	case SRV_FINISH_LENGTH: return "max_tokens";
	case SRV_FINISH_STOP_SEQ: return "stop_sequence";
	case SRV_FINISH_TOOL: return "tool_use";
	default: return "end_turn";
	}
}

static json_t *a_usage(const srv_usage *u, int with_output)
{
	int cached = u->cached > u->prompt ? u->prompt : u->cached;
	json_t *j = json_pack("{s:i, s:i, s:i}", "input_tokens", u->prompt - cached,
			      "cache_creation_input_tokens", 0, "cache_read_input_tokens", cached);
	if (with_output)
		json_object_set_new(j, "output_tokens", json_integer(u->completion));
	return j;
}

static json_t *tool_input(const srv_tool_call *c)
{
	json_t *in = json_loads(c->arguments ? c->arguments : "{}", JSON_ALLOW_NUL, NULL);
	if (!json_is_object(in)) {
		json_decref(in);
		in = json_object();
	}
	return in;
}

char *srv_anthropic_response(const srv_stream_ctx *c, const srv_result *r)
{
	json_t *content = json_array();
	if (r->reasoning && r->show_thinking)
		json_array_append_new(content, json_pack("{s:s, s:s%, s:s}", "type", "thinking", "thinking",
							 r->reasoning, r->reasoning_len, "signature", ""));
	if (r->len || !r->n_calls)
		json_array_append_new(content, json_pack("{s:s, s:s%}", "type", "text", "text",
							 r->text ? r->text : "", r->len));
	for (int i = 0; i < r->n_calls; i++)
		json_array_append_new(content, json_pack("{s:s, s:s, s:s, s:o}", "type", "tool_use",
							 "id", r->calls[i].id, "name",
							 r->calls[i].name, "input",
							 tool_input(&r->calls[i])));
	json_t *j = json_pack("{s:s, s:s, s:s, s:s, s:o, s:s, s:o, s:o}", "id", c->id, "type",
			      "message", "role", "assistant", "model", c->model, "content", content,
			      "stop_reason", srv_finish_anthropic(r->finish), "stop_sequence",
			      r->stop_seq ? json_string(r->stop_seq) : json_null(), "usage",
			      a_usage(&r->usage, 1));
	char *s = j ? json_dumps(j, JSON_COMPACT) : NULL;
	json_decref(j);
	return s;
}

static int a_event(util_buf *b, const char *name, json_t *data)
{
	if (!data)
		return -ENOMEM;
	char *s = json_dumps(data, JSON_COMPACT);
	json_decref(data);
	if (!s)
		return -ENOMEM;
	int rc = util_buf_printf(b, "event: %s\ndata: %s\n\n", name, s);
	free(s);
	return rc;
}

int srv_anthropic_ev_start(util_buf *b, const srv_stream_ctx *c, const srv_usage *u)
{
	json_t *msg = json_pack("{s:s, s:s, s:s, s:s, s:[], s:n, s:n, s:o}", "id", c->id, "type",
				"message", "role", "assistant", "model", c->model, "content",
				"stop_reason", "stop_sequence", "usage", a_usage(u, 1));
	return a_event(b, "message_start", json_pack("{s:s, s:o}", "type", "message_start",
						     "message", msg));
}

int srv_anthropic_ev_block_start_text(util_buf *b, int index)
{
	return a_event(b, "content_block_start",
		       json_pack("{s:s, s:i, s:{s:s, s:s}}", "type", "content_block_start", "index",
				 index, "content_block", "type", "text", "text", ""));
}

int srv_anthropic_ev_block_start_thinking(util_buf *b, int index)
{
	return a_event(b, "content_block_start",
		       json_pack("{s:s, s:i, s:{s:s, s:s, s:s}}", "type", "content_block_start", "index", index,
				 "content_block", "type", "thinking", "thinking", "", "signature", ""));
}

int srv_anthropic_ev_thinking(util_buf *b, int index, const char *text, size_t len)
{
	return a_event(b, "content_block_delta",
		       json_pack("{s:s, s:i, s:{s:s, s:s%}}", "type", "content_block_delta", "index", index,
				 "delta", "type", "thinking_delta", "thinking", text, len));
}

int srv_anthropic_ev_signature(util_buf *b, int index)
{
	/* local thinking is not signed; the empty signature keeps the block's
	 * shape for clients that send it back */
	return a_event(b, "content_block_delta",
		       json_pack("{s:s, s:i, s:{s:s, s:s}}", "type", "content_block_delta", "index", index,
				 "delta", "type", "signature_delta", "signature", ""));
}

int srv_anthropic_ev_ping(util_buf *b)
{
	return a_event(b, "ping", json_pack("{s:s}", "type", "ping"));
}

int srv_anthropic_ev_text(util_buf *b, int index, const char *text, size_t len)
{
	return a_event(b, "content_block_delta",
		       json_pack("{s:s, s:i, s:{s:s, s:s%}}", "type", "content_block_delta", "index",
				 index, "delta", "type", "text_delta", "text", text, len));
}

int srv_anthropic_ev_block_stop(util_buf *b, int index)
{
	return a_event(b, "content_block_stop",
		       json_pack("{s:s, s:i}", "type", "content_block_stop", "index", index));
}

int srv_anthropic_ev_tool_use(util_buf *b, int index, const srv_tool_call *call)
{
	int rc = a_event(b, "content_block_start",
			 json_pack("{s:s, s:i, s:{s:s, s:s, s:s, s:{}}}", "type",
				   "content_block_start", "index", index, "content_block", "type",
				   "tool_use", "id", call->id, "name", call->name, "input"));
	json_t *in = tool_input(call);
	char *args = json_dumps(in, JSON_COMPACT);
	json_decref(in);
	rc |= a_event(b, "content_block_delta",
		      json_pack("{s:s, s:i, s:{s:s, s:s}}", "type", "content_block_delta", "index",
				index, "delta", "type", "input_json_delta", "partial_json",
				args ? args : "{}"));
	free(args);
	rc |= srv_anthropic_ev_block_stop(b, index);
	return rc;
}

int srv_anthropic_ev_tool_start(util_buf *b, int index, const char *id, const char *name)
{
	return a_event(b, "content_block_start",
		       json_pack("{s:s, s:i, s:{s:s, s:s, s:s, s:{}}}", "type", "content_block_start",
				 "index", index, "content_block", "type", "tool_use", "id", id, "name",
				 name, "input"));
}

int srv_anthropic_ev_tool_delta(util_buf *b, int index, const char *s, size_t n)
{
	return a_event(b, "content_block_delta",
		       json_pack("{s:s, s:i, s:{s:s, s:s%}}", "type", "content_block_delta", "index",
				 index, "delta", "type", "input_json_delta", "partial_json", s, n));
}

int srv_anthropic_ev_delta(util_buf *b, const srv_result *r)
{
	/* Full usage here: only now is the cached prefix known (message_start
	 * reported 0 cached); the SDKs merge these fields into the message. */
	return a_event(b, "message_delta",
		       json_pack("{s:s, s:{s:s, s:o}, s:o}", "type", "message_delta", "delta",
				 "stop_reason", srv_finish_anthropic(r->finish), "stop_sequence",
				 r->stop_seq ? json_string(r->stop_seq) : json_null(), "usage",
				 a_usage(&r->usage, 1)));
}

int srv_anthropic_ev_stop(util_buf *b)
{
	return a_event(b, "message_stop", json_pack("{s:s}", "type", "message_stop"));
}

int srv_anthropic_ev_error(util_buf *b, const char *type, const char *message)
{
	return a_event(b, "error", json_pack("{s:s, s:{s:s, s:s}}", "type", "error", "error",
					     "type", type, "message", message));
}

char *srv_anthropic_error_json(const srv_error *e)
{
	/* Anthropic's error types, from the HTTP status. */
	const char *type = "invalid_request_error";
	switch (e->status) {
	case 401: type = "authentication_error"; break;
	case 403: type = "permission_error"; break;
	case 404: type = "not_found_error"; break;
	case 413: type = "request_too_large"; break;
	case 429: type = "rate_limit_error"; break;
	case 503: type = "overloaded_error"; break;
	default:
		if (e->status >= 500)
			type = "api_error";
	}
	json_t *j = json_pack("{s:s, s:{s:s, s:s}}", "type", "error", "error", "type", type,
			      "message", e->message);
	char *s = j ? json_dumps(j, JSON_COMPACT) : NULL;
	json_decref(j);
	return s;
}
