/* server_parse.c - OpenAI request bodies -> srv_request (pure functions).
 *
 * Every field is either honoured, ignored (logged at debug) or rejected with
 * a 400 naming the field; coli-serve(1) carries the same list. jansson
 * already refuses invalid UTF-8 and NUL characters in strings, so texts that
 * reach the tokenizer are valid UTF-8. */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "coli_log.h"
#include "engine_profile.h"
#include "grammar.h"
#include "server_internal.h"

void srv_request_free(srv_request *r)
{
	if (!r)
		return;
	free(r->model);
	for (int i = 0; i < r->n_msgs; i++) {
		free((char *)r->msgs[i].role);
		free((char *)r->msgs[i].content);
		free((char *)r->msgs[i].tool_calls_json);
		free((char *)r->msgs[i].tool_call_id);
		free((char *)r->msgs[i].name);
		free((char *)r->msgs[i].reasoning_content);
	}
	free(r->msgs);
	free(r->tools_json);
	free(r->template_kwargs);
	free(r->json_schema);
	grammar_free(r->grammar);
	free(r->forced_tool);
	free(r->session);
	free(r->label);
	free(r->tool_choice_name);
	free(r->prompt);
	free(r->prompt_ids);
	for (int i = 0; i < r->n_stop; i++)
		free(r->stop[i]);
	free(r->bias_ids);
	free(r->bias);
	memset(r, 0, sizeof *r);
}

static void request_init(srv_request *r, int api)
{
	memset(r, 0, sizeof *r);
	r->api = api;
	r->enable_thinking = -1;
	r->temperature = 1.0;
	r->top_p = 1.0;
}

int srv_parse_load(const char *body, size_t len, json_t **root, srv_error *e)
{
	json_error_t jerr;
	*root = NULL;
	if (len == 0)
		return srv_fail(e, 400, "invalid_request_error", NULL, NULL,
				"request body is empty; expected a JSON object");
	json_t *j = json_loadb(body, len, 0, &jerr);
	if (!j)
		return srv_fail(e, 400, "invalid_request_error", NULL, NULL,
				"malformed JSON in request body: %s (line %d, column %d)", jerr.text,
				jerr.line, jerr.column);
	if (!json_is_object(j)) {
		json_decref(j);
		return srv_fail(e, 400, "invalid_request_error", NULL, NULL,
				"request body must be a JSON object");
	}
	*root = j;
	return 0;
}

int srv_bad_type(srv_error *e, const char *param, const char *want)
{
	return srv_fail(e, 400, "invalid_request_error", "invalid_type", param,
			"'%s' must be %s", param, want);
}

int srv_oom(srv_error *e)
{
	return srv_fail(e, 500, "server_error", NULL, NULL, "out of memory");
}

/* Optional number in [lo, hi]; null keeps the default. */
static int get_number(json_t *root, const char *key, double lo, double hi, double *out, srv_error *e)
{
	json_t *v = json_object_get(root, key);
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_number(v))
		return srv_bad_type(e, key, "a number");
	double x = json_number_value(v);
	if (!(x >= lo && x <= hi))
		return srv_fail(e, 400, "invalid_request_error", "invalid_value", key,
				"'%s' must be between %g and %g", key, lo, hi);
	*out = x;
	return 0;
}

