/* server_responses.h - the OpenAI Responses API (POST /v1/responses,
 * GET and DELETE /v1/responses/ID), shared by its files:
 *   server_responses.c         request body -> srv_resp (pure but for the
 *                              stored conversation it continues)
 *   server_responses_out.c     response objects and output items (pure)
 *   server_responses_stream.c  the route: generation, whole or streamed
 *   server_responses_store.c   stored responses: records, sessions, ids */
#ifndef COLI_SERVER_RESPONSES_H
#define COLI_SERVER_RESPONSES_H

#include <jansson.h>

#include "server_internal.h"

/* "resp_" + 32 hex digits from getrandom: 128 bits nobody can guess. */
#define SRV_RESP_ID_LEN 37

typedef struct srv_resp {
	srv_request req;           /* what the engine runs */
	char id[SRV_RESP_ID_LEN + 1];
	long long created;
	int store;                 /* keep it (default true, as OpenAI) */
	char prev_id[SRV_RESP_ID_LEN + 1]; /* previous_response_id, "" none */
	char prev_session[SRV_RESP_ID_LEN + 1]; /* its session, when on disk */
	json_t *echo;              /* request fields the response object echoes */
	json_t *items;             /* the conversation so far (input items,
	                            * instructions apart): stored for a later
	                            * previous_response_id */
	char model[256];           /* as answered */
} srv_resp;

void srv_resp_free(srv_resp *q);

/* Parse a request body. prev: the stored record named by
 * previous_response_id (NULL when none; srv_responses_parse_prev says
 * which it is). */
int srv_responses_parse(const char *body, size_t len, const json_t *prev, srv_resp *q, srv_error *e);
/* previous_response_id of a body, "" when absent (400 when not a string). */
int srv_responses_prev_id(const char *body, size_t len, char *out, size_t cap, srv_error *e);

/* Ids of the output items, chosen before the first event so the stream and
 * the final object agree. */
typedef struct srv_resp_ids {
	char rs[40], msg[40];
} srv_resp_ids;
void srv_resp_ids_make(srv_resp_ids *ids);
/* A function_call item's id, made from its call id ("call_X": "fc_X"), so
 * the stream names a call's item before the final object is built. */
void srv_resp_fc_id(char *out, size_t cap, const char *call_id);

/* "completed", "incomplete" or "failed" for a result. */
const char *srv_resp_status(const srv_result *r);
/* The output items of a result (reasoning, message, function calls). */
json_t *srv_resp_output(const srv_resp_ids *ids, const srv_result *r);
json_t *srv_resp_usage(const srv_usage *u);
/* The response object: status "in_progress" with no output when r is NULL. */
json_t *srv_resp_object(const srv_resp *q, const char *status, json_t *output, const srv_result *r);
char *srv_resp_error_json(const srv_error *e);

/* Stored responses (server_responses_store.c), under the engine's kv
 * directory as resp_ID.resp.json beside the session resp_ID.kv. */
int srv_resp_new_id(char *out, size_t cap); /* 0 or -errno (getrandom) */
/* The record of id: 0 and *rec, -ENOENT (404), other errors. */
int srv_resp_load(coli_server *s, const char *id, json_t **rec, srv_error *e);
/* Copy the session of `from` to `to` (a fresh name) so `to` continues it. */
int srv_resp_session_fork(coli_server *s, const char *from, const char *to, srv_error *e);
/* Write the record of a finished response (object + conversation). */
int srv_resp_save(coli_server *s, const srv_resp *q, json_t *object);
/* Remove a session that got no record (a failed stored response). */
void srv_resp_drop(coli_server *s, const char *id);

#endif
