/* engine_test.h - what the C tests that drive a coli_engine share: a
 * request read to its end (its text, or its token ids), the small engine
 * they open, and the log lines they wait for. Header-only, like
 * test_util.h (one test program is one file, so the log buffer below is
 * that program's). */
#ifndef COLI_ENGINE_TEST_H
#define COLI_ENGINE_TEST_H

#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "coli_log.h"
#include "engine.h"
#include "test_util.h"

/* Read r to its end; the text into buf (cut at cap), the last event into
 * *last. -1 when it never ends: minutes without an event is a hang, not
 * a slow machine. */
static inline int test_drain_text(coli_request *r, char *buf, size_t cap, coli_event *last)
{
	size_t n = 0;
	coli_event ev;
	for (;;) {
		if (!coli_request_next(r, &ev, 300 * 1000))
			return -1;
		if (ev.kind == COLI_EV_TEXT) {
			if (n + ev.text_len < cap) {
				memcpy(buf + n, ev.text, ev.text_len);
				n += ev.text_len;
			}
			continue;
		}
		buf[n] = '\0';
		*last = ev;
		return 0;
	}
}

#define TEST_TURN_MAX_TOK 256

/* A request and the token ids read from it so far. */
typedef struct {
	const char *session;
	coli_request *r;
	int tok[TEST_TURN_MAX_TOK];
	int n;
	coli_event last;
} test_turn;

/* Read up to `upto` tokens (0: to the end, when the request is freed and
 * t->r cleared). -1 when it stalls for minutes, as above. */
static inline int test_turn_drain(test_turn *t, int upto)
{
	coli_event ev;
	while (t->r) {
		if (upto && t->n >= upto)
			return 0;
		if (!coli_request_next(t->r, &ev, 300 * 1000))
			return -1;
		if (ev.kind == COLI_EV_TEXT) {
			if (t->n < TEST_TURN_MAX_TOK)
				t->tok[t->n++] = ev.token;
			continue;
		}
		t->last = ev;
		coli_request_free(t->r);
		t->r = NULL;
	}
	return 0;
}

/* Submit a greedy turn of up to max tokens on `session` (NULL: none), every
 * token an event, and read up to `upto` tokens (0: to the end; < 0: just
 * submit), checking both. */
static inline void test_turn_go(coli_engine *e, const char *session, const int *prompt, int n, int max,
				test_turn *t, int upto)
{
	coli_gen_params p;
	coli_gen_params_default(&p);
	p.ignore_eos = 1;
	p.every_token = 1;
	p.max_tokens = max;
	p.session = session;
	coli_err err = { 0 };
	memset(t, 0, sizeof *t);
	t->session = session;
	CHECK(coli_engine_submit(e, prompt, n, &p, &t->r, &err) == 0, "submit %s: %s",
	      session ? session : "(none)", err.msg);
	if (t->r && upto >= 0)
		CHECK(test_turn_drain(t, upto) == 0, "%s never ended", session ? session : "(none)");
}

/* A turn whose session read the writer holds (COLI_FAULT_KV_RESUME_WAIT
 * names `hold`; test builds): check it has no event yet, then release the
 * read by creating `hold`. */
static inline void test_turn_release(test_turn *t, const char *hold)
{
	coli_event ev;
	CHECK(t->r && !coli_request_next(t->r, &ev, 0), "%s went on while its read was held",
	      t->session ? t->session : "(none)");
	FILE *f = fopen(hold, "w");
	CHECK(f != NULL, "create %s", hold);
	if (f)
		fclose(f);
}

/* An engine of `parallel` slots of ctx tokens (kv_ram 0: all in RAM) on
 * one thread; NULL after printing why. */
static inline coli_engine *test_engine_open(const char *model, const char *cache, int parallel, int ctx, int kv_ram)
{
	coli_engine_opts o;
	coli_engine_opts_default(&o);
	o.model_dir = model;
	o.cache_dir = cache;
	o.parallel = parallel;
	o.ctx = ctx;
	o.kv_ram = kv_ram;
	o.threads = 1;
	coli_err err = { 0 };
	coli_engine *e = NULL;
	if (coli_engine_new(&o, &e, &err))
		fprintf(stderr, "engine: %s\n", err.msg);
	return e;
}

/* The log lines that contain a filter string, kept for test_logged (the
 * filter keeps the buffer small; the engine's threads log too). */
static pthread_mutex_t test_log_mu = PTHREAD_MUTEX_INITIALIZER;
static char test_log_buf[1 << 16];
static size_t test_log_len;
static const char *test_log_filter;

static inline void test_log_sink(void *opaque, int level, const char *line)
{
	(void)opaque;
	(void)level;
	if (test_log_filter && !strstr(line, test_log_filter))
		return;
	pthread_mutex_lock(&test_log_mu);
	size_t n = strlen(line);
	if (test_log_len + n + 2 < sizeof test_log_buf) {
		memcpy(test_log_buf + test_log_len, line, n);
		test_log_buf[test_log_len + n] = '\n';
		test_log_len += n + 1;
		test_log_buf[test_log_len] = '\0';
	}
	pthread_mutex_unlock(&test_log_mu);
}

/* Keep the lines containing `filter` (NULL: all), debug level on. */
static inline void test_log_capture(const char *filter)
{
	test_log_filter = filter;
	coli_log_set_sink(test_log_sink, NULL);
	coli_log_set_level(COLI_LOG_DEBUG);
}

static inline int test_logged(const char *what)
{
	pthread_mutex_lock(&test_log_mu);
	int found = strstr(test_log_buf, what) != NULL;
	pthread_mutex_unlock(&test_log_mu);
	return found;
}

static inline void test_log_reset(void)
{
	pthread_mutex_lock(&test_log_mu);
	test_log_len = 0;
	test_log_buf[0] = '\0';
	pthread_mutex_unlock(&test_log_mu);
}

#endif