int srv_parse_sampling(json_t *root, srv_request *r, double max_temp, srv_error *e)
{
	if (get_number(root, "temperature", 0.0, max_temp, &r->temperature, e) ||
	    get_number(root, "top_p", 0.0, 1.0, &r->top_p, e))
		return -EINVAL;
	json_t *v = json_object_get(root, "seed");
	if (v && !json_is_null(v)) {
		if (!json_is_integer(v))
			return srv_bad_type(e, "seed", "an integer");
		r->seed = (uint64_t)json_integer_value(v);
		r->has_seed = 1;
	}
	/* extension: speculative decoding for this request ("auto", "off"
	 * or a number of drafts; absent: the server's --draft) */
	v = json_object_get(root, "draft");
	if (v && !json_is_null(v)) {
		char num[24];
		const char *txt = json_is_string(v) ? json_string_value(v) : NULL;
		if (json_is_integer(v)) {
			snprintf(num, sizeof num, "%lld", (long long)json_integer_value(v));
			txt = num;
		}
		coli_err derr = { 0 };
		if (!txt)
			return srv_bad_type(e, "draft", "\"auto\", \"off\" or an integer");
		if (coli_draft_parse(txt, "draft", &r->draft, &derr))
			return srv_fail(e, 400, "invalid_request_error", "invalid_value", "draft", "%s", derr.msg);
	}
	/* extension: metadata.label names the routing profile the request's
	 * expert choices are summed into (coli-atlas(1)). metadata is the
	 * client's own map elsewhere, so a value that is no label is ignored
	 * (logged), never refused. */
	v = json_object_get(json_object_get(root, "metadata"), "label");
	if (v && !json_is_null(v)) {
		if (json_is_string(v) && coli_profile_label_valid(json_string_value(v))) {
			free(r->label);
			r->label = strdup(json_string_value(v));
		} else {
			coli_info("metadata.label is not a routing profile label (1 to 63 of A-Z a-z 0-9 . _ -, "
				  "not starting with '.' or '_'); the request is not labelled");
		}
	}
	v = json_object_get(root, "stream");
	if (v && !json_is_null(v)) {
		if (!json_is_boolean(v))
			return srv_bad_type(e, "stream", "a boolean");
		r->stream = json_is_true(v);
	}
	return 0;
}

int srv_parse_stop(json_t *v, const char *param, srv_request *r, srv_error *e)
{
	if (!v || json_is_null(v))
		return 0;
	if (json_is_string(v)) {
		if (json_string_length(v) == 0)
			return 0;
		r->stop[r->n_stop++] = strdup(json_string_value(v));
		return 0;
	}
	if (!json_is_array(v))
		return srv_bad_type(e, param, "a string or an array of strings");
	if (json_array_size(v) > SRV_MAX_STOP)
		return srv_fail(e, 400, "invalid_request_error", "invalid_value", param,
				"'%s' has more than %d entries", param, SRV_MAX_STOP);
	size_t i;
	json_t *s;
	json_array_foreach(v, i, s) {
		if (!json_is_string(s))
			return srv_bad_type(e, param, "an array of strings");
		if (json_string_length(s) == 0)
			continue;
		r->stop[r->n_stop++] = strdup(json_string_value(s));
	}
	return 0;
}

/* max_tokens / max_completion_tokens: integer >= 1; beyond INT_MAX means
 * "as many as the context allows". */
static int get_max_tokens(json_t *root, const char *key, int *out, srv_error *e)
{
	json_t *v = json_object_get(root, key);
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_integer(v))
		return srv_bad_type(e, key, "an integer");
	json_int_t n = json_integer_value(v);
	if (n < 1)
		return srv_fail(e, 400, "invalid_request_error", "invalid_value", key,
				"'%s' must be at least 1", key);
	*out = n > INT_MAX ? 0 : (int)n;
	return 0;
}

static int get_model(json_t *root, srv_request *r, int required, srv_error *e)
{
	json_t *v = json_object_get(root, "model");
	if (!v || json_is_null(v)) {
		if (required)
			return srv_fail(e, 400, "invalid_request_error", "missing_required_parameter",
					"model", "'model' is required");
		return 0;
	}
	if (!json_is_string(v))
		return srv_bad_type(e, "model", "a string");
	r->model = strdup(json_string_value(v));
	return 0;
}

/* Log fields we accept without acting on them, so a user can see why a
 * setting had no effect. */
void srv_log_ignored(json_t *root, const char *const *known)
{
	const char *k;
	json_t *v;
	json_object_foreach(root, k, v) {
		int found = 0;
		for (const char *const *p = known; *p && !found; p++)
			found = !strcmp(*p, k);
		if (!found)
			coli_debug("server: ignoring request field '%s'", k);
	}
}

/* Chat Completions' text parts; the Responses API also replays its own
 * output parts. */
