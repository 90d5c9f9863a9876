/* fuzz_request.c - libFuzzer target for what the HTTP endpoint reads from
 * clients and from the model: the OpenAI and Anthropic request parsers, the
 * chat templates that render what they accept, the error text built from
 * request bytes, and the tool-call markup parser.
 *
 * Input: SELECTOR BYTES. The low two bits of the selector pick the parser
 * (chat completions, completions, messages, count_tokens); BYTES is the
 * request body. Beyond "no crash, no leak, no UB" the target aborts when
 * an invariant breaks:
 *  - a refusal is a 4xx (5xx only for out of memory) whose message is
 *    valid UTF-8 and encodes as both APIs' error JSON;
 *  - an accepted request holds valid UTF-8 texts, at most SRV_MAX_STOP stop
 *    strings, logit_bias entries within -100..100, sampling values in range;
 *    every chat template family renders it (or refuses it with a message)
 *    into valid UTF-8;
 *  - srv_utf8_copy of the raw bytes is valid UTF-8 and fits its buffer;
 *  - tool calls parsed from the bytes as model output have a name and JSON
 *    arguments;
 *  - the bytes as a request head (server_head.c): passed, incomplete within
 *    the size limit, or refused with 400/413/414/431/505; a passed head
 *    passes alone, whatever followed it.
 *
 * Built by tests/fuzz/run-fuzz.sh (target request) with clang -fsanitize=fuzzer; the
 * same file is linked into tests/server_fuzz_corpus so the seed corpus runs
 * in `make check`. */
#include "config.h"

#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "chat_template.h"
#include "server_internal.h"

int fuzz_request_run(const uint8_t *data, size_t size, int *parse_rc);

static void check(int ok)
{
	if (!ok)
		abort();
}

static void check_text(const char *s)
{
	check(!s || srv_utf8_valid(s, strlen(s)));
}

static void check_refusal(const srv_error *e)
{
	check((e->status >= 400 && e->status < 500) ||
	      (e->status == 500 && strstr(e->message, "out of memory")));
	check(e->message[0] != '\0');
	check_text(e->message);
	char *o = srv_openai_error_json(e), *a = srv_anthropic_error_json(e);
	check(o && a);
	free(o);
	free(a);
}

/* enable_thinking -1: as each template decides */
static const coli_chat_template templates[] = {
	{ COLI_CHAT_DEEPSEEK_V3, "<\xef\xbd\x9c" "begin\xe2\x96\x81of\xe2\x96\x81sentence\xef\xbd\x9c>",
	  "<\xef\xbd\x9c" "end\xe2\x96\x81of\xe2\x96\x81sentence\xef\xbd\x9c>", -1, NULL, NULL, NULL },
	{ COLI_CHAT_DEEPSEEK_R1, "<s>", "</s>", -1, NULL, NULL, NULL },
	{ COLI_CHAT_GLM5, "[gMASK]<sop>", "<|endoftext|>", -1, NULL, NULL, NULL },
	{ COLI_CHAT_DEFAULT_MODEL, "<s>", "</s>", -1, NULL, NULL, NULL },
	{ COLI_CHAT_CHATML, "", "<|im_end|>", -1, NULL, NULL, NULL },
	{ COLI_CHAT_LLAMA3, "<|begin_of_text|>", "<|eot_id|>", -1, NULL, NULL, NULL },
	/* a checkpoint's own template, through the interpreter */
	{ COLI_CHAT_JINJA, "", "<|endoftext|>", -1,
	  "{%- for m in messages -%}<|{{ m.role }}|>{{ m.reasoning_content or '' }}{{ m.content | string | trim }}"
	  "{%- for tc in m.tool_calls or [] -%}<tool_call>{{ tc.function.name }}"
	  "{%- for k, v in (tc.function.arguments if tc.function.arguments is mapping else {}).items() -%}"
	  "<k>{{ k }}</k><v>{{ v if v is string else v | tojson }}</v>{%- endfor -%}</tool_call>{%- endfor -%}"
	  "{%- endfor -%}{%- if tools %}{{ tools | tojson(indent=1) }}{% endif -%}"
	  "{%- if add_generation_prompt %}<|assistant|>{% endif %}", NULL, NULL },
};

