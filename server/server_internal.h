/* server_internal.h - types shared by the server's files (not a contract).
 *
 * Split by concern:
 *   server_util.c       growable buffer, error values, ids
 *   server_parse.c      OpenAI JSON -> srv_request (pure)
 *   server_anthropic.c  Anthropic JSON <-> native (pure)
 *   server_openai.c     native results -> OpenAI JSON / SSE (pure)
 *   server_stop.c       stop strings and tool-call markup in the output (pure)
 *   server_gen.c        one generation: submit, wait, cancel on disconnect
 *   server_handlers.c   the routes
 *   server_http.c       libmicrohttpd plumbing: routing, auth, CORS, limits
 *   server_metrics.c    Prometheus counters and histograms
 *   server_guard.c      request deadlines and the connection reserve
 *   server_head.c       request head checks before libmicrohttpd (pure)
 *   server_door.c       the listening socket: accept, check the head, hand over
 *   server_tool_choice.c  tool_choice, the same for every API: forced calls
 *   server_toolcall.c   tool calls parsed as they are generated (pure) */
#ifndef COLI_SERVER_INTERNAL_H
#define COLI_SERVER_INTERNAL_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include <sys/socket.h>
#include <sys/types.h>

#include "chat_template.h"
#include "chat_think.h"
#include "engine.h"
#include "server.h"
#include "util_buf.h"

/* ---- an HTTP-level error, formatted per API family at the edge ---- */
typedef struct srv_error {
	int status;          /* HTTP status */
	char type[48];       /* "invalid_request_error", ... */
	char code[48];       /* "" = null */
	char param[64];      /* "" = null */
	char message[400];
} srv_error;

/* Fill e and return -EINVAL. code/param may be NULL. */
int srv_fail(srv_error *e, int status, const char *type, const char *code, const char *param,
	     const char *fmt, ...) __attribute__((format(printf, 6, 7)));

/* Random-looking unique id: prefix + 24 hex digits. */
void srv_make_id(char *out, size_t cap, const char *prefix);
int srv_utf8_valid(const char *s, size_t n);
/* Copy src[0..n) into dst (cap bytes, NUL-terminated) as valid UTF-8:
 * invalid bytes and control characters become the text \xNN, and a
 * character that does not fit is dropped whole, never cut. Returns the
 * length written. */
size_t srv_utf8_copy(char *dst, size_t cap, const char *src, size_t n);

/* ---- native request ---- */
enum srv_api { SRV_API_CHAT = 1, SRV_API_COMPLETIONS, SRV_API_MESSAGES, SRV_API_COUNT_TOKENS,
	SRV_API_RESPONSES };

#define SRV_MAX_STOP 16
#define SRV_MAX_BIAS 1024      /* logit_bias entries */