static const char *const chat_parts[] = { "text", "input_text", "output_text", NULL };
static const char *const resp_parts[] = { "text", "input_text", "output_text", "reasoning_text", "summary_text",
					  NULL };

static int is_part(const char *const *l, const char *ty)
{
	for (; *l; l++)
		if (!strcmp(*l, ty))
			return 1;
	return 0;
}

int srv_parse_content(json_t *c, const char *param, int flags, char **out, srv_error *e)
{
	*out = NULL;
	if (!c || json_is_null(c)) {
		if (!(flags & SRV_CONTENT_NULL))
			return srv_fail(e, 400, "invalid_request_error", "missing_required_parameter",
					param, "'%s' is required", param);
		return (*out = strdup("")) ? 0 : srv_oom(e);
	}
	if (json_is_string(c))
		return (*out = strdup(json_string_value(c))) ? 0 : srv_oom(e);
	if (!json_is_array(c))
		return srv_bad_type(e, param, "a string or an array of content parts");
	const char *const *kinds = flags & SRV_CONTENT_RESPONSES ? resp_parts : chat_parts;
	util_buf b = { 0 };
	size_t i;
	json_t *part;
	json_array_foreach(c, i, part) {
		json_t *t = json_object_get(part, "type");
		if (!json_is_object(part) || !json_is_string(t)) {
			util_buf_free(&b);
			return srv_bad_type(e, param, "an array of objects with a 'type'");
		}
		const char *ty = json_string_value(t);
		if (!strcmp(ty, "refusal"))
			continue;
		if (!is_part(kinds, ty)) {
			util_buf_free(&b);
			return srv_fail(e, 400, "invalid_request_error", "unsupported_content", param,
					"content part type '%s' is not supported (%s)", ty,
					flags & SRV_CONTENT_RESPONSES ? "input_text, output_text" : "text only");
		}
		json_t *txt = json_object_get(part, "text");
		if (!json_is_string(txt)) {
			util_buf_free(&b);
			return srv_bad_type(e, param, "text parts with a string 'text'");
		}
		if (b.len)
			util_buf_puts(&b, "\n");
		util_buf_add(&b, json_string_value(txt), json_string_length(txt));
	}
	if (b.oom) {
		util_buf_free(&b);
		return srv_oom(e);
	}
	*out = b.p ? b.p : strdup("");
	return *out ? 0 : srv_oom(e);
}

static int parse_message(json_t *m, size_t idx, coli_chat_msg *out, srv_error *e)
{
	char param[48];
	snprintf(param, sizeof param, "messages[%zu]", idx);
	if (!json_is_object(m))
		return srv_bad_type(e, param, "an object");
	json_t *role = json_object_get(m, "role");
	if (!json_is_string(role))
		return srv_fail(e, 400, "invalid_request_error", "missing_required_parameter", param,
				"'%s.role' must be a string", param);
	const char *r = json_string_value(role);
	if (!strcmp(r, "developer"))
		r = "system";
	if (strcmp(r, "system") && strcmp(r, "user") && strcmp(r, "assistant") && strcmp(r, "tool"))
		return srv_fail(e, 400, "invalid_request_error", "invalid_value", param,
				"'%s.role' must be system, developer, user, assistant or tool (got '%s')",
				param, json_string_value(role));
	out->role = strdup(r);
	json_t *tc = json_object_get(m, "tool_calls");
	int is_asst = !strcmp(r, "assistant");
	if (tc && !json_is_null(tc)) {
		if (!is_asst || !json_is_array(tc))
			return srv_bad_type(e, param, "an assistant message with a 'tool_calls' array");
		out->tool_calls_json = json_dumps(tc, JSON_COMPACT);
	}
	char cparam[64];
	snprintf(cparam, sizeof cparam, "%s.content", param);
	char *text;
	if (srv_parse_content(json_object_get(m, "content"), cparam, is_asst ? SRV_CONTENT_NULL : 0, &text, e))
		return -EINVAL;
	out->content = text;
	if (!strcmp(r, "tool")) {
		json_t *id = json_object_get(m, "tool_call_id");
		if (id && !json_is_string(id))
			return srv_bad_type(e, "tool_call_id", "a string");
		if (id)
			out->tool_call_id = strdup(json_string_value(id));
	}
	json_t *name = json_object_get(m, "name");
	if (json_is_string(name))
		out->name = strdup(json_string_value(name));
	/* vLLM's field for a past turn's reasoning: the template puts it back
	 * (coli_chat_render folds it into the content for the built-in ones) */
	json_t *reasoning = json_object_get(m, "reasoning_content");
	if (is_asst && json_is_string(reasoning))
		out->reasoning_content = strdup(json_string_value(reasoning));
	return 0;
}

