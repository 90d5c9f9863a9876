/* server_test_toolcall.c - tool calls parsed as they are generated
 * (server_toolcall.c), against vLLM's glm45/glm47 semantics: values typed
 * by the tool's schema (a string parameter keeps its text exactly: a JSON
 * body, "123", "true", "null" and indentation stay as written; other
 * values are JSON, then Python literals), a call left open at the end
 * closed. Every case is fed whole and in pieces of 1..7 bytes: the
 * arguments only grow (what a stream sent stays valid) and end the same;
 * srv_tc_stream sends each call's start, deltas and end once. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server_internal.h"
#include "test_util.h"

static const char *const TOOLS =
	"[{\"type\":\"function\",\"function\":{\"name\":\"write\",\"parameters\":{\"type\":\"object\","
	"\"properties\":{\"path\":{\"type\":\"string\"},\"content\":{\"type\":\"string\"},"
	"\"force\":{\"type\":\"boolean\"},\"count\":{\"type\":\"integer\"},\"opts\":{\"type\":\"object\"}}}}},"
	"{\"type\":\"function\",\"function\":{\"name\":\"ls\",\"parameters\":{\"type\":\"object\","
	"\"properties\":{\"dir\":{\"type\":\"string\"}}}}}]";

/* Feed text in pieces of `step` bytes (0: whole) and return the calls
 * joined as "name ARGS;" after the end of the generation. */
static char *run(int mode, const char *forced, int max_calls, const char *text, size_t step)
{
	srv_tcparse p;
	srv_tc_init(&p, mode, TOOLS, forced, max_calls, "toolu_");
	size_t n = strlen(text);
	char *prev[8] = { 0 };
	for (size_t i = 0; i < n;) {
		size_t k = step && i + step < n ? step : n - i;
		srv_tc_feed(&p, text + i, k);
		i += k;
		/* arguments only grow: each earlier text is a prefix */
		for (int c = 0; c < p.n_calls && c < 8; c++) {
			const char *a = p.calls[c].args.p ? p.calls[c].args.p : "";
			CHECK(!prev[c] || !strncmp(a, prev[c], strlen(prev[c])),
			      "call %d arguments shrank: '%s' then '%s'", c, prev[c], a);
			free(prev[c]);
			prev[c] = strdup(a);
		}
	}
	srv_tc_finish(&p);
	srv_tool_call *calls;
	int nc = srv_tc_take(&p, &calls);
	util_buf out = { 0 };
	for (int c = 0; c < nc; c++) {
		CHECK(!strncmp(calls[c].id, "toolu_", 6), "id %s", calls[c].id);
		util_buf_printf(&out, "%s %s;", calls[c].name, calls[c].arguments);
		/* the whole text is what was streamed (announced args, then more) */
		if (c < 8 && prev[c])
			CHECK(!strncmp(calls[c].arguments, prev[c], strlen(prev[c])), "final args not an extension");
	}
	for (int c = 0; c < 8; c++)
		free(prev[c]);
	srv_tools_free(calls, nc);
	srv_tc_free(&p);
	return out.p ? out.p : strdup("");
}

static void expect(int mode, const char *forced, int max_calls, const char *text, const char *want)
{
	for (size_t step = 0; step <= 7; step++) {
		char *got = run(mode, forced, max_calls, text, step);
		CHECK(!strcmp(got, want), "pieces of %zu: %s\n  got  %s\n  want %s", step, text, got, want);
		free(got);
	}
}

/* srv_tc_stream's sink: what a stream sends, as "[NAME:" args deltas "]" */
typedef struct sent {
	util_buf out;
	int starts, ends;
} sent;

static int sink_start(void *ctx, int i, srv_tc_call *c)
{
	sent *k = ctx;
	k->starts++;
	util_buf_printf(&k->out, "[%s:", c->name);
	return 10 + i;   /* the stream's own tag, kept in c->announced */
}

static void sink_args(void *ctx, int i, srv_tc_call *c, const char *p, size_t n)
{
	sent *k = ctx;
	CHECK(c->announced == 10 + i, "args of call %d before its start", i);
	util_buf_add(&k->out, p, n);
}

static void sink_end(void *ctx, int i, srv_tc_call *c)
{
	sent *k = ctx;
	(void)i;
	CHECK(c->done, "a call ended before it is whole");
	k->ends++;
	util_buf_puts(&k->out, "]");
}

/* The calls streamed as the markup arrives in pieces of `step` bytes:
 * each started and ended once, their arguments whole UTF-8. */
static void expect_stream(const char *text, size_t step, const char *want, int n_calls)
{
	srv_tcparse p;
	sent k = { 0 };
	srv_tc_sink sink = { &k, sink_start, sink_args, sink_end };
	srv_tc_init(&p, SRV_TC_MARKUP, TOOLS, NULL, 0, "call_");
	size_t len = strlen(text), sends = 0;
	for (size_t at = 0; at < len; at += step) {
		size_t before = k.out.len;
		srv_tc_feed(&p, text + at, at + step < len ? step : len - at);
		srv_tc_stream(&p, &sink);
		for (size_t j = before; j < k.out.len; j++)
			CHECK(j + 1 < k.out.len || ((unsigned char)k.out.p[j] & 0xC0) != 0xC0,
			      "a delta ends inside a UTF-8 character");
		sends += k.out.len > before;
	}
	srv_tc_finish(&p);
	srv_tc_stream(&p, &sink);
	CHECK(k.out.p && !strcmp(k.out.p, want), "stream of %s in %zu-byte pieces:\n  got  %s\n  want %s", text,
	      step, k.out.p ? k.out.p : "", want);
	CHECK(k.starts == n_calls && k.ends == n_calls, "%d starts, %d ends", k.starts, k.ends);
	CHECK(step > 4 || sends > 2, "the arguments went out in %zu sends", sends);
	util_buf_free(&k.out);
	srv_tc_free(&p);
}

