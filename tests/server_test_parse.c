/* server_test_parse.c - request parsing: OpenAI chat/completions and
 * Anthropic messages bodies -> srv_request, and the 400s for bad input. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server_internal.h"
#include "test_util.h"

typedef int (*parse_fn)(const char *, size_t, srv_request *, srv_error *);

static int msgs_parse(const char *b, size_t n, srv_request *r, srv_error *e)
{
	return srv_parse_messages(b, n, 0, r, e);
}

/* Expect a 400 (or `status`) whose param/code mention `what`. */
static void expect_fail(parse_fn fn, const char *body, int status, const char *what)
{
	srv_request r;
	srv_error e = { 0 };
	int rc = fn(body, strlen(body), &r, &e);
	if (rc == 0 || e.status != status ||
	    (what && !strstr(e.param, what) && !strstr(e.code, what) && !strstr(e.message, what))) {
		FAIL("expected %d (%s) for %s; got rc=%d status=%d param=%s code=%s msg=%s",
			status, what ? what : "-", body, rc, e.status, e.param, e.code, e.message);
	}
	srv_request_free(&r);
}

static void test_chat_ok(void)
{
	const char *b = "{\"model\":\"m\",\"messages\":[{\"role\":\"developer\",\"content\":\"be brief\"},"
			"{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"a\"},"
			"{\"type\":\"text\",\"text\":\"b\"}]},"
			"{\"role\":\"assistant\",\"content\":null,\"tool_calls\":[{\"id\":\"c1\",\"type\":\"function\","
			"\"function\":{\"name\":\"f\",\"arguments\":\"{}\"}}]},"
			"{\"role\":\"tool\",\"tool_call_id\":\"c1\",\"content\":\"42\"}],"
			"\"max_completion_tokens\":7,\"temperature\":0.5,\"top_p\":0.9,\"seed\":3,"
			"\"stop\":[\"END\",\"\"],\"stream\":true,\"stream_options\":{\"include_usage\":true},"
			"\"n\":1,\"frequency_penalty\":0.1,\"user\":\"x\","
			"\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"f\",\"parameters\":{}}}]}";
	srv_request r;
	srv_error e = { 0 };
	CHECK(srv_parse_chat(b, strlen(b), &r, &e) == 0);
	CHECK(r.n_msgs == 4);
	CHECK(!strcmp(r.msgs[0].role, "system"));
	CHECK(!strcmp(r.msgs[1].content, "a\nb"));
	CHECK(r.msgs[2].tool_calls_json && strstr(r.msgs[2].tool_calls_json, "\"c1\""));
	CHECK(!strcmp(r.msgs[2].content, ""));
	CHECK(!strcmp(r.msgs[3].role, "tool") && !strcmp(r.msgs[3].tool_call_id, "c1"));
	CHECK(r.max_tokens == 7 && r.temperature == 0.5 && r.top_p == 0.9);
	CHECK(r.has_seed && r.seed == 3);
	CHECK(r.n_stop == 1 && !strcmp(r.stop[0], "END") && r.stop[1] == NULL);
	CHECK(r.stream && r.include_usage);
	CHECK(r.tools_json && strstr(r.tools_json, "\"f\""));
	CHECK(!strcmp(r.model, "m"));
	srv_request_free(&r);

	b = "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"tools\":[{\"type\":\"function\","
	    "\"function\":{\"name\":\"f\"}}],\"tool_choice\":\"none\",\"stop\":\"x\"}";
	CHECK(srv_parse_chat(b, strlen(b), &r, &e) == 0);
	CHECK(r.tools_json == NULL && r.model == NULL && r.n_stop == 1 && r.max_tokens == 0);
	CHECK(r.temperature == 1.0 && !r.stream);
	srv_request_free(&r);
}

