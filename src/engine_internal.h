/* engine_internal.h - the engine's private state, shared by engine.c,
 * engine_slot.c and engine_session.c.
 *
 * Ownership: everything is owned by the engine thread except the queue,
 * `stop` and `active` (guarded by `lock`). */
#ifndef COLI_ENGINE_INTERNAL_H
#define COLI_ENGINE_INTERNAL_H

#include <pthread.h>

#include "engine.h"
#include "engine_request.h"
#include "grammar.h"
#include "grammar_mask.h"
#include "kv_file.h"
#include "kv_reader.h"
#include "model.h"
#include "sampler.h"
#include "engine_stop_match.h"

#define ENGINE_DEFAULT_QUEUE 16
#define ENGINE_DEFAULT_CTX 4096
/* Prompt positions evaluated per step by default. Each chunk reads every
 * expert its tokens route to once, so larger chunks read fewer bytes per
 * prompt token; smaller ones interleave better with other slots' decode. */
#define ENGINE_PREFILL_BATCH 128
/* Sequences in flight at once (--parallel). A step's rows are one per
 * decoding slot plus prompt chunks, so the step state is sized for
 * n_slots + prefill_batch rows. */
#define ENGINE_MAX_SLOTS COLI_MAX_PARALLEL
/* io_uring entries for reading spilled rows back: a layer's runs in one
 * or a few submissions */
#define ENGINE_SPILL_DEPTH 128
/* A slot's KV grows at admission in steps of this many rows, up to
 * kv_ram: a short request holds the KV it can use, not a whole context. */
#define ENGINE_KV_ROUND 64

enum slot_phase { SLOT_IDLE = 0, SLOT_PREFILL, SLOT_DECODE };
/* What the session writer does for a slot before its request can go on
 * (engine_slot.resuming). */
enum slot_resume { SLOT_RESUME_NONE = 0, SLOT_RESUME_SESSION, SLOT_RESUME_PREFIX };

/* One sequence being served. Its KV cache and token history outlive the
 * request, so the next request that shares a prefix reuses them. */
typedef struct engine_slot {
	int index;
	struct coli_engine *eng; /* the engine (engine_slot_spill_read's figures) */
	int phase;               /* enum slot_phase */
	coli_request *req;       /* NULL when idle */
	coli_seq *seq;           /* allocated on first use */
	int *hist;               /* (ctx) tokens held in seq */
	int n_hist;
	int hist_private;        /* hist came from a persisted session: not
	                          * reusable by a stateless request unless
	                          * opts.share_session_prefixes */
	double last_used;        /* for choosing among idle slots */
	/* persisted session bound to this slot (or NULL) */
	kv_session *sess;
	int resuming;            /* enum slot_resume: the session writer
	                          * opens `resume` into this slot
	                          * (engine_session_bind), or reads a saved
	                          * prompt prefix into it
	                          * (engine_session_adopt_prefix) */
	char resume[KV_NAME_MAX + 1];
	int sess_saved;          /* tokens of hist in the file, or handed to
	                          * the session writer */
	int sess_cut;            /* tokens to cut the file to before the next
	                          * append, -1 none */
	/* the request being served */
	int *prompt;             /* (ctx) effective prompt: history + new turn */
	int n_prompt;
	int at;                  /* prompt tokens evaluated so far */
	int cached;              /* prompt tokens reused without evaluation */
	float *logits;           /* (vocab) */
	coli_sampler sampler;
	/* structured output of the request (NULL when unconstrained): its
	 * grammar is the request's, compiled by the submitter; the slot owns
	 * only the matcher state and the mask, kept for its next request */
	const coli_grammar *grammar;
	grammar_matcher *gm;
	uint64_t *mask;          /* (vocab/64) allowed tokens */
	int think_wait;          /* unconstrained until "</think>" */
	char think_tail[8];      /* the last bytes generated, while waiting */
	coli_detok det;
	stop_match sm;
	int produced, limit, pending;
	double t_first, ttft;
	/* speculative decoding (engine_draft.c) */
	int draft_mode;          /* this request's COLI_DRAFT_AUTO/OFF or N */
	int n_draft;             /* drafts waiting for the next step */
	int drafts[COLI_DRAFT_MAX];
	float *draft_q;          /* (COLI_DRAFT_MAX, vocab) the distributions
	                          * they were drawn from (sampling only) */
	/* the request's routing profile (engine_profile.h): routings per
	 * (layer, expert) of the rows evaluated for it, counted by
	 * forward_moe.c through seq->route_counts while a request is served */
	uint32_t *route_counts;  /* (layers, routed experts) */
} engine_slot;