#define GLM(body) "<tool_call>write\n" body "</tool_call>"
#define KV(k, v) "<arg_key>" k "</arg_key>\n<arg_value>" v "</arg_value>\n"

int main(int argc, char **argv)
{
	(void)argc;
	/* a string parameter holding a JSON file body stays a string */
	expect(SRV_TC_MARKUP, NULL, 0, GLM(KV("path", "a.json") KV("content", "{\"a\": [1, 2]}")),
	       "write {\"path\":\"a.json\",\"content\":\"{\\\"a\\\": [1, 2]}\"};");
	/* "123", "true", "null" stay strings for string parameters */
	expect(SRV_TC_MARKUP, NULL, 0, GLM(KV("path", "123") KV("content", "true")),
	       "write {\"path\":\"123\",\"content\":\"true\"};");
	expect(SRV_TC_MARKUP, NULL, 0, GLM(KV("content", "null")), "write {\"content\":\"null\"};");
	/* indentation and newlines kept exactly */
	expect(SRV_TC_MARKUP, NULL, 0, GLM(KV("content", "\n    indented\n")),
	       "write {\"content\":\"\\n    indented\\n\"};");
	/* other types: JSON, then Python literals */
	expect(SRV_TC_MARKUP, NULL, 0, GLM(KV("force", "True") KV("count", " 12 ")),
	       "write {\"force\":true,\"count\":12};");
	expect(SRV_TC_MARKUP, NULL, 0, GLM(KV("force", "false") KV("opts", "{'a': None, 'b': 'x'}")),
	       "write {\"force\":false,\"opts\":{\"a\":null,\"b\":\"x\"}};");
	/* a parameter the schema does not know is typed by its text */
	expect(SRV_TC_MARKUP, NULL, 0, GLM(KV("extra", "123") KV("word", "hello")),
	       "write {\"extra\":123,\"word\":\"hello\"};");
	/* no arguments; two calls; one call only when parallel calls are off */
	expect(SRV_TC_MARKUP, NULL, 0, "<tool_call>ls</tool_call>", "ls {};");
	expect(SRV_TC_MARKUP, NULL, 0,
	       "<tool_call>ls\n" KV("dir", "/tmp") "</tool_call>\n<tool_call>ls\n" KV("dir", " a b ") "</tool_call>",
	       "ls {\"dir\":\"/tmp\"};ls {\"dir\":\" a b \"};");
	expect(SRV_TC_MARKUP, NULL, 1,
	       "<tool_call>ls\n" KV("dir", "/tmp") "</tool_call>\n<tool_call>ls\n" KV("dir", "x") "</tool_call>",
	       "ls {\"dir\":\"/tmp\"};");
	/* an unclosed call at the end of the generation is recovered */
	expect(SRV_TC_MARKUP, NULL, 0, "<tool_call>ls\n" KV("dir", "/tmp"), "ls {\"dir\":\"/tmp\"};");
	expect(SRV_TC_MARKUP, NULL, 0, "<tool_call>ls\n<arg_key>dir</arg_key><arg_value>/t</arg_v",
	       "ls {\"dir\":\"/t\"};");
	expect(SRV_TC_MARKUP, NULL, 0, "<tool_call>ls", "ls {};");
	/* characters JSON escapes, and UTF-8 */
	expect(SRV_TC_MARKUP, NULL, 0, "<tool_call>ls\n" KV("dir", "a\"b\\c\td\xc3\xa9") "</tool_call>",
	       "ls {\"dir\":\"a\\\"b\\\\c\\td\xc3\xa9\"};");
	/* streamed: started once, arguments as they grow, ended when whole */
	for (size_t step = 1; step <= 7; step++) {
		expect_stream("<tool_call>ls\n" KV("dir", "/t\xc3\xa9mp") "</tool_call>\n<tool_call>write\n"
			      KV("content", "x") "</tool_call>", step,
			      "[ls:{\"dir\":\"/t\xc3\xa9mp\"}][write:{\"content\":\"x\"}]", 2);
		expect_stream("<tool_call>ls\n" KV("dir", "/tmp"), step, "[ls:{\"dir\":\"/tmp\"}]", 1);
	}
	/* a JSON body inside <tool_call> is not GLM: left to srv_tools_parse */
	{
		srv_tcparse p;
		srv_tc_init(&p, SRV_TC_MARKUP, TOOLS, NULL, 0, "call_");
		const char *t = "<tool_call>\n{\"name\": \"ls\", \"arguments\": {}}\n</tool_call>";
		srv_tc_feed(&p, t, strlen(t));
		srv_tc_finish(&p);
		CHECK(p.fmt == SRV_TC_FMT_OTHER && p.n_calls == 0, "fmt %d calls %d", p.fmt, p.n_calls);
		srv_tc_free(&p);
	}
	/* a forced tool: the answer is its arguments */
	expect(SRV_TC_FORCED, "ls", 0, " {\"dir\": \"x\"}", "ls {\"dir\": \"x\"};");
	expect(SRV_TC_FORCED, "ls", 0, "", "ls {};");
	/* any tool forced: {"NAME": ARGS} */
	expect(SRV_TC_PICK, NULL, 0, "{\"write\": {\"path\": \"}\", \"n\": [1, {}]}}",
	       "write {\"path\": \"}\", \"n\": [1, {}]};");
	expect(SRV_TC_PICK, NULL, 0, "{ \"ls\" : {} }", "ls {};");
	return test_summary(argv[0]);
}
