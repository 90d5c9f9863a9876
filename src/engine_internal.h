/* engine_internal.h - the engine's private state, shared by engine.c and
 * engine_session.c. Every field is owned by the engine thread except the
 * queue, stop flag and busy (guarded by lock / atomic). */
#ifndef COLI_ENGINE_INTERNAL_H
#define COLI_ENGINE_INTERNAL_H

#include <pthread.h>

#include "engine.h"
#include "engine_request.h"
#include "kv_file.h"
#include "model.h"
#include "sampler.h"
#include "stop_match.h"

#define ENGINE_DEFAULT_QUEUE 16
#define ENGINE_DEFAULT_CTX 4096
#define ENGINE_PREFILL_BATCH 32

struct coli_engine {
	coli_engine_opts opts;
	char model_dir[4096];
	char model_name[256];
	coli_model *model;
	coli_tokenizer *tok;
	coli_state *state;
	coli_sampler sampler;
	float *logits;         /* (vocab) */
	int *hist;             /* tokens held in the state (ctx) */
	int *full;             /* (ctx) a session's history + new prompt */
	int n_hist;
	int ctx;
	pthread_t thread;
	pthread_mutex_t lock;  /* guards the queue and stop */
	pthread_cond_t cond;
	coli_request **queue;  /* ring of max_queue */
	int q_head, q_len, q_cap;
	int stop;
	_Atomic int busy;      /* a request is being served */
	/* sessions */
	char cache_dir[4096];
	char kv_dir[4200];
	char heat_dir[4200];
	kv_session *sess;      /* session the state belongs to, or NULL */
	int sess_saved;        /* tokens of hist already in the session file */
};

/* Evaluate tokens, appending them to the state and hist. */
int engine_eval(coli_engine *e, const int *toks, int n, coli_err *err);

/* Bind the state to session `name` (create it when absent): afterwards
 * hist holds the session's tokens. */
int engine_session_bind(coli_engine *e, const char *name, coli_err *err);
/* Append what hist holds beyond the file and fsync (end of a turn). */
void engine_session_save(coli_engine *e);
/* Close the bound session (saving first); the state stays as it is. */
void engine_session_unbind(coli_engine *e);
/* For a stateless request: if a stored session shares a longer prefix
 * with the prompt than the state does, load it into the state. */
void engine_session_adopt_prefix(coli_engine *e, const int *prompt, int n);

#endif
