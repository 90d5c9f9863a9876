/* engine_draft.h - MTP speculative decoding inside the engine thread
 * (private to engine*.c). See engine_draft.c for the algorithm. */
#ifndef COLI_ENGINE_DRAFT_H
#define COLI_ENGINE_DRAFT_H

#include "engine_internal.h"

/* After the model is loaded: NULL *out when the model has no MTP module
 * (drafting is then off), else the drafting state for n_slots slots. */
int engine_draft_new(coli_engine *e, struct engine_draft **out, coli_err *err);
void engine_draft_free(struct engine_draft *d);
/* Rows one decode step may need for n_slots slots (state sizing). */
int engine_draft_max_rows(int n_slots);
/* Per-request setup, after engine_slot_start (allocates the slot's
 * draft buffers on its first request). */
int engine_draft_slot_start(coli_engine *e, engine_slot *sl, coli_err *err);
/* A prompt chunk of n rows at positions first.. was evaluated (its
 * hidden states are the state's last chunk): feed the MTP module the
 * rows whose next token is known. */
void engine_draft_prefill_chunk(coli_engine *e, engine_slot *sl, int first, int n);
/* The first token was sampled after the prompt's last chunk: draft. */
void engine_draft_first_token(coli_engine *e, engine_slot *sl);
/* One decode step for slots who[0..n) (each with n_draft drafts or none):
 * verify, accept, emit, draft again. */
void engine_draft_decode(coli_engine *e, engine_slot **who, int n);

#endif
