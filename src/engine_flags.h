/* engine_flags.h - the engine flags every model-running command accepts
 * (coli generate/logits/chat/serve/bench, colitop), with their environment
 * twins. One parser so the flags mean the same everywhere. */
#ifndef COLI_ENGINE_FLAGS_H
#define COLI_ENGINE_FLAGS_H

#include "coli_err.h"
#include "engine.h"

#define COLI_MAX_MIRRORS 8

typedef struct coli_engine_flags {
	coli_engine_opts opts;
	const char *mirrors[COLI_MAX_MIRRORS + 1];
	int n_mirrors;
	char *env_mirrors;     /* owned copy of COLI_MODEL_MIRROR, split in place */
} coli_engine_flags;

/* Defaults, then the environment (COLI_THREADS, COLI_CTX,
 * COLI_EXPERT_CACHE, COLI_PIN_BUDGET, COLI_PREFETCH=0|1, COLI_DIRECT=0|1,
 * COLI_MODEL_MIRROR=DIR[:DIR...], COLI_CACHE_DIR). */
int coli_engine_flags_init(coli_engine_flags *f, coli_err *err);
void coli_engine_flags_free(coli_engine_flags *f);

/* If argv[*i] is an engine flag, consume it (and its value, advancing *i)
 * and return 1; return 0 if it is not one; negative on a bad value. */
int coli_engine_flags_parse(coli_engine_flags *f, int argc, char **argv, int *i, coli_err *err);

/* Usage lines for --help. */
extern const char coli_engine_flags_help[];

#endif
