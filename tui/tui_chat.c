/* tui_chat.c - see tui_chat.h. */
#include "config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "chat_transcript.h"
#include "coli_log.h"
#include "kv_store.h"
#include "tui_chat.h"
#include "util_array.h"
#include "util_time.h"

static const char *const role_names[] = { "user", "assistant", "note", "error" };

static tui_msg *msg_add(tui_chat *c, int role, const char *s, size_t n)
{
	if (util_array_grow(&c->msgs, &c->cap, c->n + 1, 16))
		return NULL;
	tui_msg *m = &c->msgs[c->n];
	memset(m, 0, sizeof *m);
	m->role = role;
	if (util_buf_add(&m->text, s, n))
		return NULL;
	c->n++;
	c->version++;
	return m;
}

void tui_chat_note(tui_chat *c, int role, const char *fmt, ...)
{
	char buf[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	msg_add(c, role, buf, strlen(buf));
}

void tui_chat_default_name(char *out, size_t cap)
{
	time_t t = time(NULL);
	struct tm tm;
	localtime_r(&t, &tm);
	strftime(out, cap, "chat-%Y%m%d-%H%M%S", &tm);
}

static int load_sidecar(tui_chat *c, coli_err *err)
{
	chat_transcript t;
	int rc = chat_transcript_load(c->kv_dir, c->session, &t, err);
	if (rc)
		return rc;
	c->last_finish = t.last_finish;
	for (int i = 0; i < t.n; i++) {
		int r = TUI_MSG_NOTE;   /* system prompts and unknown roles show as notes */
		for (int k = 0; k < 4; k++)
			if (!strcmp(t.msgs[i].role, role_names[k]))
				r = k;
		tui_msg *m = msg_add(c, r, t.msgs[i].content, strlen(t.msgs[i].content));
		if (m && t.reasoning[i]) {
			m->has_think = 1;
			m->think_tokens = t.reasoning_tokens[i];
			util_buf_add(&m->think, t.reasoning[i], strlen(t.reasoning[i]));
		}
	}
	chat_transcript_free(&t);
	return 0;
}

int tui_chat_open(tui_chat *c, const char *kv_dir, const char *session, int kv_tokens,
		  coli_err *err)
{
	unsigned long turns = c->turns;
	memset(c, 0, sizeof *c);
	c->turns = turns;
	snprintf(c->kv_dir, sizeof c->kv_dir, "%s", kv_dir);
	int rc = kv_store_name_check(session, err);
	if (rc)
		return rc;
	snprintf(c->session, sizeof c->session, "%s", session);
	c->kv_tokens = kv_tokens;
	return load_sidecar(c, err);
}

void tui_chat_close(tui_chat *c)
{
	if (c->req) {
		coli_request_cancel(c->req);
		/* let the engine end the turn so the session file is consistent */
		coli_event ev;
		while (c->req && coli_request_next(c->req, &ev, 1000) == 1 && ev.kind == COLI_EV_TEXT)
			;
		tui_chat_poll(c);
		if (c->req) {
			coli_request_free(c->req);
			c->req = NULL;
		}
	}
	coli_err err = { 0 };
	if ((c->n || c->kv_tokens) && tui_chat_save(c, &err))
		coli_warn("%s", err.msg);
	for (int i = 0; i < c->n; i++) {
		util_buf_free(&c->msgs[i].text);
		util_buf_free(&c->msgs[i].think);
	}
	free(c->msgs);
	chat_think_free(&c->think);
	c->msgs = NULL;
	c->n = c->cap = 0;
}

int tui_chat_save(const tui_chat *c, coli_err *err)
{
	chat_transcript t;
	memset(&t, 0, sizeof t);
	t.last_finish = c->last_finish;
	for (int i = 0; i < c->n; i++) {
		const tui_msg *m = &c->msgs[i];
		if (chat_transcript_add(&t, role_names[m->role & 3], m->text.p, m->text.len) ||
		    (m->has_think && chat_transcript_set_reasoning(&t, t.n - 1, m->think.p ? m->think.p : "",
								    m->think.len, m->think_tokens))) {
			chat_transcript_free(&t);
			return coli_err_set(err, -ENOMEM, "out of memory");
		}
	}
	int rc = chat_transcript_save(c->kv_dir, c->session, &t, err);
	chat_transcript_free(&t);
	return rc;
}

int tui_chat_send(tui_chat *c, coli_engine *e, const coli_chat_template *tpl, const char *text,
		  const coli_gen_params *base, coli_err *err)
{
	char *prompt = NULL;
	int *ids = NULL;
	size_t n_ids = 0;
	int rc;
	if (c->req)
		return coli_err_set(err, -EBUSY, "an answer is still being generated (Esc stops it)");
	int has_history = c->kv_tokens > 0;
	int unfinished = c->last_finish && c->last_finish != COLI_FINISH_STOP;
	coli_chat_msg m = { .role = "user", .content = text };
	if ((rc = coli_chat_render_turn(tpl, &m, 1, has_history, unfinished, &prompt, err)))
		goto out;
	if ((rc = coli_tokenizer_encode(coli_engine_tokenizer(e), prompt, strlen(prompt), &ids, &n_ids,
					err)))
		goto out;
	coli_gen_params p = *base;
	p.session = c->session;
	c->t_submit = coli_now_s();
	if ((rc = coli_engine_submit(e, ids, (int)n_ids, &p, &c->req, err)))
		goto out;
	msg_add(c, TUI_MSG_USER, text, strlen(text));
	tui_msg *a = msg_add(c, TUI_MSG_ASSISTANT, "", 0);
	/* GLM-5 opens the thinking block in the prompt; DeepSeek-R1 lets the
	 * model open it */
	chat_think_free(&c->think);
	chat_think_init(&c->think, coli_chat_opens_thinking(prompt));
	if (a)
		a->has_think = chat_think_inside(&c->think);
	c->n_streamed = 0;
	c->t_first = 0;
	c->have_stats = 0;
out:
	free(prompt);
	free(ids);
	return rc;
}

/* The splitter's output: into the last message when it is the answer. */
static void think_sink(void *ctx, int reasoning, const char *s, size_t n)
{
	tui_chat *c = ctx;
	tui_msg *m = c->n ? &c->msgs[c->n - 1] : NULL;
	if (!m || m->role != TUI_MSG_ASSISTANT)
		return;
	if (reasoning) {
		m->has_think = 1;
		util_buf_add(&m->think, s, n);
	} else {
		util_buf_add(&m->text, s, n);
	}
}

int tui_chat_poll(tui_chat *c)
{
	int changed = 0;
	coli_event ev;
	/* a bounded batch per frame keeps the UI responsive under fast decode */
	for (int k = 0; c->req && k < 256 && coli_request_next(c->req, &ev, 0) == 1; k++) {
		changed = 1;
		tui_msg *m = c->n ? &c->msgs[c->n - 1] : NULL;
		if (ev.kind == COLI_EV_TEXT) {
			if (!c->n_streamed++)
				c->t_first = coli_now_s();
			if (m && m->role == TUI_MSG_ASSISTANT) {
				/* a token that starts inside the block is thinking
				 * (the one that closes it included, as the server
				 * counts reasoning tokens) */
				if (chat_think_inside(&c->think)) {
					m->has_think = 1;
					m->think_tokens++;
				}
				if (ev.text_len)
					chat_think_push(&c->think, ev.text, ev.text_len, think_sink, c);
			}
			c->version++;
			continue;
		}
		c->turns++;
		chat_think_flush(&c->think, think_sink, c);
		if (ev.kind == COLI_EV_DONE) {
			c->last_finish = ev.finish;
			c->have_stats = 1;
			c->ttft_ms = ev.ttft_ms;
			c->tps = ev.decode_tps;
			c->prompt_tokens = ev.prompt_tokens;
			c->cached_tokens = ev.cached_tokens;
			c->completion_tokens = ev.completion_tokens;
			/* the session now holds the prompt and (most of) the answer */
			c->kv_tokens = ev.prompt_tokens + ev.completion_tokens;
			/* a DONE with a message: the answer is whole but the session
			 * file could not be written (disk full, I/O error) */
			snprintf(c->save_err, sizeof c->save_err, "%.200s", ev.message);
		} else {
			c->last_finish = COLI_FINISH_ERROR;
			msg_add(c, TUI_MSG_ERROR, ev.message, strlen(ev.message));
		}
		coli_request_free(c->req);
		c->req = NULL;
		c->version++;
		coli_err err = { 0 };
		if (tui_chat_save(c, &err)) {
			coli_warn("%s", err.msg);
			if (!c->save_err[0])
				snprintf(c->save_err, sizeof c->save_err, "%.200s", err.msg);
		}
	}
	return changed;
}

void tui_chat_stop(tui_chat *c)
{
	if (c->req)
		coli_request_cancel(c->req);
}

int tui_chat_busy(const tui_chat *c)
{
	return c->req != NULL;
}

int tui_chat_has_think(const tui_chat *c)
{
	for (int i = 0; i < c->n; i++)
		if (c->msgs[i].has_think)
			return 1;
	return 0;
}
