/* server_tool_choice.c - tool_choice, the same for every API.
 *
 * A forced call is generated under a grammar, the way response_format is
 * (engine_grammar.c masks the logits): a named tool's answer is its
 * arguments under the tool's parameter schema (srv_force_tool); "some tool"
 * (OpenAI "required", Anthropic "any") with several tools is the object
 * {"NAME": ARGUMENTS} with exactly one property, one per tool, whose value
 * is that tool's arguments: the key picks the tool, so a single grammar
 * reading covers every tool (an anyOf of one object per tool would keep a
 * reading per tool alive, more than GRAMMAR_MAX_STACKS for an agent's 24).
 * srv_tcparse (PICK) splits it back into a call. */
#include "config.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "grammar.h"
#include "server_internal.h"

static int pick_schema(json_t *tools, srv_request *r, srv_error *e)
{
	json_t *props = json_object();
	size_t i;
	json_t *t;
	json_array_foreach(tools, i, t) {
		json_t *fn = json_object_get(t, "function");
		json_t *name = json_object_get(fn, "name");
		json_t *params = json_object_get(fn, "parameters");
		if (!json_is_string(name))
			continue;
		json_object_set_new(props, json_string_value(name),
				    params ? json_incref(params) : json_pack("{s:s}", "type", "object"));
	}
	if (json_object_size(props) > GRAMMAR_MAX_PROPS) {
		json_decref(props);
		return srv_fail(e, 400, "invalid_request_error", "unsupported_value", "tool_choice",
				"tool_choice: forcing a call among more than %d tools is not supported "
				"(name the tool)", GRAMMAR_MAX_PROPS);
	}
	json_t *s = json_pack("{s:s, s:o, s:b, s:i, s:i}", "type", "object", "properties", props,
			      "additionalProperties", 0, "minProperties", 1, "maxProperties", 1);
	char *text = s ? json_dumps(s, JSON_COMPACT) : NULL;
	json_decref(s);
	if (!text)
		return srv_fail(e, 500, "server_error", NULL, NULL, "out of memory");
	coli_err err = { 0 };
	coli_grammar *g = NULL;
	int rc = grammar_compile_schema(text, strlen(text), "tools", &g, &err);
	if (rc) {
		free(text);
		return srv_fail(e, 400, "invalid_request_error", "invalid_value", "tools",
				"tool_choice forces a call, so the tools' schemas must be enforced: %s", err.msg);
	}
	free(r->json_schema);
	r->json_schema = text;
	grammar_free(r->grammar);
	r->grammar = g;
	r->forced_pick = 1;
	return 0;
}

int srv_tool_choice_apply(srv_request *r, srv_error *e)
{
	if (r->tool_choice == SRV_TOOLS_AUTO)
		return 0;
	if (r->tool_choice == SRV_TOOLS_NONE) {
		free(r->tools_json);
		r->tools_json = NULL;
		return 0;
	}
	json_t *tools = r->tools_json ? json_loads(r->tools_json, 0, NULL) : NULL;
	int rc;
	if (!json_array_size(tools))
		rc = srv_fail(e, 400, "invalid_request_error", "invalid_value", "tool_choice",
			      "tool_choice forces a tool call, but no tools are given");
	else if (r->json_schema || r->json_object)
		rc = srv_fail(e, 400, "invalid_request_error", "invalid_value", "tool_choice",
			      "a forced tool call and response_format together are not supported");
	else if (r->tool_choice == SRV_TOOLS_NAMED)
		rc = srv_force_tool(tools, r->tool_choice_name ? r->tool_choice_name : "",
				    r->api == SRV_API_CHAT ? "tool_choice.function.name" : "tool_choice.name", r, e);
	else if (json_array_size(tools) == 1)
		rc = srv_force_tool(tools, json_string_value(json_object_get(
				json_object_get(json_array_get(tools, 0), "function"), "name")),
				    "tool_choice", r, e);
	else
		rc = pick_schema(tools, r, e);
	json_decref(tools);
	return rc;
}
