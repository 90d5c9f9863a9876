/* engine_request.c - request lifetime and the per-request event channel. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "engine_internal.h"
#include "engine_request.h"
#include "grammar.h"
#include "util_time.h"

double engine_now(void)
{
	return coli_now_s();
}

int engine_request_new(const int *prompt, int n, const coli_gen_params *p, coli_grammar *grammar,
		       coli_request **out, coli_err *err)
{
	coli_request *r = calloc(1, sizeof *r);
	if (!r) {
		grammar_free(grammar);
		return coli_err_set(err, -ENOMEM, "out of memory");
	}
	r->grammar = grammar;
	int rc;
	r->prompt = malloc(sizeof(int) * (size_t)(n > 0 ? n : 1));
	if (!r->prompt)
		goto oom;
	memcpy(r->prompt, prompt, sizeof(int) * (size_t)n);
	r->n_prompt = n;
	r->params = *p;
	int ns = 0;
	for (; p->stop && p->stop[ns]; ns++) {
		if (ns == COLI_MAX_STOP) {
			rc = coli_err_set(err, -EINVAL, "at most %d stop sequences are supported", COLI_MAX_STOP);
			goto fail;
		}
		if (!(r->stop[ns] = strdup(p->stop[ns])))
			goto oom;
	}
	r->params.stop = (const char *const *)r->stop;
	if (p->session && !(r->session = strdup(p->session)))
		goto oom;
	r->params.session = r->session;
	snprintf(r->label, sizeof r->label, "%s", p->label ? p->label : "");
	r->params.label = r->label[0] ? r->label : NULL;
	r->params.bias_ids = NULL;
	r->params.bias = NULL;
	r->params.n_bias = 0;
	if (p->n_bias > 0) {
		r->bias_ids = malloc(sizeof(int) * (size_t)p->n_bias);
		r->bias = malloc(sizeof(float) * (size_t)p->n_bias);
		if (!r->bias_ids || !r->bias)
			goto oom;
		memcpy(r->bias_ids, p->bias_ids, sizeof(int) * (size_t)p->n_bias);
		memcpy(r->bias, p->bias, sizeof(float) * (size_t)p->n_bias);
		r->params.bias_ids = r->bias_ids;
		r->params.bias = r->bias;
		r->params.n_bias = p->n_bias;
	}
	/* the grammar is compiled: the schema text is not kept */
	r->params.grammar = r->grammar;
	r->params.json_schema = NULL;
	atomic_init(&r->refs, 2);
	atomic_init(&r->cancelled, 0);
	atomic_init(&r->cached, -1);
	pthread_mutex_init(&r->lock, NULL);
	pthread_cond_init(&r->cond, NULL);
	r->submit_time = engine_now();
	*out = r;
	return 0;
oom:
	rc = coli_err_set(err, -ENOMEM, "out of memory");
fail:
	for (int i = 0; i < COLI_MAX_STOP; i++)
		free(r->stop[i]);
	free(r->session);
	free(r->bias_ids);
	free(r->bias);
	free(r->prompt);
	grammar_free(r->grammar);
	free(r);
	return rc;
}

void engine_request_unref(coli_request *r)
{
	if (!r || atomic_fetch_sub(&r->refs, 1) != 1)
		return;
	pthread_mutex_destroy(&r->lock);
	pthread_cond_destroy(&r->cond);
	for (int i = 0; i < COLI_MAX_STOP; i++)
		free(r->stop[i]);
	free(r->session);
	free(r->bias_ids);
	free(r->bias);
	grammar_free(r->grammar);
	free(r->prompt);
	free(r);
}

void engine_request_push_text(coli_request *r, int token, const char *text, size_t len)
{
	engine_request_push_token(r, token, text, len, NULL);
}

