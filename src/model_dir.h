/* model_dir.h - which model a command runs: the DIR argument, else
 * $COLI_MODEL, else the embedded default model (data/default-model in the
 * source tree when run from the build tree, else PKGDATADIR/default-model). */
#ifndef COLI_MODEL_DIR_H
#define COLI_MODEL_DIR_H

#include <stddef.h>

#include "coli_err.h"

int coli_model_dir_resolve(const char *arg, char *out, size_t cap, coli_err *err);

/* Why `dir` holds no manifest.json, as the one line the user sees: missing,
 * not a directory, a Hugging Face checkpoint (with the `coli convert` /
 * `coli pull` command that makes a container of it), or neither. Returns
 * the negative code it recorded. */
int coli_model_dir_explain(const char *dir, coli_err *err);

#endif
