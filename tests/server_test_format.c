/* server_test_format.c - response formatting (OpenAI and Anthropic bodies,
 * SSE chunks and events), stop-string holdback, tool-call markup parsing,
 * metrics text. Every produced JSON is re-parsed and checked field by field. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "expert_store_stats.h"
#include "server_internal.h"
#include "test_util.h"

static const char *sget(json_t *j, const char *path)
{
	/* dotted path of object keys / array indexes */
	char buf[128];
	snprintf(buf, sizeof buf, "%s", path);
	for (char *tok = strtok(buf, "."); tok && j; tok = strtok(NULL, "."))
		j = (*tok >= '0' && *tok <= '9') ? json_array_get(j, (size_t)atoi(tok))
						 : json_object_get(j, tok);
	return json_is_string(j) ? json_string_value(j) : json_is_null(j) ? "<null>" : NULL;
}

static long long iget(json_t *j, const char *path)
{
	char buf[128];
	snprintf(buf, sizeof buf, "%s", path);
	for (char *tok = strtok(buf, "."); tok && j; tok = strtok(NULL, "."))
		j = (*tok >= '0' && *tok <= '9') ? json_array_get(j, (size_t)atoi(tok))
						 : json_object_get(j, tok);
	return json_is_integer(j) ? json_integer_value(j) : -999;
}

static void test_openai(void)
{
	srv_stream_ctx c = { .id = "chatcmpl-1", .created = 1700000000, .model = "tiny", .chat = 1 };
	srv_result r = { .text = "h\xc3\xa9llo \"q\"", .len = 10, .finish = SRV_FINISH_LENGTH,
			 .usage = { .prompt = 5, .completion = 3, .cached = 2 } };
	char *s = srv_openai_response(&c, &r);
	json_t *j = json_loads(s, 0, NULL);
	CHECK(j);
	CHECK(!strcmp(sget(j, "object"), "chat.completion"));
	CHECK(!strcmp(sget(j, "choices.0.message.content"), "h\xc3\xa9llo \"q\""));
	CHECK(!strcmp(sget(j, "choices.0.message.role"), "assistant"));
	CHECK(!strcmp(sget(j, "choices.0.finish_reason"), "length"));
	CHECK(iget(j, "usage.total_tokens") == 8 && iget(j, "usage.prompt_tokens_details.cached_tokens") == 2);
	CHECK(iget(j, "created") == 1700000000);
	json_decref(j);
	free(s);

	srv_tool_call call = { .id = "call_x", .name = "get", .arguments = "{\"a\":1}" };
	r.text = "";
	r.len = 0;
	r.finish = SRV_FINISH_TOOL;
	r.calls = &call;
	r.n_calls = 1;
	s = srv_openai_response(&c, &r);
	j = json_loads(s, 0, NULL);
	CHECK(!strcmp(sget(j, "choices.0.message.content"), "<null>"));
	CHECK(!strcmp(sget(j, "choices.0.message.tool_calls.0.function.name"), "get"));
	CHECK(!strcmp(sget(j, "choices.0.message.tool_calls.0.function.arguments"), "{\"a\":1}"));
	CHECK(!strcmp(sget(j, "choices.0.finish_reason"), "tool_calls"));
	json_decref(j);
	free(s);

	/* stream: role chunk, text chunk, finish chunk, usage chunk, DONE */
	util_buf b = { 0 };
	r.calls = NULL;
	r.n_calls = 0;
	r.finish = SRV_FINISH_STOP;
	CHECK(srv_openai_chunk_role(&b, &c) == 0);
	CHECK(srv_openai_chunk_text(&b, &c, "ab", 2) == 0);
	CHECK(srv_openai_chunk_finish(&b, &c, &r) == 0);
	CHECK(srv_openai_chunk_usage(&b, &c, &r.usage) == 0);
	CHECK(srv_sse_done(&b) == 0);
	char *save, *line = strtok_r(b.p, "\n", &save);
	int n = 0;
	for (; line; line = strtok_r(NULL, "\n", &save), n++) {
		CHECK(!strncmp(line, "data: ", 6));
		if (!strcmp(line, "data: [DONE]")) {
			CHECK(n == 4);
			continue;
		}
		j = json_loads(line + 6, 0, NULL);
		CHECK(j && !strcmp(sget(j, "id"), "chatcmpl-1") && iget(j, "created") == 1700000000);
		CHECK(!strcmp(sget(j, "object"), "chat.completion.chunk"));
		if (n == 0)
			CHECK(!strcmp(sget(j, "choices.0.delta.role"), "assistant") &&
			      !strcmp(sget(j, "choices.0.delta.content"), "") &&
			      !strcmp(sget(j, "choices.0.finish_reason"), "<null>"));
		if (n == 1)
			CHECK(!strcmp(sget(j, "choices.0.delta.content"), "ab") &&
			      !strcmp(sget(j, "choices.0.finish_reason"), "<null>"));
		if (n == 2)
			CHECK(!strcmp(sget(j, "choices.0.finish_reason"), "stop"));
		if (n == 3)
			CHECK(json_array_size(json_object_get(j, "choices")) == 0 &&
			      iget(j, "usage.completion_tokens") == 3);
		json_decref(j);
	}
	CHECK(n == 5);
	util_buf_free(&b);

	/* completions chunk shape */
	c.chat = 0;
	srv_openai_chunk_text(&b, &c, "z", 1);
	j = json_loads(b.p + 6, JSON_DISABLE_EOF_CHECK, NULL);
	CHECK(j && !strcmp(sget(j, "object"), "text_completion") && !strcmp(sget(j, "choices.0.text"), "z"));
	json_decref(j);
	util_buf_free(&b);

	srv_error e;
	srv_fail(&e, 400, "invalid_request_error", "invalid_value", "n", "only n=1");
	s = srv_openai_error_json(&e);
	j = json_loads(s, 0, NULL);
	CHECK(!strcmp(sget(j, "error.message"), "only n=1") && !strcmp(sget(j, "error.param"), "n") &&
	      !strcmp(sget(j, "error.code"), "invalid_value") &&
	      !strcmp(sget(j, "error.type"), "invalid_request_error"));
	json_decref(j);
	free(s);
	srv_fail(&e, 401, NULL, NULL, NULL, "key");
	s = srv_openai_error_json(&e);
	j = json_loads(s, 0, NULL);
	CHECK(!strcmp(sget(j, "error.param"), "<null>") && !strcmp(sget(j, "error.code"), "<null>"));
	json_decref(j);
	free(s);
	s = srv_anthropic_error_json(&e);
	j = json_loads(s, 0, NULL);
	CHECK(!strcmp(sget(j, "type"), "error") && !strcmp(sget(j, "error.type"), "authentication_error"));
	json_decref(j);
	free(s);
}

