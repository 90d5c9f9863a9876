/* server_test_responses.c - Responses API bodies -> srv_resp (the chat
 * messages, tools and fields the engine gets) and the response objects
 * built from a result, without a server. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server_responses.h"
#include "test_util.h"

static int parse(const char *body, const char *prev_json, srv_resp *q, srv_error *e)
{
	json_t *prev = prev_json ? json_loads(prev_json, 0, NULL) : NULL;
	memset(q, 0, sizeof *q);
	memset(e, 0, sizeof *e);
	int rc = srv_responses_parse(body, strlen(body), prev, q, e);
	json_decref(prev);
	return rc;
}

static void expect_fail(const char *body, const char *param)
{
	srv_resp q;
	srv_error e;
	int rc = parse(body, NULL, &q, &e);
	CHECK(rc != 0 && e.status == 400 && !strcmp(e.param, param), "%s: rc %d status %d param '%s' (%s)", body, rc,
	      e.status, e.param, e.message);
	srv_resp_free(&q);
}

static void test_items(void)
{
	srv_resp q;
	srv_error e;
	const char *b =
		"{\"instructions\":\"be brief\",\"input\":["
		"{\"role\":\"developer\",\"content\":\"dev\"},"
		"{\"type\":\"message\",\"role\":\"user\",\"content\":[{\"type\":\"input_text\",\"text\":\"a\"},"
		"{\"type\":\"input_text\",\"text\":\"b\"}]},"
		"{\"type\":\"reasoning\",\"id\":\"rs_1\",\"summary\":[]},"
		"{\"role\":\"assistant\",\"content\":[{\"type\":\"output_text\",\"text\":\"calling\"}]},"
		"{\"type\":\"function_call\",\"call_id\":\"c1\",\"name\":\"f\",\"arguments\":\"{\\\"x\\\":1}\"},"
		"{\"type\":\"function_call\",\"call_id\":\"c2\",\"name\":\"g\",\"arguments\":\"\"},"
		"{\"type\":\"function_call_output\",\"call_id\":\"c1\",\"output\":\"one\"},"
		"{\"type\":\"function_call_output\",\"call_id\":\"c2\",\"output\":[{\"type\":\"input_text\",\"text\":\"two\"}]}"
		"],\"max_output_tokens\":7,\"temperature\":0.5,\"store\":false,\"parallel_tool_calls\":false}";
	REQUIRE(parse(b, NULL, &q, &e) == 0, "%s", e.message);
	srv_request *r = &q.req;
	CHECK(r->api == SRV_API_RESPONSES && r->max_tokens == 7 && r->temperature == 0.5 && !q.store &&
	      r->no_parallel_tools);
	REQUIRE(r->n_msgs == 6, "%d messages", r->n_msgs);
	CHECK_STR(r->msgs[0].role, "system");
	CHECK_STR(r->msgs[0].content, "be brief");
	CHECK_STR(r->msgs[1].role, "system");
	CHECK_STR(r->msgs[2].content, "a\nb");
	/* the calls join the assistant text before them; empty arguments are {} */
	CHECK_STR(r->msgs[3].role, "assistant");
	CHECK_STR(r->msgs[3].content, "calling");
	CHECK_STR(r->msgs[3].tool_calls_json,
		  "[{\"id\":\"c1\",\"type\":\"function\",\"function\":{\"name\":\"f\",\"arguments\":\"{\\\"x\\\":1}\"}},"
		  "{\"id\":\"c2\",\"type\":\"function\",\"function\":{\"name\":\"g\",\"arguments\":\"{}\"}}]");
	CHECK_STR(r->msgs[4].role, "tool");
	CHECK_STR(r->msgs[4].tool_call_id, "c1");
	CHECK_STR(r->msgs[4].name, "f");
	CHECK_STR(r->msgs[5].content, "two");
	CHECK_STR(r->msgs[5].name, "g");
	CHECK(json_array_size(q.items) == 8, "all input items kept for storing");
	srv_resp_free(&q);
	/* a reasoning item opens the turn its answer and calls join */
	const char *rb = "{\"input\":[{\"role\":\"user\",\"content\":\"q\"},"
			 "{\"type\":\"reasoning\",\"id\":\"rs_2\",\"summary\":[],"
			 "\"content\":[{\"type\":\"reasoning_text\",\"text\":\"think A\"}]},"
			 "{\"role\":\"assistant\",\"content\":[{\"type\":\"output_text\",\"text\":\"calling\"}]},"
			 "{\"type\":\"function_call\",\"call_id\":\"c1\",\"name\":\"f\",\"arguments\":\"{}\"},"
			 "{\"type\":\"function_call_output\",\"call_id\":\"c1\",\"output\":\"one\"}]}";
	REQUIRE(parse(rb, NULL, &q, &e) == 0, "%s", e.message);
	REQUIRE(q.req.n_msgs == 3, "%d messages", q.req.n_msgs);
	CHECK_STR(q.req.msgs[1].role, "assistant");
	CHECK_STR(q.req.msgs[1].content, "calling");
	CHECK_STR(q.req.msgs[1].reasoning_content, "think A");
	CHECK(q.req.msgs[1].tool_calls_json != NULL);
	srv_resp_free(&q);
}

