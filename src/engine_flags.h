/* engine_flags.h - the engine flags every model-running command accepts
 * (coli generate/logits/chat/serve/bench, colitop), with their environment
 * twins. One parser so the flags mean the same everywhere: the engine's
 * own (--threads, --ctx, --cache-dir) here, the expert store's delegated to
 * expert_store_opts_parse_flag. */
#ifndef COLI_ENGINE_FLAGS_H
#define COLI_ENGINE_FLAGS_H

#include "coli_err.h"
#include "engine.h"
#include "model.h"

typedef struct coli_engine_flags {
	coli_engine_opts opts;
} coli_engine_flags;

/* Defaults, then the environment (COLI_THREADS, COLI_CTX, COLI_CACHE_DIR
 * and the store's: COLI_EXPERT_CACHE, COLI_PIN_BUDGET, COLI_PREFETCH,
 * COLI_DIRECT, COLI_MODEL_MIRROR, COLI_MIRROR_WEIGHTS, COLI_CACHE_POLICY).
 * opts.store points into this struct: keep it alive while the engine runs. */
int coli_engine_flags_init(coli_engine_flags *f, coli_err *err);
void coli_engine_flags_free(coli_engine_flags *f);

/* If argv[*i] is an engine flag ("--flag value" or "--flag=value"),
 * consume it (advancing *i past a separate value) and return 1; return 0
 * if it is not one; negative on a bad value. */
int coli_engine_flags_parse(coli_engine_flags *f, int argc, char **argv, int *i, coli_err *err);

/* The sampling flags of the generating commands: -n/--max-tokens N,
 * --temp T, --top-p P, --seed S. Same return convention. */
int coli_gen_flags_parse(coli_gen_params *p, int argc, char **argv, int *i, coli_err *err);
extern const char coli_gen_flags_help[];

/* A command's own flags, same convention as coli_engine_flags_parse: 1
 * when argv[*i] was one (*i advanced past a separate value), 0 when it was
 * not, negative with err set on a bad value. */
typedef int (*coli_cmd_flag_fn)(void *ctx, int argc, char **argv, int *i, coli_err *err);

/* What coli_engine_flags_parse_args returns for --help / -h. */
#define COLI_ARGS_HELP 1

/* The argument loop of a model-running command, so every command reads its
 * arguments the same way: each argument is tried as an engine flag, then as
 * a sampling flag (only when gp is non-NULL), then --help/-h, then as one of
 * the command's own flags through own(ctx) (may be NULL), then as the one
 * positional argument (into *pos when pos is non-NULL and *pos is still
 * NULL; a word not starting with '-'). Anything else is "unexpected
 * argument". Returns 0, COLI_ARGS_HELP at --help (the rest is not read), or
 * negative with err set; the caller reports err as a usage error. */
int coli_engine_flags_parse_args(coli_engine_flags *f, coli_gen_params *gp, int argc, char **argv,
				 coli_cmd_flag_fn own, void *ctx, const char **pos, coli_err *err);

/* Model options (threads, expert store) from parsed engine flags, for
 * commands that run the model without the engine thread and declare no
 * plan (coli_engine_model_opts with none; engine_model.h). */
void coli_engine_flags_model_opts(const coli_engine_flags *f, coli_model_opts *mo);

/* Usage lines for --help. */
extern const char coli_engine_flags_help[];

#endif