void engine_request_push_token(coli_request *r, int token, const char *text, size_t len,
			       const coli_logprob *lp)
{
	pthread_mutex_lock(&r->lock);
	if (r->count < COLI_REQ_RING) {
		coli_event *ev = &r->ring[(r->head + r->count) % COLI_REQ_RING];
		memset(ev, 0, sizeof *ev);
		ev->kind = COLI_EV_TEXT;
		ev->token = token;
		if (len >= sizeof ev->text)
			len = sizeof ev->text - 1;
		memcpy(ev->text, text, len);
		ev->text[len] = '\0';
		ev->text_len = len;
		if (lp) {
			ev->has_logprob = 1;
			ev->lp = *lp;
		}
		r->count++;
	} else {
		/* only a network reader (cancel_when_stalled) gets here; an
		 * in-process one was paused first (engine_request_room). The
		 * text merges into the newest event (not a token with log-
		 * probabilities, nor for a reader of token ids); when that is
		 * full too the reader has stopped, and the request ends as
		 * overflowed, its slot freed for the others */
		coli_event *tail = &r->ring[(r->head + r->count - 1) % COLI_REQ_RING];
		if (!lp && !r->params.every_token && tail->text_len + len < sizeof tail->text) {
			memcpy(tail->text + tail->text_len, text, len);
			tail->text_len += len;
			tail->text[tail->text_len] = '\0';
			tail->token = token;
		} else {
			atomic_store(&r->overflowed, 1);
			atomic_store(&r->cancelled, 1);
		}
	}
	pthread_cond_broadcast(&r->cond);
	pthread_mutex_unlock(&r->lock);
}

int engine_request_room(coli_request *r, coli_engine *e, int need)
{
	int ok = 1;
	pthread_mutex_lock(&r->lock);
	/* a network reader is never paused: its push merges, then ends it */
	if (!r->params.cancel_when_stalled && COLI_REQ_RING - r->count < need) {
		r->paused = 1;
		r->wake = e;
		ok = 0;
	}
	pthread_mutex_unlock(&r->lock);
	return ok;
}

void engine_request_detach(coli_request *r)
{
	pthread_mutex_lock(&r->lock);
	r->paused = 0;
	r->wake = NULL;
	pthread_mutex_unlock(&r->lock);
}

void engine_request_finish(coli_request *r, const coli_event *ev)
{
	pthread_mutex_lock(&r->lock);
	r->last = *ev;
	r->finished = 1;
	r->paused = 0;
	r->wake = NULL;
	pthread_cond_broadcast(&r->cond);
	pthread_mutex_unlock(&r->lock);
}

int coli_request_next(coli_request *r, coli_event *ev, int timeout_ms)
{
	int got = 0;
	pthread_mutex_lock(&r->lock);
	struct timespec until;
	if (timeout_ms >= 0) {
		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_sec += timeout_ms / 1000;
		until.tv_nsec += (long)(timeout_ms % 1000) * 1000000;
		if (until.tv_nsec >= 1000000000) {
			until.tv_sec++;
			until.tv_nsec -= 1000000000;
		}
	}
	for (;;) {
		if (r->count > 0) {
			*ev = r->ring[r->head];
			r->head = (r->head + 1) % COLI_REQ_RING;
			r->count--;
			got = 1;
			pthread_cond_broadcast(&r->cond);
			if (r->paused && COLI_REQ_RING - r->count >= ENGINE_STEP_EVENTS) {
				/* the slot can step again. The engine is alive: its
				 * slot still holds r (detach clears wake under this
				 * lock), and the engine never takes a request's lock
				 * while holding its own */
				r->paused = 0;
				engine_wake_for_reader(r->wake);
			}
			break;
		}
		if (r->finished) {
			*ev = r->last;
			got = 1;
			break;
		}
		if (timeout_ms < 0)
			pthread_cond_wait(&r->cond, &r->lock);
		else if (pthread_cond_timedwait(&r->cond, &r->lock, &until) == ETIMEDOUT)
			break;
	}
	pthread_mutex_unlock(&r->lock);
	return got;
}

int coli_request_cached_tokens(coli_request *r)
{
	return r ? atomic_load(&r->cached) : -1;
}

void coli_request_cancel(coli_request *r)
{
	if (!r)
		return;
	atomic_store(&r->cancelled, 1);
	pthread_mutex_lock(&r->lock);
	pthread_cond_broadcast(&r->cond);
	pthread_mutex_unlock(&r->lock);
}

void coli_request_free(coli_request *r)
{
	if (!r)
		return;
	coli_request_cancel(r);
	engine_request_unref(r);
}
