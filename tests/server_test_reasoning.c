/* server_test_reasoning.c - the reasoning of earlier assistant turns goes
 * back into the prompt: OpenAI reasoning_content and Anthropic thinking
 * blocks, parsed (server_parse.c, server_anthropic.c) and rendered by the
 * GLM-5 template the way it renders a multi-step tool chain,
 * <|assistant|><think>...</think><tool_call>..., not
 * <|assistant|></think><tool_call>... (issue 31). */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server_internal.h"
#include "test_util.h"

static char *render(const srv_request *r)
{
	coli_chat_template tpl = { .family = COLI_CHAT_GLM5, .bos_text = "", .eos_text = "", .enable_thinking = -1 };
	coli_err err = { 0 };
	char *out = NULL;
	int rc = coli_chat_render(&tpl, r->msgs, r->n_msgs, r->tools_json, 1, &out, &err);
	CHECK(rc >= 0, "render: %s", err.msg);
	return out;
}

int main(int argc, char **argv)
{
	(void)argc;
	srv_request r;
	srv_error e;
	const char *want = "<|assistant|><think>plan A</think><tool_call>Bash<arg_key>command</arg_key>"
			   "<arg_value>ls</arg_value></tool_call><|observation|><tool_response>a b</tool_response>";
	const char *a = "{\"model\":\"m\",\"max_tokens\":5,\"messages\":[{\"role\":\"user\",\"content\":\"list\"},"
			"{\"role\":\"assistant\",\"content\":[{\"type\":\"thinking\",\"thinking\":\"plan A\","
			"\"signature\":\"\"},{\"type\":\"tool_use\",\"id\":\"toolu_1\",\"name\":\"Bash\","
			"\"input\":{\"command\":\"ls\"}}]},{\"role\":\"user\",\"content\":[{\"type\":\"tool_result\","
			"\"tool_use_id\":\"toolu_1\",\"content\":\"a b\"}]}]}";
	CHECK_RC(srv_parse_messages(a, strlen(a), 0, &r, &e), 0);
	char *p = render(&r);
	CHECK(p && strstr(p, want), "anthropic thinking: %s", p ? p : "(null)");
	free(p);
	srv_request_free(&r);
	const char *o = "{\"messages\":[{\"role\":\"user\",\"content\":\"list\"},{\"role\":\"assistant\","
			"\"content\":null,\"reasoning_content\":\"plan A\",\"tool_calls\":[{\"id\":\"call_1\","
			"\"type\":\"function\",\"function\":{\"name\":\"Bash\",\"arguments\":\"{\\\"command\\\":"
			"\\\"ls\\\"}\"}}]},{\"role\":\"tool\",\"tool_call_id\":\"call_1\",\"content\":\"a b\"}]}";
	CHECK_RC(srv_parse_chat(o, strlen(o), &r, &e), 0);
	p = render(&r);
	CHECK(p && strstr(p, want), "openai reasoning_content: %s", p ? p : "(null)");
	free(p);
	srv_request_free(&r);
	/* before the last user message the template drops it, as GLM-5's does */
	const char *old = "{\"messages\":[{\"role\":\"user\",\"content\":\"a\"},{\"role\":\"assistant\","
			  "\"content\":\"x\",\"reasoning_content\":\"old plan\"},{\"role\":\"user\",\"content\":\"b\"}]}";
	CHECK_RC(srv_parse_chat(old, strlen(old), &r, &e), 0);
	p = render(&r);
	CHECK(p && strstr(p, "<|assistant|></think>x<|user|>b") && !strstr(p, "old plan"), "older turn: %s",
	      p ? p : "(null)");
	free(p);
	srv_request_free(&r);
	/* content with its own </think> is kept as sent */
	const coli_chat_msg own[] = { { .role = "user", .content = "a" },
				      { .role = "assistant", .content = "<think>r</think>t", .reasoning_content = "other" } };
	int oom;
	coli_chat_msg *f = coli_chat_fold_reasoning(own, 2, &oom);
	CHECK(f && !oom && !strcmp(f[1].content, "<think>r</think>t") && !f[1].reasoning_content);
	coli_chat_fold_reasoning_free(f, own, 2);
	/* the parsed message keeps the reasoning apart (a checkpoint's own
	 * template reads reasoning_content): the content is the answer alone */
	CHECK_RC(srv_parse_chat(old, strlen(old), &r, &e), 0);
	CHECK(r.n_msgs == 3 && !strcmp(r.msgs[1].content, "x") && r.msgs[1].reasoning_content &&
	      !strcmp(r.msgs[1].reasoning_content, "old plan"));
	srv_request_free(&r);
	return test_summary(argv[0]);
}
