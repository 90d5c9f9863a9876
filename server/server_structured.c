/* server_structured.c - structured output fields of a request: OpenAI
 * `response_format` (json_object / json_schema) and a forced tool (OpenAI
 * `tool_choice` naming a function, Anthropic `tool_choice` {"type":"tool"}),
 * which constrains the answer to that tool's parameter schema and returns
 * it as the tool call. Schemas are compiled here, once: a bad one is a 400
 * naming the field and the keyword, a good one goes to the engine with
 * the request (srv_request.grammar), so the engine thread compiles none. */
#include "config.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "grammar.h"
#include "server_internal.h"

static int schema_take(json_t *schema, const char *param, srv_request *r, srv_error *e)
{
	char *text = json_dumps(schema, JSON_COMPACT | JSON_ENCODE_ANY);
	if (!text)
		return srv_fail(e, 500, "server_error", NULL, NULL, "out of memory");
	coli_err err = { 0 };
	coli_grammar *g = NULL;
	int rc = grammar_compile_schema(text, strlen(text), param, &g, &err);
	if (rc) {
		free(text);
		return srv_fail(e, 400, "invalid_request_error", "invalid_value", param, "%s", err.msg);
	}
	free(r->json_schema);
	r->json_schema = text;
	grammar_free(r->grammar);
	r->grammar = g;
	return 0;
}

int srv_parse_response_format(json_t *root, srv_request *r, srv_error *e)
{
	json_t *v = json_object_get(root, "response_format");
	if (!v || json_is_null(v))
		return 0;
	json_t *t = json_object_get(v, "type");
	if (!json_is_object(v) || !json_is_string(t))
		return srv_fail(e, 400, "invalid_request_error", "invalid_type", "response_format",
				"response_format: must be an object with a 'type'");
	const char *type = json_string_value(t);
	if (!strcmp(type, "text"))
		return 0;
	if (!strcmp(type, "json_object")) {
		r->json_object = 1;
		return 0;
	}
	if (strcmp(type, "json_schema"))
		return srv_fail(e, 400, "invalid_request_error", "unsupported_value", "response_format.type",
				"response_format.type '%s' is not supported (text, json_object, json_schema)", type);
	json_t *js = json_object_get(v, "json_schema");
	if (!json_is_object(js))
		return srv_fail(e, 400, "invalid_request_error", "missing_required_parameter",
				"response_format.json_schema",
				"response_format.json_schema: required object with 'name' and 'schema'");
	json_t *name = json_object_get(js, "name"), *strict = json_object_get(js, "strict");
	if (name && !json_is_string(name))
		return srv_fail(e, 400, "invalid_request_error", "invalid_type", "response_format.json_schema.name",
				"response_format.json_schema.name: must be a string");
	if (strict && !json_is_boolean(strict) && !json_is_null(strict))
		return srv_fail(e, 400, "invalid_request_error", "invalid_type",
				"response_format.json_schema.strict",
				"response_format.json_schema.strict: must be a boolean");
	json_t *schema = json_object_get(js, "schema");
	if (!schema)
		return srv_fail(e, 400, "invalid_request_error", "missing_required_parameter",
				"response_format.json_schema.schema",
				"response_format.json_schema.schema: required (the JSON Schema of the answer)");
	/* strict or not, the schema is enforced: a valid answer is valid either way */
	return schema_take(schema, "response_format.json_schema.schema", r, e);
}

int srv_force_tool(json_t *tools, const char *name, const char *param, srv_request *r, srv_error *e)
{
	size_t i;
	json_t *t;
	json_array_foreach(tools, i, t) {
		json_t *fn = json_object_get(t, "function");
		json_t *n = json_object_get(fn, "name");
		if (!json_is_string(n) || strcmp(json_string_value(n), name))
			continue;
		json_t *params = json_object_get(fn, "parameters");
		json_t *any = NULL;
		if (!params)
			params = any = json_pack("{s:s}", "type", "object");
		char what[300];
		snprintf(what, sizeof what, "tools[%zu] (%s) parameters", i, name);
		int rc = schema_take(params, what, r, e);
		json_decref(any);
		if (rc)
			return rc;
		free(r->forced_tool);
		if (!(r->forced_tool = strdup(name)))
			return srv_fail(e, 500, "server_error", NULL, NULL, "out of memory");
		return 0;
	}
	return srv_fail(e, 400, "invalid_request_error", "invalid_value", param,
			"%s: no tool named '%s' in tools", param, name);
}
