/* chat_transcript.c - see chat_transcript.h. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "chat_think.h"
#include "chat_transcript.h"
#include "engine.h"
#include "kv_store.h"
#include "model_manifest.h"
#include "util_array.h"

static const char *const finish_names[] = { "", "stop", "length", "cancelled", "error" };

/* Names of enum coli_finish values as stored in "last_finish". */
static const char *chat_finish_name(int finish)
{
	return finish >= 0 && finish < 5 ? finish_names[finish] : "";
}

static int chat_finish_parse(const char *name)
{
	for (int k = 1; name && k < 5; k++)
		if (!strcmp(name, finish_names[k]))
			return k;
	return 0;
}

int chat_transcript_add(chat_transcript *t, const char *role, const char *text, size_t len)
{
	/* three parallel arrays, one capacity */
	int cap_m = t->cap, cap_r = t->cap, cap_rt = t->cap;
	if (util_array_grow(&t->msgs, &cap_m, t->n + 1, 16) ||
	    util_array_grow(&t->reasoning, &cap_r, t->n + 1, 16) ||
	    util_array_grow(&t->reasoning_tokens, &cap_rt, t->n + 1, 16))
		return -ENOMEM;
	t->cap = cap_rt;
	char *r = strdup(role), *c = malloc(len + 1);
	if (!r || !c) {
		free(r);
		free(c);
		return -ENOMEM;
	}
	memcpy(c, text, len);
	c[len] = '\0';
	memset(&t->msgs[t->n], 0, sizeof t->msgs[t->n]);
	t->msgs[t->n].role = r;
	t->msgs[t->n].content = c;
	t->reasoning[t->n] = NULL;
	t->reasoning_tokens[t->n] = 0;
	t->n++;
	return 0;
}

int chat_transcript_set_reasoning(chat_transcript *t, int i, const char *text, size_t len, int tokens)
{
	if (i < 0 || i >= t->n)
		return -EINVAL;
	char *r = malloc(len + 1);
	if (!r)
		return -ENOMEM;
	memcpy(r, text, len);
	r[len] = '\0';
	free(t->reasoning[i]);
	t->reasoning[i] = r;
	t->reasoning_tokens[i] = tokens;
	return 0;
}

/* A message from a file: the thinking stored beside the answer, or (an
 * old colitop, `coli chat`) inside it before "</think>". */
static int load_message(chat_transcript *t, const char *role, json_t *c, json_t *m)
{
	const char *text = json_string_value(c);
	size_t len = json_string_length(c);
	json_t *rc = json_object_get(m, "reasoning_content");
	const char *r = NULL, *a = NULL;
	size_t rlen = 0, alen = 0;
	if (json_is_string(rc)) {
		r = json_string_value(rc);
		rlen = json_string_length(rc);
	} else if (!strcmp(role, "assistant") && chat_think_split(text, len, &r, &rlen, &a, &alen)) {
		text = a;
		len = alen;
	}
	if (chat_transcript_add(t, role, text, len))
		return -ENOMEM;
	json_int_t tokens = json_integer_value(json_object_get(m, "reasoning_tokens"));
	if (r && chat_transcript_set_reasoning(t, t->n - 1, r, rlen,
					       tokens > 0 && tokens < (1 << 30) ? (int)tokens : 0))
		return -ENOMEM;
	return 0;
}

void chat_transcript_truncate(chat_transcript *t, int n)
{
	while (t->n > n && t->n > 0) {
		t->n--;
		free((char *)t->msgs[t->n].role);
		free((char *)t->msgs[t->n].content);
		free(t->reasoning[t->n]);
	}
}

void chat_transcript_free(chat_transcript *t)
{
	chat_transcript_truncate(t, 0);
	free(t->msgs);
	free(t->reasoning);
	free(t->reasoning_tokens);
	memset(t, 0, sizeof *t);
}

int chat_transcript_load(const char *kv_dir, const char *session, chat_transcript *t, coli_err *err)
{
	char path[4400];
	json_t *root = NULL;
	memset(t, 0, sizeof *t);
	int rc = kv_store_path(kv_dir, session, "chat.json", path, sizeof path, err);
	if (rc)
		return rc;
	FILE *f = fopen(path, "r");
	if (!f)
		return 0;
	fclose(f);
	if ((rc = manifest_load(path, &root, err)))
		return rc;
	const char *fmt = json_string_value(json_object_get(root, "format"));
	json_t *msgs = json_object_get(root, "messages");
	if (!fmt || strcmp(fmt, "colitop-chat") || json_integer_value(json_object_get(root, "version")) != 1 ||
	    !json_is_array(msgs)) {
		json_decref(root);
		return coli_err_set(err, -EPROTONOSUPPORT, "%s: not a version 1 colitop-chat transcript", path);
	}
	t->last_finish = chat_finish_parse(json_string_value(json_object_get(root, "last_finish")));
	size_t i;
	json_t *m;
	json_array_foreach(msgs, i, m) {
		const char *role = json_string_value(json_object_get(m, "role"));
		json_t *c = json_object_get(m, "content");
		if (!role || !json_is_string(c))
			continue;
		if (load_message(t, role, c, m)) {
			json_decref(root);
			chat_transcript_free(t);
			return coli_err_set(err, -ENOMEM, "out of memory");
		}
	}
	json_decref(root);
	return 0;
}

int chat_transcript_save(const char *kv_dir, const char *session, const chat_transcript *t,
			 coli_err *err)
{
	char path[4400];
	int rc = kv_store_path(kv_dir, session, "chat.json", path, sizeof path, err);
	if (rc)
		return rc;
	json_t *root = json_object(), *arr = json_array();
	if (!root || !arr) {
		json_decref(root);
		json_decref(arr);
		return coli_err_set(err, -ENOMEM, "out of memory");
	}
	json_object_set_new(root, "format", json_string("colitop-chat"));
	json_object_set_new(root, "version", json_integer(1));
	json_object_set_new(root, "session", json_string(session));
	json_object_set_new(root, "last_finish", json_string(chat_finish_name(t->last_finish)));
	for (int i = 0; i < t->n; i++) {
		json_t *m = json_object();
		json_object_set_new(m, "role", json_string(t->msgs[i].role));
		/* the engine only emits valid UTF-8; jansson refuses anything else */
		json_t *c = json_string(t->msgs[i].content);
		json_object_set_new(m, "content", c ? c : json_string(""));
		if (t->reasoning[i]) {
			json_t *r = json_string(t->reasoning[i]);
			json_object_set_new(m, "reasoning_content", r ? r : json_string(""));
			if (t->reasoning_tokens[i] > 0)
				json_object_set_new(m, "reasoning_tokens", json_integer(t->reasoning_tokens[i]));
		}
		json_array_append_new(arr, m);
	}
	json_object_set_new(root, "messages", arr);
	rc = manifest_save(path, root, err);
	json_decref(root);
	return rc;
}