static void test_prev(void)
{
	srv_resp q;
	srv_error e;
	/* the stored conversation comes first; instructions are not carried */
	const char *prev = "{\"conversation\":[{\"type\":\"message\",\"role\":\"user\",\"content\":\"hi\"},"
			   "{\"type\":\"message\",\"role\":\"assistant\",\"content\":[{\"type\":\"output_text\","
			   "\"text\":\"hello\"}]}]}";
	REQUIRE(parse("{\"input\":\"more\"}", prev, &q, &e) == 0, "%s", e.message);
	REQUIRE(q.req.n_msgs == 3);
	CHECK_STR(q.req.msgs[0].content, "hi");
	CHECK_STR(q.req.msgs[1].content, "hello");
	CHECK_STR(q.req.msgs[2].role, "user");
	CHECK_STR(q.req.msgs[2].content, "more");
	CHECK(q.store == 1, "store defaults to true");
	srv_resp_free(&q);
	char id[80];
	CHECK_RC(srv_responses_prev_id("{\"previous_response_id\":\"resp_x\"}", 33, id, sizeof id, &e), 0);
	CHECK_STR(id, "resp_x");
}

static void test_tools(void)
{
	srv_resp q;
	srv_error e;
	const char *tools = "\"tools\":[{\"type\":\"web_search\"},{\"type\":\"namespace\",\"name\":\"n\",\"tools\":[]},"
			    "{\"type\":\"function\",\"name\":\"f\",\"description\":\"d\",\"strict\":true,"
			    "\"parameters\":{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"}}}}]";
	char b[1024];
	snprintf(b, sizeof b, "{\"input\":\"x\",%s}", tools);
	REQUIRE(parse(b, NULL, &q, &e) == 0, "%s", e.message);
	CHECK_STR(q.req.tools_json, "[{\"type\":\"function\",\"function\":{\"name\":\"f\",\"description\":\"d\","
				    "\"parameters\":{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"}}},"
				    "\"strict\":true}}]");
	CHECK(!q.req.forced_tool && q.req.tool_choice == SRV_TOOLS_AUTO);
	CHECK(json_array_size(json_object_get(q.echo, "tools")) == 3, "the tools are echoed as sent");
	srv_resp_free(&q);
	snprintf(b, sizeof b, "{\"input\":\"x\",%s,\"tool_choice\":\"none\"}", tools);
	REQUIRE(parse(b, NULL, &q, &e) == 0);
	CHECK(!q.req.tools_json, "tool_choice none offers no tools");
	srv_resp_free(&q);
	snprintf(b, sizeof b, "{\"input\":\"x\",%s,\"tool_choice\":\"required\"}", tools);
	REQUIRE(parse(b, NULL, &q, &e) == 0);
	CHECK(q.req.tool_choice == SRV_TOOLS_REQUIRED && q.req.tools_json);
	CHECK_STR(q.req.forced_tool, "f"); /* required, one function tool: that one */
	srv_resp_free(&q);
	snprintf(b, sizeof b, "{\"input\":\"x\",%s,\"tool_choice\":{\"type\":\"allowed_tools\",\"mode\":\"required\","
		 "\"tools\":[]}}", tools);
	REQUIRE(parse(b, NULL, &q, &e) == 0);
	CHECK(q.req.tool_choice == SRV_TOOLS_REQUIRED && q.req.json_schema, "the call is forced");
	srv_resp_free(&q);
	snprintf(b, sizeof b, "{\"input\":\"x\",%s,\"tool_choice\":{\"type\":\"function\",\"name\":\"f\"}}", tools);
	REQUIRE(parse(b, NULL, &q, &e) == 0, "%s", e.message);
	CHECK_STR(q.req.forced_tool, "f");
	CHECK(q.req.json_schema && strstr(q.req.json_schema, "\"a\""), "the call's schema constrains the answer");
	srv_resp_free(&q);
	snprintf(b, sizeof b, "{\"input\":\"x\",%s,\"tool_choice\":{\"type\":\"function\",\"name\":\"zz\"}}", tools);
	expect_fail(b, "tool_choice.name");
}

