/* engine.h - the engine thread: one model, one bounded request queue.
 *
 * Threads: coli_engine_new starts the engine thread, which owns the model,
 * the KV state and the expert store. Any thread (TUI main thread, HTTP
 * threads, the CLI) submits requests; events come back through a
 * per-request channel read with coli_request_next. A full queue refuses at
 * once (-EBUSY) so callers answer 503 instead of growing without bound.
 * A cancelled request (client gone, Esc in the TUI) stops within one step.
 * A reader that falls behind never stalls the engine: its slot pauses
 * (gen params' cancel_when_stalled; engine_request.h's reader rule). */
#ifndef COLI_ENGINE_H
#define COLI_ENGINE_H

#include <stddef.h>
#include <stdint.h>

#include "coli_err.h"
#include "expert_store.h"
#include "model_config.h"
#include "tokenizer.h"

typedef struct coli_engine coli_engine;
typedef struct coli_request coli_request;

/* MTP speculative decoding (engine_draft.c): a request or the engine
 * drafts with the model's MTP module automatically (the default), never,
 * or always N tokens ahead (1..COLI_DRAFT_MAX). COLI_DRAFT_UNSET in
 * coli_gen_params means "as the engine", in coli_engine_opts "auto". */
enum { COLI_DRAFT_UNSET = 0, COLI_DRAFT_AUTO = -1, COLI_DRAFT_OFF = -2 };
#define COLI_DRAFT_MAX 4
/* "auto" | "off" | "N" -> the value above; 0 or -EINVAL naming `what`. */
int coli_draft_parse(const char *s, const char *what, int *out, coli_err *err);
/* "auto", "off" or the number, into buf. */
const char *coli_draft_name(int draft, char *buf, size_t size);

/* --parallel: at most COLI_MAX_PARALLEL sequences in flight; AUTO sizes
 * the KV from the memory the process may use (engine_kv.c). */
#define COLI_MAX_PARALLEL 256
#define COLI_PARALLEL_AUTO (-1)

typedef struct coli_engine_opts {
	const char *model_dir;     /* NULL = $COLI_MODEL, then the default model */
	const char *cache_dir;     /* NULL = default beside the model */
	int threads;               /* compute threads; <= 0 = online cores */
	int max_queue;             /* queued requests before -EBUSY; 0 = default 16 */
	int parallel;              /* requests decoded together (slots), up to
	                            * COLI_MAX_PARALLEL; 0 = up to 4 (as fit in
	                            * 1 GiB of KV); COLI_PARALLEL_AUTO = as many
	                            * as a quarter of the process's memory
	                            * holds (engine_kv.c) */
	int prefill_batch;         /* prompt positions per step; 0 = default 128 */
	int ctx;                   /* max context tokens; 0 = model/default */
	int act_quant;             /* enum coli_act_quant (model.h): f32 (exact,
	                            * default) or q8 activations */
	int kv_ram;                /* KV rows kept in RAM per slot; 0 = ctx. A
	                            * session longer than this keeps its older
	                            * rows in the session file, read back on
	                            * demand */
	int share_session_prefixes;/* a request without a session may reuse the
	                            * KV of a persisted session sharing its
	                            * prefix (opt-in: cached-token counts then
	                            * reveal saved text to any client) */
	int draft;                 /* COLI_DRAFT_*, or N: MTP drafting (off
	                            * also leaves the MTP module unloaded) */
	int no_heat;               /* neither load nor save routing heat
	                            * (CACHE_DIR/hot-experts): a run that must
	                            * not warm-start from earlier runs' history
	                            * nor leave any for later ones */
	int no_profiles;           /* record no routing profiles (no counts in
	                            * the step, no profile writer, no .prof
	                            * files): engine_profile.h */
	expert_store_opts store;   /* expert cache, pinning, prefetch, I/O mode,
	                            * mirrors (heat_dir and kv_bytes are set by
	                            * the engine) */
} coli_engine_opts;

void coli_engine_opts_default(coli_engine_opts *o);