typedef struct srv_request {
	int api;
	char *model;               /* as sent; NULL when absent */
	coli_chat_msg *msgs;       /* strings owned (freed by srv_request_free) */
	int n_msgs;
	char *tools_json;          /* OpenAI-style tools array, or NULL */
	char *prompt;              /* completions: text prompt */
	int *prompt_ids;           /* completions: token ids instead */
	int n_prompt_ids;
	int max_tokens;            /* 0 = up to the context */
	double temperature, top_p;
	uint64_t seed;
	int has_seed;
	int draft;                 /* extension "draft": COLI_DRAFT_* or N */
	char *stop[SRV_MAX_STOP + 1]; /* NULL-terminated */
	int n_stop;
	int stream, include_usage;
	int *bias_ids;             /* logit_bias token ids (checked < vocab at submit) */
	float *bias;               /* ... and their biases, -100..100 */
	int n_bias;
	int in_process;            /* not from the body: set by coli_server_answer,
	                            * whose own thread reads every event, so a
	                            * full ring pauses its slot rather than
	                            * cancelling it (engine_request.h) */
	char *json_schema;         /* constrain the answer to this schema (JSON text) */
	struct coli_grammar *grammar; /* ... compiled once while parsing (a
	                            * reference, grammar.h): the engine gets
	                            * it, never the text to compile again */
	int json_object;           /* constrain the answer to a JSON object */
	char *forced_tool;         /* the answer is this tool's arguments (json_schema
	                            * holds its parameters) returned as its call */
	int logprobs, top_logprobs;/* OpenAI logprobs (chat: logprobs + top_logprobs,
	                            * completions: logprobs N) */
	int enable_thinking;       /* -1 template default, 0 off, 1 on (OpenAI
	                            * chat_template_kwargs.enable_thinking,
	                            * Anthropic thinking.type) */
	int show_thinking;         /* Anthropic: thinking blocks asked for */
	char *template_kwargs;     /* chat_template_kwargs as JSON text, or NULL */
	int think_open;            /* set by the handler: the prompt opened a
	                            * thinking block */
	int no_parallel_tools;     /* parallel_tool_calls: false */
	char *session;             /* KV session to run in (stored responses) */
	char *label;               /* extension metadata.label: the routing
	                            * profile label (engine_profile.h) */
	int session_whole;         /* ... the prompt is the whole conversation
	                            * (coli_gen_params.session_whole) */
	/* tool_choice, one representation for every API (OpenAI chat,
	 * Anthropic messages, /v1/responses). A parser sets these and then
	 * calls srv_tool_choice_apply(), which needs tools_json set:
	 *   tool_choice       SRV_TOOLS_AUTO (0, default), _NONE (no tools
	 *                     rendered or parsed), _REQUIRED (some tool must
	 *                     be called: OpenAI "required", Anthropic "any"),
	 *                     _NAMED (tool_choice_name must be called);
	 *   tool_choice_name  the tool of _NAMED (owned);
	 *   one_call          at most one call in the answer (OpenAI
	 *                     parallel_tool_calls false, Anthropic
	 *                     disable_parallel_tool_use true). */
	int tool_choice;
	char *tool_choice_name;
	int one_call;
	int forced_pick;           /* set by srv_tool_choice_apply: the answer
	                            * is {"NAME": arguments} for one of the
	                            * tools (json_schema holds that union) */
} srv_request;

enum { SRV_TOOLS_AUTO = 0, SRV_TOOLS_NONE, SRV_TOOLS_REQUIRED, SRV_TOOLS_NAMED };
/* server_tool_choice.c: apply r->tool_choice to r->tools_json: NONE drops
 * the tools; NAMED and REQUIRED compile the grammar that forces the call
 * (a 400 naming the tool when its schema is outside the subset, or when no
 * tool fits). Tools merely offered (AUTO) are never compiled. */
int srv_tool_choice_apply(srv_request *r, srv_error *e);

void srv_request_free(srv_request *r);
/* Shared by the parsers: fields with the same meaning in both APIs. */
struct json_t;
int srv_parse_load(const char *body, size_t len, struct json_t **root, srv_error *e);
int srv_parse_sampling(struct json_t *root, srv_request *r, double max_temp, srv_error *e);
int srv_parse_stop(struct json_t *v, const char *param, srv_request *r, srv_error *e);
/* A 400 "'param' must be WANT" (invalid_type), a 500 out of memory. */
int srv_bad_type(srv_error *e, const char *param, const char *want);
int srv_oom(srv_error *e);
/* Message content as text: a string or an array of text parts joined by
 * newlines (refusals dropped); null is "" with SRV_CONTENT_NULL, else
 * missing. SRV_CONTENT_RESPONSES: the Responses API's part types too. */
enum { SRV_CONTENT_NULL = 1, SRV_CONTENT_RESPONSES = 2 };
int srv_parse_content(struct json_t *c, const char *param, int flags, char **out, srv_error *e);
/* Log (debug) the top-level fields not in the NULL-terminated known list. */
void srv_log_ignored(struct json_t *root, const char *const *known);
/* server_structured.c: response_format (OpenAI), and a forced tool looked
 * up by name in an OpenAI-style tools array (param names the field). */
int srv_parse_response_format(struct json_t *root, srv_request *r, srv_error *e);
/* chat: logprobs (boolean) + top_logprobs 0..20; completions: logprobs N. */
int srv_parse_logprobs(struct json_t *root, int chat, srv_request *r, srv_error *e);
int srv_force_tool(struct json_t *tools, const char *name, const char *param, srv_request *r, srv_error *e);
int srv_parse_chat(const char *body, size_t len, srv_request *r, srv_error *e);
int srv_parse_completions(const char *body, size_t len, srv_request *r, srv_error *e);
/* Anthropic /v1/messages; count_only for /v1/messages/count_tokens (max_tokens optional). */
int srv_parse_messages(const char *body, size_t len, int count_only, srv_request *r, srv_error *e);

