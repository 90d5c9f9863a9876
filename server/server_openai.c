/* server_openai.c - native results -> OpenAI JSON bodies and SSE chunks
 * (pure functions).
 *
 * Streaming shape (what the official SDKs parse): every chunk carries the
 * same id/created/model; the first chat chunk's delta is
 * {"role":"assistant","content":""}; finish_reason is null until the last
 * content chunk; with stream_options.include_usage a final chunk has
 * "choices": [] and the usage; then "data: [DONE]". */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "server_internal.h"

static const char *srv_finish_openai(int finish)
{
	switch (finish) {
	case SRV_FINISH_LENGTH: return "length";
	case SRV_FINISH_TOOL: return "tool_calls";
	default: return "stop";
	}
}

static json_t *o_usage(const srv_usage *u)
{
	return json_pack("{s:i, s:i, s:i, s:{s:i}, s:{s:i}}", "prompt_tokens", u->prompt,
			 "completion_tokens", u->completion, "total_tokens",
			 u->prompt + u->completion, "prompt_tokens_details", "cached_tokens",
			 u->cached, "completion_tokens_details", "reasoning_tokens", u->reasoning);
}

static json_t *o_tool_calls(const srv_result *r, int with_index)
{
	json_t *a = json_array();
	for (int i = 0; i < r->n_calls; i++) {
		json_t *c = json_pack("{s:s, s:s, s:{s:s, s:s}}", "id", r->calls[i].id, "type",
				      "function", "function", "name", r->calls[i].name,
				      "arguments", r->calls[i].arguments ? r->calls[i].arguments : "{}");
		if (with_index)
			json_object_set_new(c, "index", json_integer(i));
		json_array_append_new(a, c);
	}
	return a;
}

static char *dump(json_t *j)
{
	char *s = j ? json_dumps(j, JSON_COMPACT) : NULL;
	json_decref(j);
	return s;
}

char *srv_openai_response(const srv_stream_ctx *c, const srv_result *r)
{
	json_t *choice;
	const char *text = r->text ? r->text : "";
	if (c->chat) {
		json_t *msg = json_pack("{s:s, s:s%}", "role", "assistant", "content", text, r->len);
		if (r->reasoning)
			json_object_set_new(msg, "reasoning_content", json_stringn(r->reasoning, r->reasoning_len));
		if (r->n_calls) {
			if (!r->len)
				json_object_set_new(msg, "content", json_null());
			json_object_set_new(msg, "tool_calls", o_tool_calls(r, 0));
		}
		choice = json_pack("{s:i, s:o, s:n, s:s}", "index", 0, "message", msg, "logprobs",
				   "finish_reason", srv_finish_openai(r->finish));
	} else {
		choice = json_pack("{s:i, s:s%, s:n, s:s}", "index", 0, "text", text, r->len,
				   "logprobs", "finish_reason", srv_finish_openai(r->finish));
	}
	if (r->want_lp)
		json_object_set_new(choice, "logprobs", srv_logprobs_json(r, c->chat, 0, 0));
	return dump(json_pack("{s:s, s:s, s:I, s:s, s:[o], s:o, s:n}", "id", c->id, "object",
			      c->chat ? "chat.completion" : "text_completion", "created",
			      (json_int_t)c->created, "model", c->model, "choices", choice, "usage",
			      o_usage(&r->usage), "system_fingerprint"));
}

static int o_chunk(util_buf *b, const srv_stream_ctx *c, json_t *choices, json_t *usage)
{
	json_t *j = json_pack("{s:s, s:s, s:I, s:s, s:o}", "id", c->id, "object",
			      c->chat ? "chat.completion.chunk" : "text_completion", "created",
			      (json_int_t)c->created, "model", c->model, "choices", choices);
	if (j && usage)
		json_object_set_new(j, "usage", usage);
	char *s = dump(j);
	if (!s)
		return -ENOMEM;
	int rc = util_buf_printf(b, "data: %s\n\n", s);
	free(s);
	return rc;
}

static json_t *o_choice(const srv_stream_ctx *c, json_t *delta_or_text, const char *finish)
{
	json_t *ch = json_pack("{s:i, s:o, s:n}", "index", 0, c->chat ? "delta" : "text",
			       delta_or_text, "logprobs");
	json_object_set_new(ch, "finish_reason", finish ? json_string(finish) : json_null());
	return json_pack("[o]", ch);
}

int srv_openai_chunk_role(util_buf *b, const srv_stream_ctx *c)
{
	if (!c->chat)
		return 0;
	return o_chunk(b, c, o_choice(c, json_pack("{s:s, s:s}", "role", "assistant", "content", ""),
				      NULL), NULL);
}

