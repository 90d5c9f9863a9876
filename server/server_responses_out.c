/* server_responses_out.c - Responses API objects (pure): the response,
 * its output items (reasoning, message with output_text, function_call)
 * and usage, in the wire format of OpenAI's API reference. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "server_responses.h"

void srv_resp_ids_make(srv_resp_ids *ids)
{
	srv_make_id(ids->rs, sizeof ids->rs, "rs_");
	srv_make_id(ids->msg, sizeof ids->msg, "msg_");
}

void srv_resp_fc_id(char *out, size_t cap, const char *call_id)
{
	snprintf(out, cap, "fc_%s", strncmp(call_id, "call_", 5) ? call_id : call_id + 5);
}

const char *srv_resp_status(const srv_result *r)
{
	switch (r->finish) {
	case SRV_FINISH_LENGTH: return "incomplete";
	case SRV_FINISH_ERROR:
	case SRV_FINISH_SHUTDOWN:
	case SRV_FINISH_CANCELLED: return "failed";
	default: return "completed";
	}
}

json_t *srv_resp_output(const srv_resp_ids *ids, const srv_result *r)
{
	json_t *out = json_array();
	const char *st = r->finish == SRV_FINISH_LENGTH ? "incomplete" : "completed";
	if (!out)
		return NULL;
	if (r->reasoning_len) {
		/* the thinking ended where an answer or a call began */
		const char *rst = r->len || r->n_calls ? "completed" : st;
		json_t *rs = json_pack("{s:s, s:s, s:[], s:[{s:s, s:s%}], s:s}", "type", "reasoning", "id", ids->rs,
				       "summary", "content", "type", "reasoning_text", "text", r->reasoning,
				       r->reasoning_len, "status", rst);
		json_array_append_new(out, rs);
	}
	/* a message unless the answer is only calls */
	if (r->len || !r->n_calls) {
		json_t *msg = json_pack("{s:s, s:s, s:s, s:s, s:[{s:s, s:s%, s:[], s:[]}]}", "type", "message", "id",
					ids->msg, "status", st, "role", "assistant", "content", "type", "output_text",
					"text", r->text ? r->text : "", r->len, "annotations", "logprobs");
		json_array_append_new(out, msg);
	}
	for (int i = 0; i < r->n_calls; i++) {
		char id[48];
		srv_resp_fc_id(id, sizeof id, r->calls[i].id);
		json_t *fc = json_pack("{s:s, s:s, s:s, s:s, s:s, s:s}", "type", "function_call", "id", id, "call_id",
				       r->calls[i].id, "name", r->calls[i].name ? r->calls[i].name : "", "arguments",
				       r->calls[i].arguments ? r->calls[i].arguments : "{}", "status", "completed");
		json_array_append_new(out, fc);
	}
	return out;
}

json_t *srv_resp_usage(const srv_usage *u)
{
	return json_pack("{s:i, s:{s:i}, s:i, s:{s:i}, s:i}", "input_tokens", u->prompt, "input_tokens_details",
			 "cached_tokens", u->cached, "output_tokens", u->completion, "output_tokens_details",
			 "reasoning_tokens", u->reasoning, "total_tokens", u->prompt + u->completion);
}

json_t *srv_resp_object(const srv_resp *q, const char *status, json_t *output, const srv_result *r)
{
	json_t *o = json_pack("{s:s, s:s, s:I, s:s, s:b, s:n, s:n, s:s}", "id", q->id, "object", "response",
			      "created_at", (json_int_t)q->created, "status", status, "background", 0, "error",
			      "incomplete_details", "model", q->model);
	if (!o)
		return NULL;
	json_object_update(o, q->echo);
	json_object_set_new(o, "output", output ? output : json_array());
	if (r && r->finish == SRV_FINISH_LENGTH)
		json_object_set_new(o, "incomplete_details", json_pack("{s:s}", "reason", "max_output_tokens"));
	if (r && !strcmp(status, "failed"))
		json_object_set_new(o, "error", json_pack("{s:s, s:s}", "code", "server_error", "message",
							  r->finish == SRV_FINISH_SHUTDOWN
								  ? "the server is shutting down; the request was stopped"
								  : "generation failed"));
	json_object_set_new(o, "usage", r ? srv_resp_usage(&r->usage) : json_null());
	if (r && !strcmp(status, "completed"))
		json_object_set_new(o, "completed_at", json_integer((json_int_t)time(NULL)));
	else
		json_object_set_new(o, "completed_at", json_null());
	return o;
}

char *srv_resp_error_json(const srv_error *e)
{
	return srv_openai_error_json(e);
}