typedef struct engine_profiler engine_profiler;

struct coli_engine {
	coli_engine_opts opts;
	char model_dir[4096];
	char model_name[256];
	char cache_dir[4096];
	char kv_dir[4200];
	char heat_dir[4200];
	coli_model *model;
	coli_tokenizer *tok;
	coli_state *state;     /* scratch shared by every slot */
	int ctx;
	int kv_ram;            /* KV rows in RAM per slot (<= ctx) */
	int prefill_batch;     /* prompt positions per slot and step */
	int step_rows;         /* rows per step: n_slots + prefill_batch */
	engine_slot slots[ENGINE_MAX_SLOTS];
	int n_slots;
	int rr;                /* prefill round-robin start (slot index) */
	float *batch_logits;   /* (n_slots, vocab) */
	int *step_tokens;      /* (step_rows) the step's input tokens */
	/* KV admission (engine_kv.c): the KV every slot holds is within
	 * kv_budget bytes; a request waits in the queue until its KV fits */
	long long kv_budget;
	long long kv_row_bytes; /* KV bytes of one row (coli_seq_row_bytes) */
	_Atomic long long kv_used; /* sum of the slots' coli_seq_bytes (engine thread writes) */
	/* step figures for status lines and /metrics (written by the engine
	 * thread, read anywhere: relaxed atomics, each exact alone) */
	_Atomic long long st_steps, st_rows, st_prompt_rows;
	_Atomic int st_last_rows, st_waiting_kv;
	/* spilled rows read back (engine_slot_spill_read): bytes read, and
	 * the bytes every spilled row of those slots would have been */
	_Atomic long long st_spill_bytes, st_spill_full;
	kv_reader *spill_reader; /* io_uring for them (NULL: pread; no spills) */
	/* token bytes for grammar masks: built by the first submitter of a
	 * constrained request (under gvocab_lock), before it queues it, so
	 * the engine thread reads it only after the queue's lock */
	grammar_vocab *gvocab;
	pthread_mutex_t gvocab_lock;
	pthread_t thread;
	pthread_mutex_t lock;  /* guards the queue, stop and active */
	pthread_cond_t cond;
	coli_request **queue;  /* ring of q_cap */
	int q_head, q_len, q_cap;
	int stop;
	int active;            /* slots serving a request */
	/* token histories of the session files (only with
	 * opts.share_session_prefixes), made at start: its own thread follows
	 * the directory, the session writer tells it of the engine's saves,
	 * the engine thread only looks up (kv_prefix_index.h) */
	struct kv_prefix_index *prefix_ix;
	struct engine_draft *draft; /* NULL: the model has no MTP module loaded */
	engine_profiler *prof; /* routing profile writer (NULL: none) */
	/* the session writer (engine_session_writer.c); it counts its
	 * finished saves in sw_acks (under lock) and signals cond */
	struct engine_session_writer *sw;
	int sw_acks;
	/* pops that unpaused a slot (engine_request.h's reader rule), under
	 * lock: a stalled engine wakes on them */
	int reader_wakes;
};

/* A reader made room in a paused request's ring (any thread, holding the
 * request's lock: the lock order is request, then engine). */
void engine_wake_for_reader(coli_engine *e);

/* engine_profile_writer.c: routing profiles summed into files by their
 * own thread (engine_profile.h). open allocates every snapshot; submit
 * (engine thread, at a request's end) copies the slot's counts; close
 * writes what is pending and joins. */
int engine_profile_open(coli_engine *e, coli_err *err);
void engine_profile_submit(coli_engine *e, engine_slot *sl);
void engine_profile_close(coli_engine *e);

/* One save handed to the session writer: every pointer stays valid and
 * its memory unchanged until the writer is done (the slot is left alone
 * while engine_session_busy). */