int srv_openai_chunk_text(util_buf *b, const srv_stream_ctx *c, const char *text, size_t len)
{
	json_t *d = c->chat ? json_pack("{s:s%}", "content", text, len) : json_stringn(text, len);
	return o_chunk(b, c, o_choice(c, d, NULL), NULL);
}

int srv_openai_chunk_reasoning(util_buf *b, const srv_stream_ctx *c, const char *text, size_t len)
{
	return o_chunk(b, c, o_choice(c, json_pack("{s:s%}", "reasoning_content", text, len), NULL), NULL);
}

int srv_openai_chunk_text_lp(util_buf *b, const srv_stream_ctx *c, const char *text, size_t len,
			     const srv_result *r, int from)
{
	json_t *d = c->chat ? json_pack("{s:s%}", "content", text, len) : json_stringn(text, len);
	json_t *ch = o_choice(c, d, NULL);
	/* completions: offsets continue from the entries already sent */
	size_t off = 0;
	for (int i = 0; !c->chat && i < from; i++) {
		size_t n = 0;
		const char *t = coli_tokenizer_token_text(r->tok, r->lp_tok[i]);
		if (!coli_tokenizer_token_bytes(r->tok, r->lp_tok[i], &n))
			n = t ? strlen(t) : 0;
		off += n;
	}
	json_object_set_new(json_array_get(ch, 0), "logprobs", srv_logprobs_json(r, c->chat, from, off));
	return o_chunk(b, c, ch, NULL);
}

int srv_openai_chunk_finish(util_buf *b, const srv_stream_ctx *c, const srv_result *r)
{
	json_t *d;
	if (c->chat) {
		d = json_object();
		if (r->n_calls)
			json_object_set_new(d, "tool_calls", o_tool_calls(r, 1));
	} else {
		d = json_string("");
	}
	return o_chunk(b, c, o_choice(c, d, srv_finish_openai(r->finish)), NULL);
}

int srv_openai_chunk_tool_start(util_buf *b, const srv_stream_ctx *c, int i, const srv_tc_call *call)
{
	json_t *d = json_pack("{s:[{s:i, s:s, s:s, s:{s:s, s:s}}]}", "tool_calls", "index", i, "id", call->id,
			      "type", "function", "function", "name", call->name, "arguments", "");
	return o_chunk(b, c, o_choice(c, d, NULL), NULL);
}

int srv_openai_chunk_tool_args(util_buf *b, const srv_stream_ctx *c, int i, const char *s, size_t n)
{
	json_t *d = json_pack("{s:[{s:i, s:{s:s%}}]}", "tool_calls", "index", i, "function", "arguments", s, n);
	return o_chunk(b, c, o_choice(c, d, NULL), NULL);
}

int srv_openai_chunk_usage(util_buf *b, const srv_stream_ctx *c, const srv_usage *u)
{
	return o_chunk(b, c, json_array(), o_usage(u));
}

static json_t *o_error(const char *type, const char *code, const char *param, const char *msg)
{
	return json_pack("{s:{s:s, s:s, s:o, s:o}}", "error", "message", msg, "type", type,
			 "param", param && *param ? json_string(param) : json_null(), "code",
			 code && *code ? json_string(code) : json_null());
}

int srv_openai_chunk_error(util_buf *b, const char *type, const char *message)
{
	char *s = dump(o_error(type, NULL, NULL, message));
	if (!s)
		return -ENOMEM;
	int rc = util_buf_printf(b, "data: %s\n\n", s);
	free(s);
	return rc;
}

int srv_sse_done(util_buf *b)
{
	return util_buf_puts(b, "data: [DONE]\n\n");
}

char *srv_openai_error_json(const srv_error *e)
{
	return dump(o_error(e->type[0] ? e->type : "invalid_request_error", e->code, e->param,
			    e->message));
}

char *srv_openai_models_json(const char *const *ids, int n, long long created)
{
	/* OpenAI's list, with the fields of Anthropic's (type, display_name,
	 * created_at, has_more, first_id, last_id) so both SDKs read it */
	char when[32];
	time_t t = (time_t)created;
	struct tm tm;
	gmtime_r(&t, &tm);
	strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &tm);
	json_t *data = json_array();
	for (int i = 0; i < n; i++)
		json_array_append_new(data, json_pack("{s:s, s:s, s:I, s:s, s:s, s:s, s:s}", "id", ids[i], "object",
						      "model", "created", (json_int_t)created, "owned_by", "colitop",
						      "type", "model", "display_name", ids[i], "created_at", when));
	return dump(json_pack("{s:s, s:o, s:b, s:s, s:s}", "object", "list", "data", data, "has_more", 0,
			      "first_id", n ? ids[0] : "", "last_id", n ? ids[n - 1] : ""));
}