/* ---- generation results ---- */
enum srv_finish {
	SRV_FINISH_NONE = 0, SRV_FINISH_STOP, SRV_FINISH_LENGTH, SRV_FINISH_STOP_SEQ,
	SRV_FINISH_TOOL, SRV_FINISH_CANCELLED, SRV_FINISH_ERROR,
	SRV_FINISH_SHUTDOWN,       /* cut short by the server stopping */
};

typedef struct srv_usage {
	int prompt, completion, cached;
	int reasoning;             /* of completion: tokens inside the thinking block */
} srv_usage;

typedef struct srv_tool_call {
	char id[40];
	char *name;
	char *arguments;           /* JSON object text */
} srv_tool_call;

typedef struct srv_result {
	const char *text;
	size_t len;
	int finish;                /* enum srv_finish */
	const char *stop_seq;      /* the matched stop string (STOP_SEQ) */
	srv_usage usage;
	srv_tool_call *calls;
	int n_calls;
	/* log-probabilities of the tokens (NULL unless requested) */
	const coli_logprob *lp;
	const int *lp_tok;         /* (n_lp) the token of each entry */
	int n_lp;
	const coli_tokenizer *tok; /* token ids -> bytes for the entries */
	int want_lp;               /* logprobs were requested */
	const char *reasoning;     /* the thinking, split out (may be NULL) */
	size_t reasoning_len;
	int show_thinking;         /* Anthropic: include thinking blocks */
} srv_result;

/* ---- stop strings and tool-call markup in the generated text ---- */
typedef struct srv_stopper {
	const char *const *stops;  /* NULL-terminated, may be NULL */
	int tools;                 /* watch for tool-call markup */
	util_buf held;              /* text that may be the start of a stop/marker */
	int hit;                   /* index of the matched stop, -1 */
	int capturing;             /* inside tool-call markup */
	util_buf markup;            /* captured markup */
} srv_stopper;

void srv_stopper_init(srv_stopper *s, const char *const *stops, int tools);
void srv_stopper_free(srv_stopper *s);
/* Feed generated text; safe text is appended to out. Returns 1 once a stop
 * string matched (out holds the text before it), else 0. */
int srv_stopper_push(srv_stopper *s, const char *text, size_t len, util_buf *out);
/* End of generation: release held text to out. */
void srv_stopper_flush(srv_stopper *s, util_buf *out);
/* Parse captured tool-call markup (DeepSeek V3/V3.1, GLM, ChatML forms).
 * Returns the number of calls (0 when none could be parsed). */
int srv_tools_parse(const char *markup, size_t len, srv_tool_call **calls);
void srv_tools_free(srv_tool_call *calls, int n);

/* ---- tool calls parsed while generated (server_toolcall.c) ---- */
enum { SRV_TC_MARKUP = 0, SRV_TC_FORCED, SRV_TC_PICK };
enum { SRV_TC_FMT_NONE = 0, SRV_TC_FMT_OWN, SRV_TC_FMT_OTHER };

typedef struct srv_tc_call {
	char id[40];
	char *name;
	util_buf args;              /* the JSON arguments so far (only grows) */
	int done;                  /* args is the whole object */
	/* the stream's bookkeeping (srv_tc_stream) */
	int announced, closed;
	size_t sent;
} srv_tc_call;

typedef struct srv_tcparse {
	int mode;                  /* SRV_TC_* */
	int fmt;                   /* SRV_TC_FMT_*: OTHER = left to srv_tools_parse */
	int max_calls;             /* 0: any number */
	char prefix[8];            /* of the call ids: "call_", "toolu_" */
	struct json_t *tools;      /* OpenAI-style tools: the parameter types */
	util_buf in;                /* bytes not yet consumed */
	util_buf tmp;               /* a key, or a non-string value */
	int state, n_args, val_string;
	int depth, in_str, esc;    /* PICK: the arguments object */
	srv_tc_call *calls;
	int n_calls;
} srv_tcparse;

void srv_tc_init(srv_tcparse *p, int mode, const char *tools_json, const char *forced, int max_calls,
		 const char *id_prefix);