static void test_anthropic(void)
{
	srv_stream_ctx c = { .id = "msg_1", .model = "claude-x" };
	srv_tool_call call = { .id = "toolu_1", .name = "get", .arguments = "{\"k\":\"v\"}" };
	srv_result r = { .text = "hi", .len = 2, .finish = SRV_FINISH_STOP_SEQ, .stop_seq = "END",
			 .usage = { .prompt = 10, .completion = 4, .cached = 3 }, .calls = &call,
			 .n_calls = 1 };
	char *s = srv_anthropic_response(&c, &r);
	json_t *j = json_loads(s, 0, NULL);
	CHECK(j && !strcmp(sget(j, "type"), "message") && !strcmp(sget(j, "role"), "assistant"));
	CHECK(!strcmp(sget(j, "content.0.type"), "text") && !strcmp(sget(j, "content.0.text"), "hi"));
	CHECK(!strcmp(sget(j, "content.1.type"), "tool_use") && !strcmp(sget(j, "content.1.input.k"), "v"));
	CHECK(!strcmp(sget(j, "stop_reason"), "stop_sequence") && !strcmp(sget(j, "stop_sequence"), "END"));
	CHECK(iget(j, "usage.input_tokens") == 7 && iget(j, "usage.cache_read_input_tokens") == 3 &&
	      iget(j, "usage.output_tokens") == 4);
	json_decref(j);
	free(s);

	util_buf b = { 0 };
	srv_usage u = { .prompt = 10 };
	srv_anthropic_ev_start(&b, &c, &u);
	srv_anthropic_ev_block_start_text(&b, 0);
	srv_anthropic_ev_ping(&b);
	srv_anthropic_ev_text(&b, 0, "yo", 2);
	srv_anthropic_ev_block_stop(&b, 0);
	srv_anthropic_ev_tool_use(&b, 1, &call);
	r.finish = SRV_FINISH_LENGTH;
	r.stop_seq = NULL;
	srv_anthropic_ev_delta(&b, &r);
	srv_anthropic_ev_stop(&b);
	static const char *const order[] = {
		"message_start", "content_block_start", "ping", "content_block_delta",
		"content_block_stop", "content_block_start", "content_block_delta",
		"content_block_stop", "message_delta", "message_stop",
	};
	char *save, *line = strtok_r(b.p, "\n", &save);
	size_t n = 0;
	for (; line; n++) {
		char ev[64];
		CHECK(sscanf(line, "event: %63s", ev) == 1);
		CHECK(n < 10 && !strcmp(ev, order[n]));
		line = strtok_r(NULL, "\n", &save);
		CHECK(line && !strncmp(line, "data: ", 6));
		j = json_loads(line + 6, 0, NULL);
		CHECK(j && !strcmp(sget(j, "type"), ev));
		if (n == 0)
			CHECK(!strcmp(sget(j, "message.id"), "msg_1") &&
			      iget(j, "message.usage.input_tokens") == 10);
		if (n == 3)
			CHECK(!strcmp(sget(j, "delta.type"), "text_delta") && !strcmp(sget(j, "delta.text"), "yo"));
		if (n == 6)
			CHECK(!strcmp(sget(j, "delta.type"), "input_json_delta"));
		if (n == 8)
			CHECK(!strcmp(sget(j, "delta.stop_reason"), "max_tokens") &&
			      !strcmp(sget(j, "delta.stop_sequence"), "<null>") &&
			      iget(j, "usage.output_tokens") == 4 &&
			      iget(j, "usage.input_tokens") == 7 &&
			      iget(j, "usage.cache_read_input_tokens") == 3);
		json_decref(j);
		line = strtok_r(NULL, "\n", &save);
	}
	CHECK(n == 10);
	util_buf_free(&b);
}