typedef struct engine_save {
	kv_session *sess;
	int trunc;               /* cut the file to this many tokens first, -1 none */
	const int *tokens;       /* (n) the tokens appended */
	int n;
	const float **rows;      /* (parts) rows of tokens[0] for each part */
	const int *hist;         /* (n_hist) the whole history, for the prefix index */
	int n_hist;
	coli_request *req;       /* ended with ev after the fsync (NULL: a spill) */
	coli_event ev;
} engine_save;

/* One session bind handed to the session writer (engine_session_bind):
 * the writer opens the session (or creates it), reads its token ids into
 * the slot's hist and its RAM rows into the slot's KV; the engine thread,
 * once the slot is no longer busy, finishes the bind without I/O.
 * The same record reads a saved prompt prefix (adopt, from
 * engine_session_adopt_prefix): the writer opens session `name` read-only,
 * checks that its tokens still start with the slot's prompt and reads the
 * rows of its first n tokens into the slot's KV. */
typedef struct engine_load {
	engine_slot *sl;
	int rc;                  /* 0, or <0 with err; adopt: 1 skipped, the
	                          * slot untouched */
	coli_err err;
	kv_session *sess;        /* the opened or created session */
	int created;             /* a new, empty session */
	int n, base;             /* tokens in hist; the first of them in RAM */
	int adopt;               /* a prefix of n tokens from session name */
	char name[KV_NAME_MAX + 1];
} engine_load;

/* engine_kv.c */
/* The KV's share of `room` (the process's memory at start, -1 unknown)
 * for --parallel `parallel`: the cap the expert budget subtracts at most
 * (0 = none). */
int64_t engine_kv_cap(int parallel, int64_t room);
/* Set kv_budget (and with --parallel auto, n_slots) once the model is
 * open: the slots' planned KV within the cap, with a warning when the
 * asked --parallel x --ctx does not fit. */
void engine_kv_budget(coli_engine *e, int64_t room);
/* KV rows the request needs in its slot: prompt (with the session's
 * history when it names one) + the tokens it may generate, rounded up,
 * within kv_ram. */
int engine_kv_need_rows(const coli_engine *e, const coli_request *r);
/* Make room for `sl` to hold `rows` KV rows within the budget, freeing
 * the KV of idle slots (least recently used first, never `sl`): 1 when
 * it fits, 0 when the active slots hold too much for now. */
int engine_kv_fit(coli_engine *e, engine_slot *sl, int rows);
/* Grow (never shrink) the slot's KV to `rows`, keeping its rows. */
int engine_kv_reserve(coli_engine *e, engine_slot *sl, int rows, coli_err *err);
/* Free an idle slot's KV (and unbind its session): 0, or 1 when the
 * session writer first saves what the slot holds beyond its file (the
 * slot is busy meanwhile and keeps its KV). */
int engine_kv_drop(coli_engine *e, engine_slot *sl);

/* engine_step.c: the engine chooses the decode strategy. Without an MTP
 * module, engine_step: one step over every active slot, a row per
 * decoding slot and prompt chunks of the prefilling ones, within
 * step_rows, in one forward. With one, engine_step_draft: one prompt
 * chunk (round robin), then the drafting decode step (engine_draft.c). */
void engine_step(coli_engine *e);
void engine_step_draft(coli_engine *e);

/* engine_slot.c */
/* The slot's buffers and a KV of `rows` rows (nothing when it has one). */
int engine_slot_alloc(coli_engine *e, engine_slot *sl, int rows, coli_err *err);
void engine_slot_free(engine_slot *sl);
/* Take a request: sessions, prefix reuse, sampler setup. 0 or an error
 * already reported to the request. A session the session writer binds,
 * or a saved prompt prefix it reads (--share-session-prefixes), leaves
 * the slot prefilling but busy (sl->resuming): the first
 * engine_slot_ready or engine_slot_prefill that finds it clear finishes
 * the start (engine_session_bound, then the prompt and the draft state)
 * and skips that round. */
int engine_slot_start(coli_engine *e, engine_slot *sl, coli_request *r);
/* Whether the slot can go on this step: 0 while its session's writer
 * holds it, or when it is finished (cancelled, or its KV cannot make
 * room for n rows). */
