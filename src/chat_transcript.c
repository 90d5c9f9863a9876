/* chat_transcript.c - see chat_transcript.h. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "chat_transcript.h"
#include "engine.h"
#include "kv_store.h"
#include "manifest.h"

static const char *const finish_names[] = { "", "stop", "length", "cancelled", "error" };

const char *chat_finish_name(int finish)
{
	return finish >= 0 && finish < 5 ? finish_names[finish] : "";
}

int chat_finish_parse(const char *name)
{
	for (int k = 1; name && k < 5; k++)
		if (!strcmp(name, finish_names[k]))
			return k;
	return 0;
}

int chat_transcript_add(chat_transcript *t, const char *role, const char *text, size_t len)
{
	if (t->n == t->cap) {
		int cap = t->cap ? t->cap * 2 : 16;
		coli_chat_msg *m = realloc(t->msgs, sizeof *m * (size_t)cap);
		if (!m)
			return -ENOMEM;
		t->msgs = m;
		t->cap = cap;
	}
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
	t->n++;
	return 0;
}

void chat_transcript_truncate(chat_transcript *t, int n)
{
	while (t->n > n && t->n > 0) {
		t->n--;
		free((char *)t->msgs[t->n].role);
		free((char *)t->msgs[t->n].content);
	}
}

void chat_transcript_free(chat_transcript *t)
{
	chat_transcript_truncate(t, 0);
	free(t->msgs);
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
		if (chat_transcript_add(t, role, json_string_value(c), json_string_length(c))) {
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
		json_array_append_new(arr, m);
	}
	json_object_set_new(root, "messages", arr);
	rc = manifest_save(path, root, err);
	json_decref(root);
	return rc;
}
