/* cmd_bench_draft.h - the speculative-decoding section of `coli bench`. */
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
json_t *bench_draft_run(const coli_engine_opts *o, const char *dir, int n_prompt, int n_gen, int draft,
			uint64_t seed, coli_err *err);

#endif