int engine_slot_ready(coli_engine *e, engine_slot *sl, int n);
/* Evaluate the next chunk of the prompt alone (at most prefill_batch
 * tokens) and append it to the history: the tokens evaluated, 0 when the
 * slot finished (cancelled, failed) or waits for its session's writer.
 * engine_slot_prompt_done follows. */
int engine_slot_prefill(coli_engine *e, engine_slot *sl);
/* n more prompt tokens are in the history: when the prompt is complete,
 * sample the first token. 1 when the slot now decodes, 0 otherwise (more
 * prompt to go, or finished). */
int engine_slot_prompt_done(coli_engine *e, engine_slot *sl, int n);
/* Make room in RAM for n more KV rows (spilling to the session file):
 * 0, 1 while the slot waits for its session's writer (not an error: it
 * skips this step), or <0. */
int engine_slot_make_room(coli_engine *e, engine_slot *sl, int n, coli_err *err);
/* A prompt chunk of n tokens was evaluated: append it, and when the
 * prompt is done sample the first token from sl->logits. */
void engine_slot_prefilled(coli_engine *e, engine_slot *sl, int n);
/* The slot's pending token was evaluated: append it and sample the next
 * from sl->logits. */
void engine_slot_decoded(coli_engine *e, engine_slot *sl);
/* Finish every slot of a failed step with its error (their sequences
 * may be half written: forgotten). */
void engine_slots_fail(coli_engine *e, engine_slot **who, int n, const coli_err *err);
/* coli_seq_spill_fn reading a slot's rows back from its session file. */
int engine_slot_spill_read(void *ctx, int slot, const int *runs, int n_runs, float *out);
/* Show a decoded token to the client (it becomes `pending`) and check the
 * stop conditions: 0 to go on, else the enum coli_finish reason; then
 * engine_slot_end finishes the slot (the caller first rewinds the
 * sequence to hist, the tokens before `pending`). */
int engine_slot_push_token(coli_engine *e, engine_slot *sl, int tok);
/* Add the request's logit_bias to logits (vocab) before any choice. */
void engine_slot_bias(const engine_slot *sl, float *logits);
void engine_slot_end(coli_engine *e, engine_slot *sl, int reason);
/* Sample the slot's next token from sl->logits (logit_bias, grammar mask,
 * log-probabilities), show it, check the stop conditions; 1 when the
 * slot finished. */
int engine_slot_take(coli_engine *e, engine_slot *sl);
/* Finish with an event; the slot becomes idle. */
void engine_slot_finish(coli_engine *e, engine_slot *sl, int kind, int reason, int code, const char *msg);

/* engine_grammar.c: structured output of a slot's request */
/* Submitting thread: the grammar the request will hold (*out NULL when
 * unconstrained): a reference to p->grammar, else p->json_schema or any
 * object compiled here; builds the vocabulary's mask table on first use. */
int engine_grammar_prepare(coli_engine *e, const coli_gen_params *p, coli_grammar **out, coli_err *err);
/* Engine thread, at admission: bind the slot's matcher to the request's
 * grammar (no compiling, no O(vocab) work once the slot has its mask). */
int engine_slot_grammar_begin(coli_engine *e, engine_slot *sl, const coli_gen_params *p, coli_err *err);
/* Mask the slot's logits; returns the number of tokens allowed. */
int engine_slot_grammar_mask(coli_engine *e, engine_slot *sl);
void engine_slot_grammar_end(engine_slot *sl);
/* Free the slot's matcher and mask (with the slot). */
void engine_slot_grammar_free(engine_slot *sl);
/* The grammar is active for this step (not waiting for "</think>"). */
int engine_slot_grammar_active(const engine_slot *sl);
/* After a token is chosen: feed it to the grammar, or watch it for the end
 * of the thinking block. */
void engine_slot_grammar_take(coli_engine *e, engine_slot *sl, int tok);

/* engine_session.c */
/* Bind the slot to session `name` (create it when absent): afterwards its
 * hist holds the session's tokens. Unbinds the session from any other idle
 * slot first. 0 when bound now (it already was), 1 when the session
 * writer opens it (the slot is busy, then engine_session_bound), <0. */
