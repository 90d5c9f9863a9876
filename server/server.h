/* server.h - the HTTP endpoint (OpenAI- and Anthropic-compatible).
 *
 * One server per engine. libmicrohttpd runs its own threads (one per
 * connection); they only parse JSON into native requests, submit them to
 * the engine's queue and format the events that come back. All JSON stays in
 * this layer; the engine never sees it. `coli serve` runs it headless,
 * colitop runs the same server in-process next to the TUI.
 *
 * Routes (each with and without the /v1 prefix): GET /models, GET
 * /models/ID, POST /chat/completions, POST /completions, POST /messages,
 * POST /messages/count_tokens, GET /health, GET /metrics; OPTIONS anywhere
 * (CORS preflight). See coli-serve(1) for the field compatibility list. */
#ifndef COLI_SERVER_H
#define COLI_SERVER_H

#include <stddef.h>
#include <stdint.h>

#include "coli_err.h"
#include "engine.h"

typedef struct coli_server coli_server;
struct expert_stats;

/* One finished HTTP request, for a host program's log (colitop's Log
 * pane). Called on a libmicrohttpd thread once the response is sent (a
 * stream: once it ended); the pointers live only during the call. */
typedef struct coli_server_event {
	const char *client;        /* "127.0.0.1:54321", "[::1]:54321" */
	const char *method, *url;
	int status;                /* HTTP status sent; 0 when none was */
	int completed;             /* 0: the client went away or the server stopped */
	int prompt_tokens, completion_tokens;   /* 0 for routes that generate nothing */
	double seconds;            /* from the request's arrival to its end */
} coli_server_event;

typedef struct coli_server_opts {
	const char *host;          /* NULL = "127.0.0.1"; IPv4 or IPv6 literal, or a name */
	int port;                  /* 0 = pick a free port (see coli_server_port) */
	const char *api_key;       /* NULL/"" = no key; the value, never the env name */
	size_t max_body;           /* request body limit in bytes; 0 = 4 MiB */
	int timeout_s;             /* idle connection timeout (slow clients); 0 = 30 */
	/* Time a connection has to deliver a complete request (headers and
	 * body), however it trickles in; 0 = 30. See server_guard.c. */
	int request_timeout_s;
	int max_connections;       /* 0 = 64 */
	/* On stop, in-flight requests get this long to finish before they are
	 * cut short (each with a final error event, or a 503). */
	int shutdown_grace_ms;     /* default 5000; 0 = none */
	int ignore_eos;            /* generate to max_tokens (benchmarks, tests) */
	const char *model_dir;     /* for the accepted model aliases; may be NULL */
	/* More names the model answers to (--alias; NULL-terminated, may be
	 * NULL); listed by /v1/models. "*" makes the OpenAI routes accept any
	 * name, as the Anthropic routes always do. */
	const char *const *aliases;
	int any_model;             /* the same as an alias "*" (coli batch) */
	/* Expert-store telemetry for /metrics; NULL = the engine's own
	 * (coli_engine_expert_stats). */
	const struct expert_stats *expert_stats;
	/* Told about every request when it ends; NULL = nobody. */
	void (*on_event)(void *opaque, const coli_server_event *ev);
	void *event_opaque;
} coli_server_opts;

void coli_server_opts_default(coli_server_opts *o);

/* Start listening. The engine must outlive the server. Returns 0 or a
 * negative errno (bind failure: -EADDRINUSE etc.) with err filled. */
int coli_server_start(coli_engine *e, const coli_server_opts *o, coli_server **out,
		      coli_err *err);
/* The same server without a listening socket, for answering requests
 * in-process (coli batch): coli_server_answer is its only entry. Free it
 * with coli_server_stop. */
int coli_server_new_offline(coli_engine *e, const coli_server_opts *o, coli_server **out,
			    coli_err *err);
/* Answer one POST request body exactly as the HTTP route PATH (with or
 * without /v1) answers it, except that it is never streamed ("stream" is
 * ignored). Blocks until the generation ends; any thread, several at once
 * (they are decoded together in the engine's slots). On 0, *status is the
 * HTTP status and *body (malloc'd) the JSON the server would send, an error
 * object for a 4xx/5xx. -ECANCELED after coli_server_interrupt, -ENOMEM. */
int coli_server_answer(coli_server *s, const char *path, const char *body, size_t len,
		       int *status, char **out);
/* Cancel in-flight coli_server_answer calls (they return -ECANCELED) and
 * refuse new ones; the server stays allocated. Safe from any thread. */
void coli_server_interrupt(coli_server *s);
/* The bound port (useful with port 0). */
int coli_server_port(const coli_server *s);

/* 1 when host is a loopback address (127.0.0.0/8, ::1) or "localhost":
 * binding elsewhere without an API key deserves a warning. */
int coli_server_host_is_loopback(const char *host);
/* Drain and stop: quiesce, give in-flight requests the shutdown grace, then
 * stop the rest (a stream ends with an error event and [DONE], a waiting
 * client gets 503), let those answers go out (bounded), join the threads,
 * free. NULL ok. */
void coli_server_stop(coli_server *s);

#endif
