/* cmd_bench_draft.h - the speculative-decoding section of `coli bench`, and
 * the random prompts of both its sections. */
#ifndef COLI_BENCH_DRAFT_H
#define COLI_BENCH_DRAFT_H

#include <stdint.h>

#include <jansson.h>

#include "engine.h"

/* Decode n_gen tokens greedily after random n_prompt-token prompts, in
 * BENCH_DRAFT_ROUNDS interleaved pairs (no drafts, then `draft`), in one
 * engine opened on dir with the options o: median tokens/s of each and
 * their ratio, median CPU ms per token of each and their ratio,
 * drafted/accepted, acceptance, tokens per forward of the
 * drafting requests, and the auto rule's last reason. NULL and err
 * on failure. */
/* n random token ids below vocab into toks, from the xorshift state *rng
 * (advanced: the next call continues the sequence). */
void bench_random_tokens(uint64_t *rng, int *toks, long n, int vocab);

json_t *bench_draft_run(const coli_engine_opts *o, const char *dir, int n_prompt, int n_gen, int draft,
			uint64_t seed, coli_err *err);

#endif