void srv_tc_free(srv_tcparse *p);
/* Feed tool-call markup (MARKUP), or the answer (FORCED, PICK). */
void srv_tc_feed(srv_tcparse *p, const char *s, size_t n);
/* End of generation: an open call is closed. */
void srv_tc_finish(srv_tcparse *p);
/* A call begun by hand (NULL past max_calls). */
srv_tc_call *srv_tc_begin(srv_tcparse *p, const char *name, size_t n);
/* Calls parsed elsewhere (srv_tools_parse), added as done. */
void srv_tc_adopt(srv_tcparse *p, const srv_tool_call *calls, int n);
/* Copies of the done calls; returns their number. */
int srv_tc_take(srv_tcparse *p, srv_tool_call **out);
/* The calls as far as they are parsed, to a stream: each announced once
 * (start returns the non-zero tag kept in c->announced: an index of the
 * stream's own), its arguments as they grow (whole UTF-8 characters),
 * ended once whole; a call after an unfinished one waits. Used by the
 * chat, Messages and Responses streams alike. */
typedef struct srv_tc_sink {
	void *ctx;
	int (*start)(void *ctx, int i, srv_tc_call *c);
	void (*args)(void *ctx, int i, srv_tc_call *c, const char *p, size_t n);
	void (*end)(void *ctx, int i, srv_tc_call *c);
} srv_tc_sink;
void srv_tc_stream(srv_tcparse *p, const srv_tc_sink *k);

/* ---- reasoning split out of the answer (chat_think.h; server_think.c
 * routes it into the reasoning and answer buffers) ---- */
typedef chat_think srv_think;
static inline void srv_think_init(srv_think *t, int open) { chat_think_init(t, open); }
static inline void srv_think_free(srv_think *t) { chat_think_free(t); }
static inline int srv_think_inside(const srv_think *t) { return chat_think_inside(t); }
void srv_think_push(srv_think *t, const char *text, size_t len, util_buf *reasoning, util_buf *answer);
void srv_think_flush(srv_think *t, util_buf *reasoning, util_buf *answer);

/* ---- formatting: OpenAI ---- */
typedef struct srv_stream_ctx {
	char id[64];
	long long created;
	char model[256];
	int chat;                  /* 1 chat.completion.chunk, 0 text_completion */
} srv_stream_ctx;

char *srv_openai_response(const srv_stream_ctx *c, const srv_result *r);
int srv_openai_chunk_role(util_buf *b, const srv_stream_ctx *c);
int srv_openai_chunk_text(util_buf *b, const srv_stream_ctx *c, const char *text, size_t len);
/* A chat chunk whose delta is reasoning_content. */
int srv_openai_chunk_reasoning(util_buf *b, const srv_stream_ctx *c, const char *text, size_t len);
/* logprobs of entries [from, r->n_lp) of r (server_logprobs.c); for
 * completions text_offset is the offset of entry `from` in the text. */
struct json_t *srv_logprobs_json(const srv_result *r, int chat, int from, size_t text_offset);
/* The same with the log-probabilities of entries [from, r->n_lp) of r. */
int srv_openai_chunk_text_lp(util_buf *b, const srv_stream_ctx *c, const char *text, size_t len,
			     const srv_result *r, int from);
int srv_openai_chunk_finish(util_buf *b, const srv_stream_ctx *c, const srv_result *r);
int srv_openai_chunk_usage(util_buf *b, const srv_stream_ctx *c, const srv_usage *u);
int srv_openai_chunk_error(util_buf *b, const char *type, const char *message);
int srv_sse_done(util_buf *b);
char *srv_openai_error_json(const srv_error *e);
/* The list of /v1/models: ids[0..n). */
char *srv_openai_models_json(const char *const *ids, int n, long long created);

/* Streamed tool calls: the first chunk of call i (id, name, empty
 * arguments), then pieces of its arguments. */
int srv_openai_chunk_tool_start(util_buf *b, const srv_stream_ctx *c, int i, const srv_tc_call *call);
int srv_openai_chunk_tool_args(util_buf *b, const srv_stream_ctx *c, int i, const char *s, size_t n);