typedef struct coli_gen_params {
	int max_tokens;            /* <= 0: up to the context limit */
	float temperature;         /* 0 = greedy */
	float top_p;               /* 1 = off */
	uint64_t seed;
	const char *const *stop;   /* NULL-terminated stop strings (copied) */
	const char *session;       /* KV session name to continue, or NULL */
	int session_whole;         /* with session: the prompt is the whole
	                            * conversation, not what follows the stored
	                            * history; the session keeps its longest
	                            * common prefix with it (the Responses API's
	                            * previous_response_id) */
	int ignore_eos;
	int cancel_when_stalled;   /* the engine never waits for a reader; when
	                            * the request's buffer is full: 1 = it is
	                            * cancelled (a network client, who may be
	                            * gone and holds a slot), 0 = its slot pauses
	                            * while the others step, until the reader
	                            * takes events or cancels (an in-process
	                            * reader: a CLI writing into a paused pipe,
	                            * colitop) */
	int every_token;           /* 1: one TEXT event per token, never merged
	                            * when a network reader falls behind (merged
	                            * events keep all the text but only the last
	                            * token id) */
	/* OpenAI logit_bias: bias[i] is added to the logit of token bias_ids[i]
	 * before every sampling step (greedy included); copied at submit. */
	const int *bias_ids;
	const float *bias;
	int n_bias;
	/* Structured output (grammar.h): the answer is constrained to the
	 * compiled `grammar` (the request takes a reference of its own at
	 * submit, so the caller may free its one right after); without one,
	 * to a JSON document valid under json_schema (JSON text, compiled by
	 * coli_engine_submit on the calling thread and not kept: a bad schema
	 * fails the submit with -EINVAL), or to any JSON object when
	 * json_object is set. The engine thread never compiles. The request
	 * ends when the document does. */
	struct coli_grammar *grammar;
	const char *json_schema;
	int json_object;
	/* The prompt opened a thinking block: the constraint starts after the
	 * model closes it with "</think>" (the reasoning is free text). */
	int grammar_after_think;
	/* Log-probabilities: with logprobs set, every TEXT event of a sampled
	 * token carries its log-probability and its top_logprobs (0..20) most
	 * likely alternatives: the log-softmax of the model's raw logits, before
	 * logit_bias, temperature, top-p and the grammar mask. */
	int logprobs;
	int top_logprobs;
	int draft;                 /* COLI_DRAFT_UNSET (the engine's), AUTO,
	                            * OFF or N (an error on a model without MTP) */
	/* Routing profile label (engine_profile.h: [A-Za-z0-9._-], up to 63,
	 * not starting with '.' or '_'; -EINVAL otherwise): the request's
	 * routings are summed into CACHE_DIR/profiles/LABEL.prof. NULL: none. */
	const char *label;
} coli_gen_params;

#define COLI_MAX_TOP_LOGPROBS 20

typedef struct coli_logprob {
	float logprob;             /* of the event's token */
	int n_top;
	int top_id[COLI_MAX_TOP_LOGPROBS];         /* most likely first */
	float top_logprob[COLI_MAX_TOP_LOGPROBS];
} coli_logprob;

/* The log-sum-exp of logits[0..n) and the k most likely ids with their
 * log-probabilities (ties: the lower id first). */
float coli_logprob_top(const float *logits, int n, int k, coli_logprob *out);

void coli_gen_params_default(coli_gen_params *p);

enum coli_event_kind {
	COLI_EV_TEXT = 1,   /* text: complete UTF-8 characters (may be empty for special tokens) */
	COLI_EV_DONE,       /* finish + usage; the last event */
	COLI_EV_ERROR,      /* message; the last event */
};

enum coli_finish { COLI_FINISH_STOP = 1, COLI_FINISH_LENGTH, COLI_FINISH_CANCELLED, COLI_FINISH_ERROR };

typedef struct coli_event {
	int kind;
	int token;                 /* TEXT: the token id */
	char text[1024];           /* TEXT: bytes (NUL-terminated) */
	size_t text_len;
	int has_logprob;           /* TEXT: lp is set (logprobs requested; such
	                            * events are never merged) */
	coli_logprob lp;
	int finish;                /* DONE: enum coli_finish */
	int prompt_tokens;         /* DONE: usage */
	int cached_tokens;
	int completion_tokens;
	double ttft_ms;            /* DONE: time to first token */
	double decode_tps;         /* DONE: decode tokens per second */
	char message[512];         /* ERROR; DONE: non-empty when the answer is whole
				    * but its session could not be written (disk full, EIO) */
	int error_code;            /* ERROR: negative errno-style */
} coli_event;

int coli_engine_new(const coli_engine_opts *o, coli_engine **out, coli_err *err);
/* Stop accepting, finish or cancel in-flight work, join the thread. */
void coli_engine_free(coli_engine *e);