/* tool_choice: "none" | "auto" | "required" | {"type":"function",
 * "function":{"name"}}; parallel_tool_calls: boolean. */
static int parse_tool_choice(json_t *root, srv_request *r, srv_error *e)
{
	json_t *pt = json_object_get(root, "parallel_tool_calls");
	if (pt && !json_is_null(pt) && !json_is_boolean(pt))
		return srv_bad_type(e, "parallel_tool_calls", "a boolean");
	r->one_call = json_is_false(pt);
	json_t *choice = json_object_get(root, "tool_choice");
	if (!choice || json_is_null(choice))
		return 0;
	const char *cs = json_is_string(choice) ? json_string_value(choice) : NULL;
	json_t *name = json_object_get(json_object_get(choice, "function"), "name");
	if (!name)   /* the Responses API's flat form, which some clients send here */
		name = json_object_get(choice, "name");
	if (cs && !strcmp(cs, "none"))
		r->tool_choice = SRV_TOOLS_NONE;
	else if (cs && !strcmp(cs, "auto"))
		r->tool_choice = SRV_TOOLS_AUTO;
	else if (cs && !strcmp(cs, "required"))
		r->tool_choice = SRV_TOOLS_REQUIRED;
	else if (json_is_string(name)) {
		r->tool_choice = SRV_TOOLS_NAMED;
		r->tool_choice_name = strdup(json_string_value(name));
	} else
		return srv_bad_type(e, "tool_choice", "\"none\", \"auto\", \"required\" or "
				"{\"type\":\"function\",\"function\":{\"name\":...}}");
	return 0;
}

static int parse_tools(json_t *root, srv_request *r, srv_error *e)
{
	json_t *tools = json_object_get(root, "tools");
	if (parse_tool_choice(root, r, e))
		return -EINVAL;
	if (!tools || json_is_null(tools))
		return r->tool_choice == SRV_TOOLS_AUTO || r->tool_choice == SRV_TOOLS_NONE
		       ? 0 : srv_tool_choice_apply(r, e);
	if (!json_is_array(tools))
		return srv_bad_type(e, "tools", "an array");
	size_t i;
	json_t *t;
	json_array_foreach(tools, i, t) {
		json_t *fn = json_object_get(t, "function");
		if (!json_is_object(t) || !json_is_object(fn) ||
		    !json_is_string(json_object_get(fn, "name")))
			return srv_bad_type(e, "tools", "an array of {\"type\":\"function\",\"function\":{\"name\":...}}");
	}
	if (json_array_size(tools))
		r->tools_json = json_dumps(tools, JSON_COMPACT);
	return srv_tool_choice_apply(r, e);
}

static int check_rejected(json_t *root, srv_error *e)
{
	json_t *v = json_object_get(root, "n");
	if (v && !json_is_null(v)) {
		if (!json_is_integer(v))
			return srv_bad_type(e, "n", "an integer");
		if (json_integer_value(v) != 1)
			return srv_fail(e, 400, "invalid_request_error", "unsupported_value", "n",
					"only n=1 is supported");
	}
	v = json_object_get(root, "best_of");
	if (json_is_integer(v) && json_integer_value(v) > 1)
		return srv_fail(e, 400, "invalid_request_error", "unsupported_value", "best_of",
				"only best_of=1 is supported");
	v = json_object_get(root, "echo");
	if (v && json_is_true(v))
		return srv_fail(e, 400, "invalid_request_error", "unsupported_value", "echo",
				"echo is not supported");
	return 0;
}