/* ---- formatting: Anthropic ---- */
char *srv_anthropic_response(const srv_stream_ctx *c, const srv_result *r);
int srv_anthropic_ev_start(util_buf *b, const srv_stream_ctx *c, const srv_usage *u);
int srv_anthropic_ev_block_start_thinking(util_buf *b, int index);
int srv_anthropic_ev_thinking(util_buf *b, int index, const char *text, size_t len);
int srv_anthropic_ev_signature(util_buf *b, int index);
int srv_anthropic_ev_block_start_text(util_buf *b, int index);
int srv_anthropic_ev_ping(util_buf *b);
int srv_anthropic_ev_text(util_buf *b, int index, const char *text, size_t len);
int srv_anthropic_ev_block_stop(util_buf *b, int index);
int srv_anthropic_ev_tool_use(util_buf *b, int index, const srv_tool_call *call);
/* A tool_use block streamed: its start, then input_json_delta pieces. */
int srv_anthropic_ev_tool_start(util_buf *b, int index, const char *id, const char *name);
int srv_anthropic_ev_tool_delta(util_buf *b, int index, const char *s, size_t n);
int srv_anthropic_ev_delta(util_buf *b, const srv_result *r);
int srv_anthropic_ev_stop(util_buf *b);
int srv_anthropic_ev_error(util_buf *b, const char *type, const char *message);
char *srv_anthropic_error_json(const srv_error *e);

/* ---- metrics ---- */
enum srv_route {
	SRV_ROUTE_MODELS = 0, SRV_ROUTE_CHAT, SRV_ROUTE_COMPLETIONS, SRV_ROUTE_MESSAGES,
	SRV_ROUTE_COUNT_TOKENS, SRV_ROUTE_HEALTH, SRV_ROUTE_METRICS, SRV_ROUTE_OTHER,
	SRV_ROUTE_RESPONSES,       /* POST /v1/responses */
	SRV_ROUTE_RESPONSE_ID,     /* GET, DELETE /v1/responses/ID */
	SRV_ROUTE_COUNT,
};
#define SRV_N_STATUS 12
#define SRV_TTFT_BUCKETS 12
#define SRV_TPS_BUCKETS 10

typedef struct srv_metrics {
	_Atomic uint64_t requests[SRV_ROUTE_COUNT][SRV_N_STATUS];
	_Atomic uint64_t tokens_in, tokens_out, cached_tokens;
	_Atomic uint64_t ttft_hist[SRV_TTFT_BUCKETS + 1]; /* + Inf */
	_Atomic uint64_t ttft_sum_us, ttft_count;
	_Atomic uint64_t tps_hist[SRV_TPS_BUCKETS + 1];
	_Atomic uint64_t tps_sum_milli, tps_count;
	_Atomic uint64_t cancelled, rejected_busy;
	_Atomic uint64_t conn_timed_out, conn_evicted;   /* server_guard.c */
	_Atomic int active_streams;
} srv_metrics;

void srv_metrics_request(srv_metrics *m, int route, int status);
void srv_metrics_generation(srv_metrics *m, const srv_usage *u, double ttft_ms, double tps);
/* Prometheus text exposition; caller frees. queue_len < 0 = unknown. */
char *srv_metrics_render(const srv_metrics *m, int queue_len, const struct expert_stats *st);
/* Append the speculative-decoding series to rendered text (consumed). */
char *srv_metrics_with_draft(char *text, const coli_draft_stats *ds);
/* ... and the engine step's series (rows per step, running, queued, KV). */
char *srv_metrics_with_steps(char *text, const coli_step_stats *st);

/* ---- one generation against the engine ---- */
typedef struct srv_gen {
	coli_request *req;
	const coli_tokenizer *tok;
	srv_stopper st;
	int fd;                    /* client socket, for disconnect checks; -1 none */
	atomic_int *stopping;      /* server shutting down */
	int n_prompt;
	int n_out;                 /* TEXT events consumed */
	int finish;
	srv_usage usage;
	double ttft_ms, tps;
	char errmsg[512];
	int keepalive_ms;          /* > 0: return idle after this long without events */
	int idle;                  /* the last srv_gen_next returned for keepalive */
	int done, gone, started;
	int shutdown;              /* cancelled because the server stops */
	srv_tool_call *calls;
	int n_calls;
	const char *forced_tool;   /* the whole answer is this tool's arguments */
	srv_tcparse tc;            /* tool calls as they are generated */
	size_t tc_fed;             /* bytes of st.markup fed to tc */
	int want_lp;               /* collect log-probabilities */
	coli_logprob *lp;          /* (cap_lp) one per sampled token */
	int *lp_tok;
	int n_lp, cap_lp;
	int lp_sent;               /* entries already streamed */
	/* reasoning split out of chat answers */
	int think;                 /* split (chat routes) */
	srv_think th;
	util_buf answer;            /* scratch: this piece's answer part */
	util_buf reason_step;       /* reasoning of the latest srv_gen_next */
	util_buf reason_all;        /* all the reasoning */
	int reasoning_tokens;
} srv_gen;