static void test_chat_bad(void)
{
	expect_fail(srv_parse_chat, "", 400, "empty");
	expect_fail(srv_parse_chat, "{\"messages\":[", 400, "malformed");
	expect_fail(srv_parse_chat, "[1,2]", 400, "object");
	expect_fail(srv_parse_chat, "{}", 400, "messages");
	expect_fail(srv_parse_chat, "{\"messages\":[]}", 400, "messages");
	expect_fail(srv_parse_chat, "{\"messages\":\"hi\"}", 400, "messages");
	expect_fail(srv_parse_chat, "{\"messages\":[1]}", 400, "messages[0]");
	expect_fail(srv_parse_chat, "{\"messages\":[{\"content\":\"x\"}]}", 400, "role");
	expect_fail(srv_parse_chat, "{\"messages\":[{\"role\":\"wizard\",\"content\":\"x\"}]}", 400, "role");
	expect_fail(srv_parse_chat, "{\"messages\":[{\"role\":\"user\"}]}", 400, "content");
	expect_fail(srv_parse_chat, "{\"messages\":[{\"role\":\"user\",\"content\":5}]}", 400, "content");
	expect_fail(srv_parse_chat,
		    "{\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"image_url\"}]}]}", 400,
		    "image_url");
	const char *m = "\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]";
	char b[512];
	static const char *const bad[][2] = {
		{ "\"n\":2", "n" },
		{ "\"n\":\"1\"", "n" },
		{ "\"max_tokens\":0", "max_tokens" },
		{ "\"max_tokens\":-5", "max_tokens" },
		{ "\"max_tokens\":1.5", "max_tokens" },
		{ "\"max_tokens\":\"9\"", "max_tokens" },
		{ "\"max_tokens\":99999999999999999999999", "malformed" },
		{ "\"temperature\":3", "temperature" },
		{ "\"temperature\":\"hot\"", "temperature" },
		{ "\"top_p\":1.5", "top_p" },
		{ "\"seed\":1.5", "seed" },
		{ "\"stream\":\"yes\"", "stream" },
		{ "\"stream_options\":{\"include_usage\":1}", "include_usage" },
		{ "\"stop\":5", "stop" },
		{ "\"stop\":[1]", "stop" },
		{ "\"response_format\":{\"type\":\"yaml\"}", "response_format.type" },
		{ "\"response_format\":\"json\"", "response_format" },
		{ "\"response_format\":{\"type\":\"json_schema\"}", "response_format.json_schema" },
		{ "\"response_format\":{\"type\":\"json_schema\",\"json_schema\":{\"name\":\"a\"}}",
		  "response_format.json_schema.schema" },
		{ "\"response_format\":{\"type\":\"json_schema\",\"json_schema\":{\"schema\":{\"minimum\":1e-20}}}",
		  "response_format.json_schema.schema" },
		{ "\"response_format\":{\"type\":\"json_schema\",\"json_schema\":{\"schema\":{\"minimum\":1e-20}}}",
		  "minimum" },
		{ "\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"f\"}}],"
		  "\"tool_choice\":{\"type\":\"function\",\"function\":{\"name\":\"g\"}}", "tool_choice.function.name" },
		{ "\"logprobs\":\"yes\"", "logprobs" },
		{ "\"logprobs\":true,\"top_logprobs\":21", "top_logprobs" },
		{ "\"top_logprobs\":2", "top_logprobs" },
		{ "\"chat_template_kwargs\":{\"enable_thinking\":\"no\"}", "chat_template_kwargs" },
		{ "\"tools\":{}", "tools" },
		{ "\"tools\":[{\"type\":\"function\"}]", "tools" },
		{ "\"model\":7", "model" },
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		snprintf(b, sizeof b, "{%s,%s}", m, bad[i][0]);
		expect_fail(srv_parse_chat, b, 400, bad[i][1]);
	}
	/* invalid UTF-8 and NUL characters are refused by the JSON reader */
	expect_fail(srv_parse_chat, "{\"messages\":[{\"role\":\"user\",\"content\":\"\xff\xfe\"}]}", 400,
		    "malformed");
	expect_fail(srv_parse_chat, "{\"messages\":[{\"role\":\"user\",\"content\":\"a\\u0000b\"}]}",
		    400, "malformed");
	srv_request r;
	srv_error e = { 0 };
	const char nul[] = "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}\0garbage";
	CHECK(srv_parse_chat(nul, sizeof nul - 1, &r, &e) != 0 && e.status == 400);
	srv_request_free(&r);
	/* deep nesting is refused, not a stack overflow */
	size_t depth = 100000;
	char *deep = malloc(depth * 2 + 64);
	strcpy(deep, "{\"messages\":");
	size_t p = strlen(deep);
	for (size_t i = 0; i < depth; i++)
		deep[p++] = '[';
	for (size_t i = 0; i < depth; i++)
		deep[p++] = ']';
	deep[p++] = '}';
	deep[p] = '\0';
	expect_fail(srv_parse_chat, deep, 400, NULL);
	free(deep);
}