static void check_accepted(const srv_request *r)
{
	check(r->n_stop >= 0 && r->n_stop <= SRV_MAX_STOP && r->stop[r->n_stop] == NULL);
	for (int i = 0; i < r->n_stop; i++)
		check(r->stop[i] && r->stop[i][0] && srv_utf8_valid(r->stop[i], strlen(r->stop[i])));
	check(r->n_bias >= 0 && r->n_bias <= SRV_MAX_BIAS);
	for (int i = 0; i < r->n_bias; i++)
		check(r->bias_ids[i] >= 0 && r->bias[i] >= -100.0f && r->bias[i] <= 100.0f);
	check(r->temperature >= 0.0 && r->temperature <= 2.0 && r->top_p >= 0.0 && r->top_p <= 1.0);
	check(r->max_tokens >= 0);
	check_text(r->model);
	check_text(r->prompt);
	for (int i = 0; i < r->n_prompt_ids; i++)
		check(r->prompt_ids[i] >= 0);
	if (r->api == SRV_API_COMPLETIONS) {
		check((r->prompt != NULL) != (r->n_prompt_ids > 0));
		return;
	}
	check(r->n_msgs > 0 || r->api == SRV_API_MESSAGES || r->api == SRV_API_COUNT_TOKENS);
	for (int i = 0; i < r->n_msgs; i++) {
		check(r->msgs[i].role && r->msgs[i].content);
		check_text(r->msgs[i].content);
		check_text(r->msgs[i].tool_call_id);
	}
	if (r->tools_json) {
		json_t *t = json_loads(r->tools_json, 0, NULL);
		check(json_is_array(t));
		json_decref(t);
	}
	for (size_t f = 0; f < sizeof templates / sizeof templates[0]; f++) {
		char *out = NULL;
		coli_err err = { 0 };
		int rc = coli_chat_render(&templates[f], r->msgs, r->n_msgs, r->tools_json, 1, &out, &err);
		if (rc == 0) {
			check(out != NULL);
			check_text(out);
		} else {
			check(err.msg[0] != '\0' && out == NULL);
		}
		free(out);
	}
}

int fuzz_request_run(const uint8_t *data, size_t size, int *parse_rc)
{
	*parse_rc = 1;
	if (size < 1)
		return 0;
	const char *body = (const char *)data + 1;
	size_t len = size - 1;

	/* error text quoting request bytes */
	char small[40], big[400];
	size_t n = srv_utf8_copy(small, sizeof small, body, len);
	check(n < sizeof small && n == strlen(small) && srv_utf8_valid(small, n));
	n = srv_utf8_copy(big, sizeof big, body, len);
	check(n < sizeof big && n == strlen(big) && srv_utf8_valid(big, n));

	/* the same bytes as what a connection sends first: the front door's
	 * request head check (server_head.c) */
	srv_head h;
	srv_error he;
	memset(&he, 0, sizeof he);
	int hrc = srv_head_check(body, len, 1u << 20, &h, &he);
	check(hrc >= -1 && hrc <= 1);
	check(strlen(h.method) < sizeof h.method && strlen(h.path) < sizeof h.path);
	if (hrc == 1) {
		/* a head ends where it ends, whatever follows it */
		check(h.len > 0 && h.len <= len && h.len <= SRV_HEAD_MAX);
		srv_head h2;
		check(srv_head_check(body, h.len, 1u << 20, &h2, &he) == 1 && h2.len == h.len);
	} else if (hrc == 0) {
		check(len <= SRV_HEAD_MAX);
	} else {
		check(he.status == 400 || he.status == 413 || he.status == 414 || he.status == 431 ||
		      he.status == 505);
		if (he.status == 505) /* the one 5xx: the client's version */
			he.status = 400;
		check_refusal(&he);
	}

	/* the same bytes as model output with tool-call markup */
	srv_tool_call *calls = NULL;
	int nc = srv_tools_parse(body, len, &calls);
	for (int i = 0; i < nc; i++) {
		check(calls[i].name && calls[i].name[0] && calls[i].arguments);
	}
	srv_tools_free(calls, nc);

	srv_request r;
	srv_error e;
	memset(&e, 0, sizeof e);
	int rc;
	switch (data[0] & 3) {
	case 0: rc = srv_parse_chat(body, len, &r, &e); break;
	case 1: rc = srv_parse_completions(body, len, &r, &e); break;
	case 2: rc = srv_parse_messages(body, len, 0, &r, &e); break;
	default: rc = srv_parse_messages(body, len, 1, &r, &e); break;
	}
	*parse_rc = rc;
	if (rc == 0)
		check_accepted(&r);
	else
		check_refusal(&e);
	srv_request_free(&r);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	int rc;
	return fuzz_request_run(data, size, &rc);
}
