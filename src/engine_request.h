/* engine_request.h - a request and its event channel (private to engine*.c).
 *
 * The channel is a fixed ring allocated at admission: the engine thread
 * pushes, one consumer thread pops. When the consumer falls behind, text is
 * merged into the newest unread TEXT event. When that is full too (about
 * COLI_REQ_RING events plus one event's text unread), the consumer has
 * stopped reading: a request with params.cancel_when_stalled is cancelled
 * (`overflowed` set) so one stalled network client never stalls the other
 * slots; otherwise the engine waits for its reader (bounded by
 * cancellation). */
#ifndef COLI_ENGINE_REQUEST_H
#define COLI_ENGINE_REQUEST_H

#include <pthread.h>
#include <stdatomic.h>

#include "engine.h"

#define COLI_REQ_RING 64
#define COLI_MAX_STOP 8

struct coli_request {
	atomic_int refs;               /* engine + client */
	atomic_int cancelled;
	atomic_int overflowed;         /* cancelled because the consumer stopped reading */
	atomic_int cached;             /* prompt tokens from the cache; -1 until admitted */
	int *prompt;
	int n_prompt;
	coli_gen_params params;
	char *stop[COLI_MAX_STOP + 1]; /* owned copies, NULL-terminated */
	char *session;                 /* owned copy or NULL */
	int *bias_ids;                 /* owned copies of params.bias_ids/bias */
	float *bias;
	struct coli_grammar *grammar;  /* structured output (a reference) or NULL */
	double submit_time;            /* seconds, CLOCK_MONOTONIC */
	pthread_mutex_t lock;
	pthread_cond_t cond;
	coli_event ring[COLI_REQ_RING];
	int head, count;               /* guarded by lock */
	int finished;                  /* the last event was pushed */
	coli_event last;               /* DONE/ERROR, replayed after the ring drains */
};

/* grammar: the request's compiled grammar or NULL; the request owns the
 * reference, success or not. */
int engine_request_new(const int *prompt, int n, const coli_gen_params *p, struct coli_grammar *grammar,
		       coli_request **out, coli_err *err);
void engine_request_unref(coli_request *r);
/* Engine side: push text (merged when the ring is full). */
void engine_request_push_text(coli_request *r, int token, const char *text, size_t len);
/* The same for a token with its log-probabilities (lp may be NULL). */
void engine_request_push_token(coli_request *r, int token, const char *text, size_t len,
			       const coli_logprob *lp);
void engine_request_finish(coli_request *r, const coli_event *ev);
double engine_now(void);

#endif