/* response_format and a forced tool reach the request as a schema */
static void test_structured(void)
{
	srv_request r;
	srv_error e = { 0 };
	const char *b = "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],"
			"\"response_format\":{\"type\":\"json_object\"}}";
	CHECK(srv_parse_chat(b, strlen(b), &r, &e) == 0 && r.json_object && !r.json_schema);
	srv_request_free(&r);
	b = "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"response_format\":{\"type\":"
	    "\"json_schema\",\"json_schema\":{\"name\":\"p\",\"strict\":true,\"schema\":{\"type\":\"integer\"}}}}";
	CHECK(srv_parse_chat(b, strlen(b), &r, &e) == 0 && r.json_schema && strstr(r.json_schema, "integer"));
	srv_request_free(&r);
	b = "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"tools\":[{\"type\":\"function\","
	    "\"function\":{\"name\":\"f\",\"parameters\":{\"type\":\"object\",\"properties\":{\"q\":"
	    "{\"type\":\"string\"}}}}}],\"tool_choice\":{\"type\":\"function\",\"function\":{\"name\":\"f\"}}}";
	CHECK(srv_parse_chat(b, strlen(b), &r, &e) == 0 && r.forced_tool && !strcmp(r.forced_tool, "f") &&
	      r.json_schema && strstr(r.json_schema, "\"q\"") && r.tools_json);
	srv_request_free(&r);
	b = "{\"model\":\"m\",\"max_tokens\":5,\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],"
	    "\"tools\":[{\"name\":\"t\",\"input_schema\":{\"type\":\"object\"}}],"
	    "\"tool_choice\":{\"type\":\"tool\",\"name\":\"t\"}}";
	CHECK(srv_parse_messages(b, strlen(b), 0, &r, &e) == 0 && r.forced_tool && r.json_schema);
	srv_request_free(&r);
	b = "{\"model\":\"m\",\"max_tokens\":5,\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],"
	    "\"tools\":[{\"name\":\"t\",\"input_schema\":{\"type\":\"object\"}}],"
	    "\"tool_choice\":{\"type\":\"tool\",\"name\":\"u\"}}";
	CHECK(srv_parse_messages(b, strlen(b), 0, &r, &e) != 0 && e.status == 400 &&
	      !strcmp(e.param, "tool_choice.name"));
	srv_request_free(&r);
}

static void test_completions(void)
{
	srv_request r;
	srv_error e = { 0 };
	const char *b = "{\"model\":\"m\",\"prompt\":\"Once\",\"max_tokens\":5,\"echo\":false}";
	CHECK(srv_parse_completions(b, strlen(b), &r, &e) == 0);
	CHECK(r.prompt && !strcmp(r.prompt, "Once") && r.max_tokens == 5);
	srv_request_free(&r);
	b = "{\"prompt\":[\"Twice\"]}";
	CHECK(srv_parse_completions(b, strlen(b), &r, &e) == 0 && !strcmp(r.prompt, "Twice"));
	srv_request_free(&r);
	b = "{\"prompt\":[1,2,3]}";
	CHECK(srv_parse_completions(b, strlen(b), &r, &e) == 0 && r.n_prompt_ids == 3 &&
	      r.prompt_ids[2] == 3);
	srv_request_free(&r);
	b = "{\"prompt\":[[4,5]]}";
	CHECK(srv_parse_completions(b, strlen(b), &r, &e) == 0 && r.n_prompt_ids == 2 &&
	      r.prompt_ids[0] == 4);
	srv_request_free(&r);
	expect_fail(srv_parse_completions, "{}", 400, "prompt");
	expect_fail(srv_parse_completions, "{\"prompt\":[\"a\",\"b\"]}", 400, "batched");
	expect_fail(srv_parse_completions, "{\"prompt\":[1,-2]}", 400, "prompt");
	expect_fail(srv_parse_completions, "{\"prompt\":[]}", 400, "prompt");
	expect_fail(srv_parse_completions, "{\"prompt\":{}}", 400, "prompt");
	expect_fail(srv_parse_completions, "{\"prompt\":\"x\",\"echo\":true}", 400, "echo");
	expect_fail(srv_parse_completions, "{\"prompt\":\"x\",\"best_of\":3}", 400, "best_of");
}