/* Render/tokenize is done by the caller; this submits and initialises g.
 * Returns 0 or a negative errno with e filled (503 busy, 400 context). */
int srv_gen_start(srv_gen *g, coli_engine *eng, const int *ids, int n_ids,
		  const srv_request *r, int ignore_eos, int fd, atomic_int *stopping, srv_error *e);
/* Wait for more output: appends safe text to out. Returns 1 while running
 * (with g->idle set when keepalive_ms passed without an event),
 * 0 when finished (g->finish set; SRV_FINISH_SHUTDOWN when the server
 * stopped it), -1 when the client went away (the request was cancelled). */
int srv_gen_next(srv_gen *g, util_buf *out);
void srv_gen_free(srv_gen *g);
void srv_gen_result(const srv_gen *g, const srv_request *r, const char *text, size_t len,
		    srv_result *out);

/* ---- request heads (server_head.c, pure) ---- */
/* Below what libmicrohttpd holds in CONN_MEMORY (server_http.c). */
#define SRV_HEAD_MAX 16384     /* request line + header fields, bytes */
#define SRV_TARGET_MAX 8192    /* the request target, bytes */
#define SRV_FIELDS_MAX 100     /* header fields */
#define SRV_PARAMS_MAX 100     /* query parameters */

/* Body framing headers seen so far. */
typedef struct srv_framing {
	int n_cl, cl_conflict, cl_bad, n_te, te_ok;
	char cl[32];               /* the Content-Length digits */
} srv_framing;
void srv_framing_add(srv_framing *f, const char *name, size_t nlen, const char *value, size_t vlen);
/* 0 or fills e (400): bad or conflicting lengths, an unsupported coding. */
int srv_framing_check(const srv_framing *f, srv_error *e);

typedef struct srv_head {
	size_t len;                /* bytes up to and including the empty line */
	char method[24];
	char path[128];            /* the target up to '?', cut to fit */
} srv_head;
/* Check the first n bytes a connection sent (all there is so far; more
 * than SRV_HEAD_MAX means the head cannot fit). Returns 1 when a complete
 * head is valid, 0 when more bytes are needed, -1 with e filled (400, 413,
 * 414, 431, 505). h->method and h->path are filled as far as parsed. */
int srv_head_check(const char *buf, size_t n, size_t max_body, srv_head *h, srv_error *e);
/* Errors for this target take the Anthropic shape (/v1/messages...). */
int srv_head_anthropic(const srv_head *h);

/* ---- request deadlines and the connection reserve (server_guard.c) ---- */
typedef struct srv_guard srv_guard;
typedef struct srv_watch srv_watch;

/* soft_limit: connections before the oldest waiting one is evicted;
 * timeout_s: time to deliver a complete request. */
int srv_guard_start(srv_guard **out, int soft_limit, int timeout_s, srv_metrics *m, coli_err *err);
void srv_guard_stop(srv_guard *g);
/* A connection opened (fd: its socket); NULL when it cannot be watched. */
srv_watch *srv_guard_open(srv_guard *g, int fd);
void srv_guard_close(srv_guard *g, srv_watch *w);
/* Connections watched (open, or cut and not yet closed). */
int srv_guard_count(srv_guard *g);
/* The front door hands w's socket to libmicrohttpd ... */
void srv_guard_handing(srv_guard *g, srv_watch *w);
/* ... whose connection notice takes it by socket number (a watch of its
 * own when none was handed); when the hand-over fails, the watch goes. */
srv_watch *srv_guard_adopt(srv_guard *g, int fd);
void srv_guard_handoff_failed(srv_guard *g, srv_watch *w);
/* ---- the listening socket and the head check (server_door.c) ---- */
typedef struct srv_door srv_door;
/* Listen on sa and serve s (its daemon, guard, limits); at most limit
 * connections at once, counting those libmicrohttpd holds. what names
 * the address in errors. */
int srv_door_start(srv_door **out, coli_server *s, const struct sockaddr *sa, socklen_t salen,
		   int limit, const char *what, coli_err *err);
int srv_door_port(const srv_door *d);
/* Stop accepting (connections already accepted are still served). */
void srv_door_close(srv_door *d);
void srv_door_stop(srv_door *d);

/* Its request is complete: no deadline while it is answered. */
void srv_guard_serving(srv_guard *g, srv_watch *w);
/* Its response ended: the deadline for the next request starts now. */
void srv_guard_answered(srv_guard *g, srv_watch *w);