static void feed(srv_stopper *s, const char *const *pieces, util_buf *out, int *hit)
{
	*hit = 0;
	for (; *pieces && !*hit; pieces++)
		*hit = srv_stopper_push(s, *pieces, strlen(*pieces), out);
	if (!*hit)
		srv_stopper_flush(s, out);
}

static void test_stop(void)
{
	const char *const stops[] = { "STOP", "\xc3\xa9nd", NULL };
	srv_stopper s;
	util_buf out = { 0 };
	int hit;
	/* a stop split over pieces: nothing of it is released */
	srv_stopper_init(&s, stops, 0);
	feed(&s, (const char *const[]){ "abc S", "T", "OP tail", NULL }, &out, &hit);
	CHECK(hit && s.hit == 0 && !strcmp(out.p, "abc "));
	srv_stopper_free(&s);
	util_buf_free(&out);
	/* a false start is released in full */
	srv_stopper_init(&s, stops, 0);
	feed(&s, (const char *const[]){ "xST", "x", "\xc3\xa9", "n", NULL }, &out, &hit);
	CHECK(!hit && !strcmp(out.p, "xSTx\xc3\xa9n"));
	srv_stopper_free(&s);
	util_buf_free(&out);
	/* multibyte stop */
	srv_stopper_init(&s, stops, 0);
	feed(&s, (const char *const[]){ "w\xc3\xa9", "nd!", NULL }, &out, &hit);
	CHECK(hit && s.hit == 1 && !strcmp(out.p, "w"));
	srv_stopper_free(&s);
	util_buf_free(&out);
	/* tool markup is captured, not shown */
	srv_stopper_init(&s, NULL, 1);
	feed(&s, (const char *const[]){ "ok <tool", "_call>get\n<arg_key>city</arg_key>\n",
					"<arg_value>Paris</arg_value>\n</tool_call>", NULL },
	     &out, &hit);
	CHECK(!hit && s.capturing && !strcmp(out.p, "ok "));
	srv_tool_call *calls;
	int n = srv_tools_parse(s.markup.p, s.markup.len, &calls);
	CHECK(n == 1 && !strcmp(calls[0].name, "get") && !strcmp(calls[0].arguments, "{\"city\":\"Paris\"}"));
	CHECK(!strncmp(calls[0].id, "call_", 5));
	srv_tools_free(calls, n);
	srv_stopper_free(&s);
	util_buf_free(&out);
}