static void test_messages(void)
{
	srv_request r;
	srv_error e = { 0 };
	const char *b =
		"{\"model\":\"claude-whatever\",\"max_tokens\":16,\"system\":[{\"type\":\"text\",\"text\":\"S\"}],"
		"\"stop_sequences\":[\"Z\"],\"temperature\":0.2,\"top_k\":5,\"metadata\":{},"
		"\"tools\":[{\"name\":\"get\",\"description\":\"d\",\"input_schema\":{\"type\":\"object\"}}],"
		"\"messages\":[{\"role\":\"user\",\"content\":\"hi\"},"
		"{\"role\":\"assistant\",\"content\":[{\"type\":\"text\",\"text\":\"calling\"},"
		"{\"type\":\"tool_use\",\"id\":\"t1\",\"name\":\"get\",\"input\":{\"a\":1}}]},"
		"{\"role\":\"user\",\"content\":[{\"type\":\"tool_result\",\"tool_use_id\":\"t1\","
		"\"content\":[{\"type\":\"text\",\"text\":\"R\"}]},{\"type\":\"text\",\"text\":\"go on\"}]}]}";
	CHECK(srv_parse_messages(b, strlen(b), 0, &r, &e) == 0);
	CHECK(r.n_msgs == 5);
	CHECK(!strcmp(r.msgs[0].role, "system") && !strcmp(r.msgs[0].content, "S"));
	CHECK(!strcmp(r.msgs[2].role, "assistant") && !strcmp(r.msgs[2].content, "calling"));
	CHECK(r.msgs[2].tool_calls_json && strstr(r.msgs[2].tool_calls_json, "{\\\"a\\\":1}"));
	CHECK(!strcmp(r.msgs[3].role, "tool") && !strcmp(r.msgs[3].content, "R") &&
	      !strcmp(r.msgs[3].tool_call_id, "t1"));
	CHECK(!strcmp(r.msgs[4].role, "user") && !strcmp(r.msgs[4].content, "go on"));
	CHECK(r.max_tokens == 16 && r.n_stop == 1 && r.temperature > 0.19 && r.temperature < 0.21);
	CHECK(r.tools_json && strstr(r.tools_json, "\"parameters\""));
	srv_request_free(&r);

	const char *ct = "{\"model\":\"x\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}";
	CHECK(srv_parse_messages(ct, strlen(ct), 1, &r, &e) == 0);
	srv_request_free(&r);
	expect_fail(msgs_parse, ct, 400, "max_tokens");
	expect_fail(msgs_parse, "{\"max_tokens\":5,\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}",
		    400, "model");
	expect_fail(msgs_parse, "{\"model\":\"x\",\"max_tokens\":5,\"messages\":[]}", 400, "messages");
	expect_fail(msgs_parse,
		    "{\"model\":\"x\",\"max_tokens\":5,\"messages\":[{\"role\":\"robot\",\"content\":\"x\"}]}",
		    400, "role");
	expect_fail(msgs_parse,
		    "{\"model\":\"x\",\"max_tokens\":5,\"temperature\":1.5,"
		    "\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}", 400, "temperature");
	expect_fail(msgs_parse,
		    "{\"model\":\"x\",\"max_tokens\":5,\"messages\":[{\"role\":\"user\",\"content\":"
		    "[{\"type\":\"image\",\"source\":{}}]}]}", 400, "image");
}

int main(void)
{
	test_chat_ok();
	test_chat_bad();
	test_structured();
	test_completions();
	test_messages();
	return test_summary(__FILE__);
}