/* ---- the server ---- */
struct MHD_Daemon;
struct MHD_Connection;

struct coli_server {
	struct MHD_Daemon *d;
	coli_engine *eng;
	char *api_key;             /* NULL = open */
	size_t max_body;
	int timeout_s, max_connections;
	int port;
	char model_id[256];        /* served model id */
	char model_alias[256];     /* model directory basename, "" when unknown */
	char **aliases;            /* --alias names (owned), NULL-terminated */
	int any_model;             /* OpenAI routes accept any model name */
	coli_chat_template tpl;
	int tpl_ok;
	char tpl_err[512];
	const struct expert_stats *xstats;
	atomic_int stopping;       /* in-flight generations are cancelled */
	atomic_int draining;       /* no new connections or requests (503) */
	atomic_int open_reqs;      /* requests between their headers and their end */
	int grace_ms;              /* --shutdown-grace */
	int request_timeout_s;     /* --request-timeout */
	srv_guard *guard;
	srv_door *door;            /* the listening socket (server_door.c) */
	int ignore_eos;            /* --ignore-eos */
	void (*on_event)(void *opaque, const coli_server_event *ev);
	void *event_opaque;
	long long started;         /* unix time, for "created" of /v1/models */
	srv_metrics metrics;
};

/* Per-connection state (owned by the connection's thread). */
typedef struct srv_conn {
	int route;                 /* enum srv_route, -1 unknown */
	int anthropic;             /* errors in Anthropic shape */
	char model_path[256];      /* /v1/models/ID */
	char resp_id[80];          /* /v1/responses/ID */
	int is_delete;             /* DELETE (no body, answered like a GET) */
	util_buf body;
	size_t discarded;          /* body bytes dropped past max_body */
	int too_big;
	int is_get;                /* answered once the (empty) body is read */
	int done;                  /* a response was queued */
	srv_watch *watch;          /* the connection's deadline (may be NULL) */
	/* for the host's request event (coli_server_opts.on_event) */
	double t0;                 /* arrival, CLOCK_MONOTONIC seconds */
	int status;                /* the status queued */
	srv_usage usage;           /* tokens of a generation */
	char method[8], url[128];
} srv_conn;

/* Queue a response with the CORS headers and count it. Takes body (malloc'd). */
int srv_respond(coli_server *s, struct MHD_Connection *c, srv_conn *cc, int status,
		const char *content_type, char *body);
int srv_respond_error(coli_server *s, struct MHD_Connection *c, srv_conn *cc, const srv_error *e);
void srv_add_cors(void *mhd_response);
/* Route of a URL path (with or without /v1), -1 when unknown; wants_post
 * tells the method it takes; GET /models/ID fills cc->model_path. */
int srv_route_of(const char *url, srv_conn *cc, int *wants_post);
/* Route handlers (server_handlers.c); return an MHD_Result. */
int srv_handle_get(coli_server *s, struct MHD_Connection *c, srv_conn *cc);
int srv_handle_post(coli_server *s, struct MHD_Connection *c, srv_conn *cc);
/* An OpenAI route serves model name m (server_handlers.c). */
int srv_model_accepted(const coli_server *s, const char *m);
/* The chat template and tokenizer over r (server_handlers.c). */
int srv_build_prompt(coli_server *s, srv_request *r, int **ids, int *n, srv_error *e);
int srv_client_fd(struct MHD_Connection *c);
/* Queue a streamed response (server_handlers.c's headers and metrics):
 * its bytes are those step(cls) appends to out, called while out is
 * empty; step returns 0, 1 when nothing more follows, -1 on an error
 * (the response ends with one). free_cb owns cls. */
int srv_queue_stream(coli_server *s, struct MHD_Connection *c, srv_conn *cc, util_buf *out,
		     int (*step)(void *), void *cls, void (*free_cb)(void *));
/* The Responses API (server_responses*.c). */
int srv_responses_post(coli_server *s, struct MHD_Connection *c, srv_conn *cc);
int srv_responses_get(coli_server *s, struct MHD_Connection *c, srv_conn *cc);
/* coli_server_answer's /v1/responses: 0 with *body, 1 with e, -ECANCELED,
 * -ENOMEM. */
int srv_responses_answer(coli_server *s, srv_conn *cc, const char *b, size_t len, srv_error *e, char **body);

#endif