const coli_config *coli_engine_config(const coli_engine *e);
const coli_tokenizer *coli_engine_tokenizer(const coli_engine *e);
const char *coli_engine_model_name(const coli_engine *e);
int coli_engine_ctx(const coli_engine *e);
/* The cache directory in use (sessions in kv/, heat in hot-experts/). */
const char *coli_engine_cache_dir(const coli_engine *e);
/* Requests served at once (each slot holds one sequence's KV cache). */
int coli_engine_slots(const coli_engine *e);

/* Submit prompt token ids (copied). -EBUSY when the queue is full,
 * -E2BIG (context_length_exceeded) when prompt + 1 exceeds the context,
 * -ERANGE when a logit_bias token id is outside the vocabulary. */
int coli_engine_submit(coli_engine *e, const int *prompt, int n_prompt,
		       const coli_gen_params *p, coli_request **out, coli_err *err);
/* Wait up to timeout_ms (-1 = forever) for the next event. Returns 1 when
 * an event was written, 0 on timeout. After DONE/ERROR it keeps returning
 * that event. */
int coli_request_next(coli_request *r, coli_event *ev, int timeout_ms);
void coli_request_cancel(coli_request *r);
/* Prompt tokens reused from the KV cache, known once the request is in a
 * slot (before its first TEXT event); -1 until then. The Anthropic stream
 * reports it in message_start, which goes out before DONE. */
int coli_request_cached_tokens(coli_request *r);
/* Cancel if still running and release. Safe from any thread. */
void coli_request_free(coli_request *r);

/* Requests queued or being served (for status lines and /metrics). */
int coli_engine_queue_len(const coli_engine *e);

/* Step figures since start (any thread; each field exact alone). */
typedef struct coli_step_stats {
	long long steps;           /* forwards of the engine step */
	long long rows;            /* rows they evaluated (decode + prompt) */
	long long prompt_rows;     /* of which prompt tokens */
	int last_rows;             /* rows of the latest step */
	int active;                /* slots serving a request */
	int queued;                /* requests waiting for a slot */
	int waiting_kv;            /* 1: the queue's head waits for KV room */
	long long kv_used, kv_budget; /* bytes of KV held / allowed */
	long long spill_bytes;     /* bytes of spilled KV rows and index keys
	                            * read back from session files */
	long long spill_full_bytes; /* what reading every spilled row back
	                            * each time would have read (with the DSA
	                            * indexer only the selected rows are) */
} coli_step_stats;
void coli_engine_step_stats(const coli_engine *e, coli_step_stats *out);

/* Speculative decoding figures since start (any thread; lock-free,
 * each field exact, a set may straddle one step). */
typedef struct coli_draft_stats {
	int available;             /* the model's MTP module is loaded */
	int mode;                  /* the engine's COLI_DRAFT_* or N */
	int on;                    /* drafting in the latest decode step */
	int n;                     /* drafts per step then (0 = off) */
	unsigned long long steps;      /* decode forwards (per slot) */
	unsigned long long tokens;     /* tokens they produced */
	unsigned long long drafted;    /* draft tokens verified */
	unsigned long long accepted;   /* of which accepted */
	double acceptance;         /* accepted / drafted (valid when drafted) */
	double tokens_per_forward; /* tokens / steps (valid when steps) */
	double predicted_gain;     /* auto: tokens/s with drafts / without */
	char reason[160];          /* why auto drafts or not, in words */
} coli_draft_stats;
void coli_engine_draft_stats(const coli_engine *e, coli_draft_stats *out);

/* Routing profiles (engine_profile.h) since start (any thread). The
 * writer's memory is fixed when the engine starts: it does not grow with
 * the number of sessions, labels or requests. */
typedef struct coli_profile_stats {
	int on;                    /* 0: --no-profiles, or nothing is routed */
	size_t bytes;              /* heap the profile writer holds between writes */
	int jobs;                  /* pending per-file sums it can hold */
	unsigned long long written;   /* profile files replaced */
	unsigned long long dropped;   /* requests whose share of some file was
	                               * not recorded (the writer fell behind) */
} coli_profile_stats;
void coli_engine_profile_stats(const coli_engine *e, coli_profile_stats *out);

/* The expert store's telemetry block (lives as long as the engine; any
 * thread may read it, see expert_store_stats.h). */
const expert_stats *coli_engine_expert_stats(const coli_engine *e);

#endif
