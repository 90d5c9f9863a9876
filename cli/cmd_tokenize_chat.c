/* cmd_tokenize_chat.c - `coli tokenize --chat FILE`: render an
 * OpenAI-shaped conversation ({"messages":[...], "tools":[...],
 * "add_generation_prompt":bool}) or an array of them with the model's chat
 * template and tokenize it; prints {"text":...,"ids":[...]} per line.
 * Messages may carry reasoning_content; "chat_template_kwargs" (an object)
 * passes variables to the checkpoint's own template. */
#include "config.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chat_template.h"
#include "cli.h"
#include "cli_print.h"
#include "tokenizer.h"

int tokenize_chat(const coli_tokenizer *t, const char *path, const char *model_type, int gen_prompt);

static char *dump_or_null(json_t *v)
{
	return v && !json_is_null(v) ? json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY) : NULL;
}

/* One conversation object; prints one line. */
static int chat_one(const coli_tokenizer *t, const char *path, json_t *root, const char *model_type,
		    int gen_prompt)
{
	coli_err err = { 0 };
	int status = COLI_EXIT_FAIL, n = 0;
	coli_chat_msg *msgs = NULL;
	char *tools = NULL, *text = NULL, *kwargs = NULL;
	int *ids = NULL;
	size_t n_ids;
	json_t *jm = json_object_get(root, "messages");
	if (!json_is_array(jm)) {
		cli_errorf("tokenize", "--chat %s: needs {\"messages\": [...]}", path);
		goto out;
	}
	json_t *agp = json_object_get(root, "add_generation_prompt");
	if (json_is_boolean(agp))
		gen_prompt = json_is_true(agp);
	n = (int)json_array_size(jm);
	msgs = calloc((size_t)n + 1, sizeof *msgs);
	if (!msgs)
		goto out;
	for (int i = 0; i < n; i++) {
		json_t *m = json_array_get(jm, (size_t)i);
		msgs[i].role = json_string_value(json_object_get(m, "role"));
		msgs[i].content = json_string_value(json_object_get(m, "content"));
		msgs[i].tool_call_id = json_string_value(json_object_get(m, "tool_call_id"));
		msgs[i].name = json_string_value(json_object_get(m, "name"));
		msgs[i].reasoning_content = json_string_value(json_object_get(m, "reasoning_content"));
		msgs[i].tool_calls_json = dump_or_null(json_object_get(m, "tool_calls"));
		if (!msgs[i].role) {
			cli_errorf("tokenize", "--chat %s: messages[%d] has no role", path, i);
			goto out;
		}
	}
	tools = dump_or_null(json_object_get(root, "tools"));
	coli_chat_template tpl;
	kwargs = dump_or_null(json_object_get(root, "chat_template_kwargs"));
	int detected = coli_chat_template_detect(t, model_type, &tpl, &err);
	tpl.kwargs_json = kwargs;
	if (detected < 0 ||
	    coli_chat_render(&tpl, msgs, n, tools, gen_prompt, &text, &err) < 0 ||
	    coli_tokenizer_encode(t, text, strlen(text), &ids, &n_ids, &err) < 0) {
		cli_errorf("tokenize", "--chat %s: %s", path, err.msg);
		goto out;
	}
	json_t *o = json_pack("{s:s}", "text", text);
	json_t *ja = json_array();
	for (size_t i = 0; i < n_ids; i++)
		json_array_append_new(ja, json_integer(ids[i]));
	json_object_set_new(o, "ids", ja);
	if (!cli_print_json(o, JSON_COMPACT | JSON_ENSURE_ASCII))
		status = COLI_EXIT_OK;
out:
	for (int i = 0; msgs && i < n; i++)
		free((char *)msgs[i].tool_calls_json);
	free(msgs);
	free(tools);
	free(kwargs);
	free(text);
	free(ids);
	return status;
}

int tokenize_chat(const coli_tokenizer *t, const char *path, const char *model_type, int gen_prompt)
{
	json_error_t je;
	json_t *root = json_load_file(path, 0, &je);
	if (!root) {
		cli_errorf("tokenize", "--chat %s:%d: %s", path, je.line, je.text);
		return COLI_EXIT_FAIL;
	}
	int status = COLI_EXIT_OK;
	if (json_is_array(root)) {
		/* several conversations, one output line each */
		size_t i;
		json_t *c;
		json_array_foreach(root, i, c)
			if ((status = chat_one(t, path, c, model_type, gen_prompt)) != COLI_EXIT_OK)
				break;
	} else {
		status = chat_one(t, path, root, model_type, gen_prompt);
	}
	json_decref(root);
	return status;
}