static void test_fields(void)
{
	srv_resp q;
	srv_error e;
	REQUIRE(parse("{\"input\":\"x\",\"reasoning\":{\"effort\":\"none\"},\"text\":{\"format\":{\"type\":"
		      "\"json_schema\",\"name\":\"p\",\"strict\":true,\"schema\":{\"type\":\"object\","
		      "\"properties\":{\"n\":{\"type\":\"integer\"}},\"required\":[\"n\"]}}}}",
		      NULL, &q, &e) == 0, "%s", e.message);
	CHECK(q.req.enable_thinking == 0 && q.req.json_schema && strstr(q.req.json_schema, "integer"));
	srv_resp_free(&q);
	REQUIRE(parse("{\"input\":\"x\",\"reasoning\":{\"effort\":\"high\"},\"text\":{\"format\":{\"type\":"
		      "\"json_object\"}}}", NULL, &q, &e) == 0);
	CHECK(q.req.enable_thinking == 1 && q.req.json_object);
	srv_resp_free(&q);
	expect_fail("{\"input\":\"x\",\"text\":{\"format\":{\"type\":\"json_schema\",\"name\":\"p\","
		    "\"schema\":{\"type\":\"nope\"}}}}", "text.format.schema");
	expect_fail("{\"input\":3}", "input");
	expect_fail("{}", "input");
	expect_fail("{\"input\":\"x\",\"max_output_tokens\":0}", "max_output_tokens");
	expect_fail("{\"input\":\"x\",\"reasoning\":{\"effort\":\"max\"}}", "reasoning.effort");
	expect_fail("{\"input\":\"x\",\"background\":true}", "background");
	expect_fail("{\"input\":\"x\",\"store\":\"yes\"}", "store");
	expect_fail("{\"input\":[{\"role\":\"tool\",\"content\":\"x\"}]}", "input[0]");
	expect_fail("{\"input\":[{\"role\":\"user\",\"content\":[{\"type\":\"input_image\",\"image_url\":\"u\"}]}]}",
		    "input[0].content");
	expect_fail("{\"input\":[{\"type\":\"function_call_output\"}]}", "input[0]");
}

static void test_objects(void)
{
	srv_resp q;
	srv_error e;
	REQUIRE(parse("{\"input\":\"x\",\"metadata\":{\"k\":\"v\"}}", NULL, &q, &e) == 0);
	CHECK_RC(srv_resp_new_id(q.id, sizeof q.id), 0);
	CHECK(strlen(q.id) == SRV_RESP_ID_LEN && !strncmp(q.id, "resp_", 5), "id %s", q.id);
	snprintf(q.model, sizeof q.model, "m");
	srv_resp_ids ids;
	srv_resp_ids_make(&ids);
	srv_tool_call call = { .id = "call_1", .name = "f", .arguments = "{}" };
	srv_result r = { .text = "hi", .len = 2, .finish = SRV_FINISH_LENGTH, .reasoning = "think",
			 .reasoning_len = 5, .calls = &call, .n_calls = 1,
			 .usage = { .prompt = 10, .completion = 4, .cached = 3, .reasoning = 2 } };
	json_t *o = srv_resp_object(&q, srv_resp_status(&r), srv_resp_output(&ids, &r), &r);
	REQUIRE(o);
	char *s = json_dumps(json_object_get(o, "usage"), JSON_COMPACT | JSON_SORT_KEYS);
	CHECK_STR(s, "{\"input_tokens\":10,\"input_tokens_details\":{\"cached_tokens\":3},\"output_tokens\":4,"
		     "\"output_tokens_details\":{\"reasoning_tokens\":2},\"total_tokens\":14}");
	free(s);
	CHECK_STR(json_string_value(json_object_get(o, "status")), "incomplete");
	s = json_dumps(json_object_get(o, "incomplete_details"), JSON_COMPACT);
	CHECK_STR(s, "{\"reason\":\"max_output_tokens\"}");
	free(s);
	json_t *out = json_object_get(o, "output");
	REQUIRE(json_array_size(out) == 3);
	CHECK_STR(json_string_value(json_object_get(json_array_get(out, 0), "type")), "reasoning");
	CHECK_STR(json_string_value(json_object_get(json_array_get(out, 1), "type")), "message");
	json_t *fc = json_array_get(out, 2);
	CHECK_STR(json_string_value(json_object_get(fc, "call_id")), "call_1");
	CHECK_STR(json_string_value(json_object_get(fc, "id")), "fc_1"); /* named after the call */
	CHECK_STR(json_string_value(json_object_get(json_object_get(o, "metadata"), "k")), "v");
	json_decref(o);
	/* only calls: no message item */
	r.len = 0;
	r.reasoning_len = 0;
	r.finish = SRV_FINISH_TOOL;
	out = srv_resp_output(&ids, &r);
	CHECK(json_array_size(out) == 1 && !strcmp(srv_resp_status(&r), "completed"));
	json_decref(out);
	srv_resp_free(&q);
}

int main(int argc, char **argv)
{
	(void)argc;
	test_items();
	test_prev();
	test_tools();
	test_fields();
	test_objects();
	return test_summary(argv[0]);
}