static void test_tools(void)
{
	srv_tool_call *calls;
	const char *ds = "<\xef\xbd\x9ctool\xe2\x96\x81" "calls\xe2\x96\x81" "begin\xef\xbd\x9c>"
			 "<\xef\xbd\x9ctool\xe2\x96\x81" "call\xe2\x96\x81" "begin\xef\xbd\x9c>function"
			 "<\xef\xbd\x9ctool\xe2\x96\x81" "sep\xef\xbd\x9c>get_weather\n```json\n{\"city\": \"Oslo\"}\n```"
			 "<\xef\xbd\x9ctool\xe2\x96\x81" "call\xe2\x96\x81" "end\xef\xbd\x9c>"
			 "<\xef\xbd\x9ctool\xe2\x96\x81" "call\xe2\x96\x81" "begin\xef\xbd\x9c>now"
			 "<\xef\xbd\x9ctool\xe2\x96\x81" "sep\xef\xbd\x9c>{}"
			 "<\xef\xbd\x9ctool\xe2\x96\x81" "call\xe2\x96\x81" "end\xef\xbd\x9c>";
	int n = srv_tools_parse(ds, strlen(ds), &calls);
	CHECK(n == 2);
	if (n == 2) {
		CHECK(!strcmp(calls[0].name, "get_weather") && !strcmp(calls[0].arguments, "{\"city\": \"Oslo\"}"));
		CHECK(!strcmp(calls[1].name, "now") && !strcmp(calls[1].arguments, "{}"));
		CHECK(strcmp(calls[0].id, calls[1].id));
	}
	srv_tools_free(calls, n);
	const char *qw = "<tool_call>\n{\"name\": \"f\", \"arguments\": {\"x\": [1]}}\n</tool_call>";
	n = srv_tools_parse(qw, strlen(qw), &calls);
	CHECK(n == 1 && !strcmp(calls[0].name, "f") && !strcmp(calls[0].arguments, "{\"x\":[1]}"));
	srv_tools_free(calls, n);
	/* arguments that hold \u0000 are still the object they are (issue 30,
	 * defect 10: they parsed as a string without JSON_ALLOW_NUL) */
	const char *nul = "<tool_call>\n{\"name\": \"f\", \"arguments\": {\"x\": \"a\\u0000b\"}}\n</tool_call>";
	n = srv_tools_parse(nul, strlen(nul), &calls);
	CHECK(n == 1 && !strcmp(calls[0].name, "f") && !strcmp(calls[0].arguments, "{\"x\":\"a\\u0000b\"}"));
	srv_tools_free(calls, n);
	const char *glm = "<tool_call>g\n<arg_key>v</arg_key>\n<arg_value>[\"\\u0000\"]</arg_value>\n</tool_call>";
	n = srv_tools_parse(glm, strlen(glm), &calls);
	CHECK(n == 1 && !strcmp(calls[0].arguments, "{\"v\":[\"\\u0000\"]}"));
	srv_tools_free(calls, n);
	const char *junk = "<tool_call>";
	n = srv_tools_parse(junk, strlen(junk), &calls);
	CHECK(n == 0);
	srv_tools_free(calls, n);
}

static void test_metrics(void)
{
	srv_metrics *m = calloc(1, sizeof *m);
	srv_metrics_request(m, SRV_ROUTE_CHAT, 200);
	srv_metrics_request(m, SRV_ROUTE_CHAT, 200);
	srv_metrics_request(m, SRV_ROUTE_MESSAGES, 418);
	srv_usage u = { 10, 20, 5, 0 };
	srv_metrics_generation(m, &u, 120.0, 15.0);
	char *t = srv_metrics_render(m, 3, NULL);
	CHECK(t && strstr(t, "coli_http_requests_total{route=\"chat_completions\",code=\"200\"} 2\n"));
	CHECK(strstr(t, "coli_http_requests_total{route=\"messages\",code=\"other\"} 1\n"));
	CHECK(strstr(t, "coli_prompt_tokens_total 10\n") && strstr(t, "coli_completion_tokens_total 20\n"));
	CHECK(strstr(t, "coli_queue_length 3\n"));
	CHECK(strstr(t, "coli_ttft_seconds_bucket{le=\"0.1\"} 0\n") &&
	      strstr(t, "coli_ttft_seconds_bucket{le=\"0.25\"} 1\n") &&
	      strstr(t, "coli_ttft_seconds_count 1\n"));
	CHECK(strstr(t, "coli_decode_tokens_per_second_bucket{le=\"20\"} 1\n"));
	free(t);
	/* expert-store series, with a drive name that needs escaping */
	expert_stats *st = expert_stats_new(2, 4, 2, 2);
	CHECK(st != NULL);
	if (st) {
		expert_stats_set_drive(st, 0, "/mnt/a\"b", 1);
		expert_stats_note_lookup(st, 0, 1, EXPERT_MISS);
		expert_stats_note_lookup(st, 0, 2, EXPERT_HIT_CACHED);
		expert_stats_note_read(st, 0, 8192);
		t = srv_metrics_render(m, -1, st);
		CHECK(t && strstr(t, "coli_expert_misses_total 1\n"));
		CHECK(t && strstr(t, "coli_expert_hits_total{tier=\"cached\"} 1\n"));
		CHECK(t && strstr(t, "coli_drive_bytes_read_total{drive=\"0\",name=\"/mnt/a\\\"b\"} 8192\n"));
		CHECK(t && !strstr(t, "coli_queue_length"));
		free(t);
		expert_stats_free(st);
	}
	free(m);
}

static void test_util(void)
{
	CHECK(srv_utf8_valid("a\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80", 10));
	CHECK(!srv_utf8_valid("\xc3", 1));
	CHECK(!srv_utf8_valid("\xed\xa0\x80", 3));   /* surrogate */
	CHECK(!srv_utf8_valid("\xc0\xaf", 2));       /* overlong */
	char a[64], b[64];
	srv_make_id(a, sizeof a, "chatcmpl-");
	srv_make_id(b, sizeof b, "chatcmpl-");
	CHECK(strlen(a) == 9 + 24 && strcmp(a, b));
}

int main(void)
{
	test_openai();
	test_anthropic();
	test_stop();
	test_tools();
	test_metrics();
	test_util();
	return test_summary(__FILE__);
}
