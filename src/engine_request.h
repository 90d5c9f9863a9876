/* engine_request.h - a request and its event channel (private to engine*.c).
 *
 * The channel is a fixed ring allocated with the request: the engine
 * thread pushes, one consumer thread pops.
 *
 * The reader rule, the same for every consumer (HTTP connections,
 * colitop's chat, coli generate/chat/batch): the engine thread never waits
 * for a reader; a reader that falls behind costs only its own request.
 * What it costs is the submitter's choice (params.cancel_when_stalled):
 *
 *  - a network reader (cancel_when_stalled: HTTP), which may have gone
 *    for good and holds a slot others queue for: when its ring is full,
 *    text merges into the newest unread TEXT event; when that is full too
 *    (about COLI_REQ_RING events plus one event's text unread) the
 *    request is cancelled, `overflowed` set;
 *  - an in-process reader (colitop's chat, coli generate/chat/batch: a
 *    pager, a terminal on Ctrl-S, a batch output pipe), which only lags:
 *    before its slot steps, engine_request_room asks whether its ring has
 *    room for all one step can push (ENGINE_STEP_EVENTS: a draft's tokens
 *    and the end's flush); without it the slot is paused, skipped by the
 *    step as a slot whose session is being saved is, keeping its KV and
 *    state while the others step. The reader's next pop wakes the engine
 *    (engine_wake_for_reader) and the slot goes on with the tokens it
 *    would have had unpaused. */
#ifndef COLI_ENGINE_REQUEST_H
#define COLI_ENGINE_REQUEST_H

#include <pthread.h>
#include <stdatomic.h>

#include "engine.h"

#define COLI_REQ_RING 64
/* Events one step may push for one slot: COLI_DRAFT_MAX drafts and the
 * next token, then the text the end flushes (the last event is apart). */
#define ENGINE_STEP_EVENTS (COLI_DRAFT_MAX + 2)
_Static_assert(ENGINE_STEP_EVENTS < COLI_REQ_RING, "a step's events fit in the ring");
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
	char label[64];                /* routing profile label, "" for none */
	double submit_time;            /* seconds, CLOCK_MONOTONIC */
	pthread_mutex_t lock;
	pthread_cond_t cond;
	coli_event ring[COLI_REQ_RING];
	int head, count;               /* guarded by lock */
	int finished;                  /* the last event was pushed */
	int paused;                    /* guarded by lock: the engine skips the
	                                * slot until the reader pops */
	struct coli_engine *wake;      /* guarded by lock: the engine to wake
	                                * when a pop unpauses; NULL once the
	                                * slot let the request go */
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
/* Engine side, before a slot steps: the reader rule above. Returns 1 when
 * the slot may step (room for `need` events, or a network reader, whose
 * push merges or cancels), 0 when it is paused (its reader's next pop
 * wakes e). */
int engine_request_room(coli_request *r, struct coli_engine *e, int need);
/* The slot lets the request go: no pop wakes the engine any more. */
void engine_request_detach(coli_request *r);
double engine_now(void);

#endif
