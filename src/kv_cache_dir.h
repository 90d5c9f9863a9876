/* kv_cache_dir.h - where colitop keeps writable per-model state.
 *
 * The weights directory may be read-only, so state lives apart from it:
 *   1. $COLI_CACHE_DIR when set and non-empty (used as is);
 *   2. otherwise ${XDG_CACHE_HOME:-$HOME/.cache}/colitop/<name>-<fp12>,
 *      where <name> is the last path component of the model directory
 *      (its real path) and <fp12> the first 12 hex digits of the
 *      container fingerprint (sha256 of its manifest.json), so two models
 *      of the same directory name never share state; "<name>" alone when
 *      the directory has no readable manifest, "default" when model_dir
 *      is NULL.
 * A command's --cache-dir flag overrides both (callers handle it).
 * Inside: kv/ (sessions), hot-experts/, logs/. */
#ifndef COLI_KV_CACHE_DIR_H
#define COLI_KV_CACHE_DIR_H

#include <stddef.h>

#include "coli_err.h"


/* Compute the cache dir for a model dir (creates nothing). */
int kv_cache_dir(const char *model_dir, char *out, size_t cap, coli_err *err);

/* mkdir -p with mode 0700 for created components. */
int kv_mkdirs(const char *path, coli_err *err);

#endif
