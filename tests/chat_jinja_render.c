/* chat_jinja_render.c - renders conversations with a template file through
 * coli_chat_render, as the server and coli chat do, for
 * tests/chat_template_conformance.sh to compare with python3-jinja2.
 * usage: chat_jinja_render TEMPLATE CASES.json; CASES is an array of
 * {"messages", "tools", "add_generation_prompt", "chat_template_kwargs",
 * "bos_token", "eos_token"}; prints one JSON line per case:
 * {"text": ...} or {"error": ...}. */
#include "config.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chat_template.h"

static char *read_all(const char *path)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	fseek(f, 0, SEEK_SET);
	char *s = malloc((size_t)n + 1);
	if (s && fread(s, 1, (size_t)n, f) != (size_t)n) {
		free(s);
		s = NULL;
	}
	if (s)
		s[n] = '\0';
	fclose(f);
	return s;
}

static char *dump_or_null(json_t *v)
{
	return v && !json_is_null(v) ? json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY) : NULL;
}

static json_t *render_case(const char *src, json_t *cs)
{
	json_t *jm = json_object_get(cs, "messages");
	int n = (int)json_array_size(jm);
	coli_chat_msg *msgs = calloc((size_t)n + 1, sizeof *msgs);
	coli_chat_template tpl = { .family = COLI_CHAT_JINJA, .jinja = src, .enable_thinking = -1 };
	tpl.bos_text = json_string_value(json_object_get(cs, "bos_token"));
	tpl.eos_text = json_string_value(json_object_get(cs, "eos_token"));
	char *kw = dump_or_null(json_object_get(cs, "chat_template_kwargs"));
	char *tools = dump_or_null(json_object_get(cs, "tools"));
	tpl.kwargs_json = kw;
	for (int i = 0; i < n; i++) {
		json_t *m = json_array_get(jm, (size_t)i);
		msgs[i].role = json_string_value(json_object_get(m, "role"));
		msgs[i].content = json_string_value(json_object_get(m, "content"));
		msgs[i].reasoning_content = json_string_value(json_object_get(m, "reasoning_content"));
		msgs[i].tool_call_id = json_string_value(json_object_get(m, "tool_call_id"));
		msgs[i].name = json_string_value(json_object_get(m, "name"));
		msgs[i].tool_calls_json = dump_or_null(json_object_get(m, "tool_calls"));
	}
	coli_err err = { 0 };
	char *text = NULL;
	json_t *agp = json_object_get(cs, "add_generation_prompt");
	json_t *res;
	if (coli_chat_render(&tpl, msgs, n, tools, agp ? json_is_true(agp) : 1, &text, &err) < 0)
		res = json_pack("{s:s}", "error", err.msg);
	else
		res = json_pack("{s:s}", "text", text);
	free(text);
	for (int i = 0; i < n; i++)
		free((char *)msgs[i].tool_calls_json);
	free(msgs);
	free(kw);
	free(tools);
	return res;
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: chat_jinja_render TEMPLATE CASES.json\n");
		return 2;
	}
	char *src = read_all(argv[1]);
	json_error_t je;
	json_t *cases = json_load_file(argv[2], 0, &je);
	if (!src || !json_is_array(cases)) {
		fprintf(stderr, "chat_jinja_render: cannot read %s or %s\n", argv[1], argv[2]);
		return 1;
	}
	size_t i;
	json_t *cs;
	json_array_foreach(cases, i, cs) {
		json_t *r = render_case(src, cs);
		char *line = json_dumps(r, JSON_COMPACT | JSON_ENSURE_ASCII);
		puts(line ? line : "{\"error\":\"out of memory\"}");
		free(line);
		json_decref(r);
	}
	json_decref(cases);
	free(src);
	return 0;
}