int engine_session_bind(coli_engine *e, engine_slot *sl, const char *name, coli_err *err);
/* Session writer thread: open or create the session of l->sl. */
void engine_session_load_run(coli_engine *e, engine_load *l);
/* Engine thread, the slot no longer busy: finish its bind (window, spill)
 * from the writer's result: 0, or <0 with the slot left unbound. */
int engine_session_bound(coli_engine *e, engine_slot *sl, coli_err *err);
/* End the slot's request r with ev once this turn is in the file: the
 * session writer appends, fsyncs, then ends r (a save error becomes the
 * DONE event's message). The slot stays busy until then. */
void engine_session_finish(coli_engine *e, engine_slot *sl, coli_request *r, const coli_event *ev);
/* Before a spill: 0 when every row of hist is in the file, 1 while the
 * writer writes them (the slot waits, the others step), <0 when the
 * session could not be written. */
int engine_session_spill_ready(coli_engine *e, engine_slot *sl, coli_err *err);
/* KV rows make_room keeps free beyond n, so that the finish can evaluate
 * the last token without a spill (engine_session_eval_last). */
int engine_session_keep_rows(const coli_engine *e, const engine_slot *sl, int n);
/* The finish's last sampled token into KV and hist, in the row kept for
 * it. */
int engine_session_eval_last(coli_engine *e, engine_slot *sl, coli_err *err);
/* The prompt parts from the file after k tokens: the next save cuts it. */
void engine_session_cut(engine_slot *sl, int k);
/* Close the bound session; the KV stays as it is. What hist holds beyond
 * the file is saved first, by the session writer: 1 while it writes it
 * (the slot stays bound and busy; unbind again once it is clear), 0 when
 * closed. Without a writer (shutdown) the save runs on this thread. */
int engine_session_unbind(coli_engine *e, engine_slot *sl);
/* A failed evaluation may have half written the slot's KV: forget the
 * sequence, and close its session without saving, so the file keeps the
 * turns it already holds (the failed turn is not one of them; the next
 * turn on the session resumes from the file). */
void engine_session_forget(engine_slot *sl);
/* Before sl takes a request for `session` (NULL: stateless): unbind the
 * session it must give up, and that session from any other idle slot. 0
 * when done, 1 while the session writer saves one of them first (the
 * request waits for it). */
int engine_session_release(coli_engine *e, engine_slot *sl, const char *session);
/* For a stateless request: if a stored session shares a longer prefix
 * with the prompt (sl->prompt, n tokens) than the slot holds, have the
 * session writer read it into the slot: 1 when it does (the slot is busy,
 * then engine_session_adopted), 0 when there is nothing to read. */
int engine_session_adopt_prefix(coli_engine *e, engine_slot *sl, int n);
/* Session writer thread: read the prefix l->sl adopts (engine_load). */
void engine_session_adopt_run(coli_engine *e, engine_load *l);
/* Engine thread, the slot no longer busy: the adopted prefix becomes its
 * history (no I/O); on a failure it keeps what it held, or nothing when
 * the read had begun. */
void engine_session_adopted(coli_engine *e, engine_slot *sl);

/* engine_session_writer.c: saves off the engine thread */
int engine_session_writer_start(coli_engine *e, coli_err *err);
/* Write what is queued, then stop (after the engine thread ended). */
void engine_session_writer_stop(coli_engine *e);
/* The slot's save is with the writer: the engine leaves the slot, its
 * rows, hist and session alone (acquire: its results are visible after). */
int engine_session_busy(const coli_engine *e, const engine_slot *sl);
/* The slot's save record, to fill while not busy; then post it. */
engine_save *engine_session_writer_job(coli_engine *e, const engine_slot *sl);
void engine_session_writer_post(coli_engine *e, const engine_slot *sl);
/* The slot's bind record, the same way (a slot holds one job at a time). */
engine_load *engine_session_writer_load(coli_engine *e, const engine_slot *sl);
void engine_session_writer_post_load(coli_engine *e, const engine_slot *sl);
/* Do one save now on this thread: 0, or <0 with msg (cap bytes) set. */
int engine_session_save_run(coli_engine *e, engine_save *j, char *msg, size_t cap);

#endif