static int parse_stream_options(json_t *root, srv_request *r, srv_error *e)
{
	json_t *so = json_object_get(root, "stream_options");
	if (!so || json_is_null(so))
		return 0;
	if (!json_is_object(so))
		return srv_bad_type(e, "stream_options", "an object");
	json_t *iu = json_object_get(so, "include_usage");
	if (iu && !json_is_null(iu)) {
		if (!json_is_boolean(iu))
			return srv_bad_type(e, "stream_options.include_usage", "a boolean");
		r->include_usage = json_is_true(iu);
	}
	return 0;
}

/* logit_bias: {"TOKEN_ID": BIAS, ...}, ids as decimal strings, biases in
 * -100..100 (OpenAI's semantics: added to the logits before sampling). The
 * vocabulary bound is checked at submit, where the model is known. */
static int parse_logit_bias(json_t *root, srv_request *r, srv_error *e)
{
	json_t *lb = json_object_get(root, "logit_bias");
	if (!lb || json_is_null(lb))
		return 0;
	if (!json_is_object(lb))
		return srv_bad_type(e, "logit_bias", "an object mapping token ids to numbers");
	size_t n = json_object_size(lb);
	if (n > SRV_MAX_BIAS)
		return srv_fail(e, 400, "invalid_request_error", "invalid_value", "logit_bias",
				"'logit_bias' has more than %d entries", SRV_MAX_BIAS);
	if (!n)
		return 0;
	r->bias_ids = malloc(n * sizeof *r->bias_ids);
	r->bias = malloc(n * sizeof *r->bias);
	if (!r->bias_ids || !r->bias)
		return srv_fail(e, 500, "server_error", NULL, NULL, "out of memory");
	const char *k;
	json_t *v;
	json_object_foreach(lb, k, v) {
		size_t len = strlen(k);
		char *end = NULL;
		long id = len && len <= 10 && strspn(k, "0123456789") == len ? strtol(k, &end, 10) : -1;
		if (id < 0 || id > INT_MAX)
			return srv_fail(e, 400, "invalid_request_error", "invalid_value", "logit_bias",
					"'logit_bias' keys must be token ids (decimal integers), got '%s'", k);
		if (!json_is_number(v))
			return srv_bad_type(e, "logit_bias", "an object mapping token ids to numbers");
		double b = json_number_value(v);
		if (!(b >= -100.0 && b <= 100.0))
			return srv_fail(e, 400, "invalid_request_error", "invalid_value", "logit_bias",
					"'logit_bias' values must be between -100 and 100 (token %s: %g)", k, b);
		r->bias_ids[r->n_bias] = (int)id;
		r->bias[r->n_bias++] = (float)b;
	}
	return 0;
}

static int parse_common(json_t *root, srv_request *r, srv_error *e)
{
	if (get_model(root, r, 0, e) || check_rejected(root, e) || srv_parse_response_format(root, r, e) ||
	    srv_parse_sampling(root, r, 2.0, e) || parse_stream_options(root, r, e) ||
	    srv_parse_stop(json_object_get(root, "stop"), "stop", r, e) ||
	    get_max_tokens(root, "max_tokens", &r->max_tokens, e) ||
	    get_max_tokens(root, "max_completion_tokens", &r->max_tokens, e) ||
	    parse_logit_bias(root, r, e))
		return -EINVAL;
	return 0;
}

int srv_parse_chat(const char *body, size_t len, srv_request *r, srv_error *e)
{
	static const char *const known[] = {
		"model", "messages", "max_tokens", "max_completion_tokens", "temperature",
		"top_p", "seed", "stop", "stream", "stream_options", "n", "response_format",
		"tools", "tool_choice", "parallel_tool_calls", "logprobs", "logit_bias", "draft", NULL,
	};
	json_t *root;
	request_init(r, SRV_API_CHAT);
	if (srv_parse_load(body, len, &root, e))
		return -EINVAL;
	int rc = -EINVAL;
	if (parse_common(root, r, e) || srv_parse_logprobs(root, 1, r, e) || parse_tools(root, r, e))
		goto out;
	json_t *kw = json_object_get(root, "chat_template_kwargs");
	if (kw && !json_is_null(kw)) {
		json_t *et = json_object_get(kw, "enable_thinking");
		if (!json_is_object(kw) || (et && !json_is_boolean(et) && !json_is_null(et))) {
			srv_bad_type(e, "chat_template_kwargs", "an object ({\"enable_thinking\": boolean})");
			goto out;
		}
		if (json_is_boolean(et))
			r->enable_thinking = json_is_true(et);
		/* every key reaches a checkpoint's own template as a variable */
		r->template_kwargs = json_dumps(kw, JSON_COMPACT);
	}
	json_t *msgs = json_object_get(root, "messages");
	if (!msgs) {
		srv_fail(e, 400, "invalid_request_error", "missing_required_parameter", "messages",
			 "'messages' is required");
		goto out;
	}
	if (!json_is_array(msgs) || json_array_size(msgs) == 0) {
		srv_fail(e, 400, "invalid_request_error", "invalid_value", "messages",
			 "'messages' must be a non-empty array");
		goto out;
	}
	r->msgs = calloc(json_array_size(msgs), sizeof *r->msgs);
	if (!r->msgs) {
		srv_fail(e, 500, "server_error", NULL, NULL, "out of memory");
		goto out;
	}
	size_t i;
	json_t *m;
	json_array_foreach(msgs, i, m) {
		r->n_msgs = (int)i + 1;
		if (parse_message(m, i, &r->msgs[i], e))
			goto out;
	}
	srv_log_ignored(root, known);
	rc = 0;
out:
	json_decref(root);
	return rc;
}

static int parse_prompt(json_t *p, srv_request *r, srv_error *e)
{
	if (json_is_string(p)) {
		r->prompt = strdup(json_string_value(p));
		return 0;
	}
	if (!json_is_array(p) || json_array_size(p) == 0)
		return srv_bad_type(e, "prompt", "a string, an array of one string, or token ids");
	json_t *first = json_array_get(p, 0);
	if (json_is_string(first) || json_is_array(first)) {
		if (json_array_size(p) != 1)
			return srv_fail(e, 400, "invalid_request_error", "unsupported_value", "prompt",
					"batched prompts are not supported (send one prompt)");
		if (json_is_string(first)) {
			r->prompt = strdup(json_string_value(first));
			return 0;
		}
		p = first;
		if (json_array_size(p) == 0)
			return srv_bad_type(e, "prompt", "a non-empty array of token ids");
	}
	r->prompt_ids = malloc(json_array_size(p) * sizeof *r->prompt_ids);
	if (!r->prompt_ids)
		return srv_fail(e, 500, "server_error", NULL, NULL, "out of memory");
	size_t i;
	json_t *t;
	json_array_foreach(p, i, t) {
		if (!json_is_integer(t) || json_integer_value(t) < 0 ||
		    json_integer_value(t) > INT_MAX)
			return srv_bad_type(e, "prompt", "an array of non-negative token ids");
		r->prompt_ids[r->n_prompt_ids++] = (int)json_integer_value(t);
	}
	return 0;
}

int srv_parse_completions(const char *body, size_t len, srv_request *r, srv_error *e)
{
	static const char *const known[] = {
		"model", "prompt", "max_tokens", "temperature", "top_p", "seed", "stop",
		"stream", "stream_options", "n", "logprobs", "echo", "best_of", "logit_bias", "draft", NULL,
	};
	json_t *root;
	request_init(r, SRV_API_COMPLETIONS);
	if (srv_parse_load(body, len, &root, e))
		return -EINVAL;
	int rc = -EINVAL;
	if (parse_common(root, r, e) || srv_parse_logprobs(root, 0, r, e))
		goto out;
	json_t *p = json_object_get(root, "prompt");
	if (!p) {
		srv_fail(e, 400, "invalid_request_error", "missing_required_parameter", "prompt",
			 "'prompt' is required");
		goto out;
	}
	if (parse_prompt(p, r, e))
		goto out;
	srv_log_ignored(root, known);
	rc = 0;
out:
	json_decref(root);
	return rc;
}
