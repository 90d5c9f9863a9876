/* model_manifest.h - small JSON and file helpers shared by the container reader
 * (model_container.c), `coli convert` (convert*.c) and `coli info`.
 *
 * Every getter names the offending key and its context ("manifest.json:
 * tensors[3].offset: ...") so errors reach the user as one clear line. The
 * writers are crash-safe (util_file.h): data goes to a temporary file, is
 * fsync'd, renamed over NAME, and the directory is fsync'd, so a reader
 * sees the old file or the new one, never a torn one. */
#ifndef COLI_MANIFEST_H
#define COLI_MANIFEST_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "coli_err.h"

#define MANIFEST_FORMAT "colitop-model"
#define MANIFEST_VERSION 1

/* Read a whole file into a NUL-terminated malloc'd buffer. */
int manifest_read_file(const char *path, char **data, size_t *len, coli_err *err);
/* Parse a JSON file; the error names the file, line and column. */
int manifest_load(const char *path, json_t **root, coli_err *err);
/* Atomic write (coli_file_replace, util_file.h). */
int manifest_write_atomic(const char *path, const void *data, size_t len, coli_err *err);
/* Serialize (2-space indent, insertion order, trailing newline) + write atomically. */
int manifest_save(const char *path, const json_t *root, coli_err *err);
/* fsync the directory holding PATH (or PATH itself when it is a directory). */
int manifest_fsync_dir(const char *dir, coli_err *err);

/* Typed getters. `where` prefixes the message (e.g. "manifest.json: tensors[3]"). */
int manifest_get_int(const json_t *obj, const char *key, int64_t min, int64_t max,
		     int64_t *out, const char *where, coli_err *err);
int manifest_get_str(const json_t *obj, const char *key, const char **out,
		     const char *where, coli_err *err);
int manifest_get_obj(const json_t *obj, const char *key, json_t **out,
		     const char *where, coli_err *err);
int manifest_get_arr(const json_t *obj, const char *key, json_t **out,
		     const char *where, coli_err *err);

/* A container-relative path is safe when it is relative, non-empty, and has
 * no "." / ".." components (a manifest must not point outside its dir). */
int manifest_path_safe(const char *rel);

/* Join dir + "/" + rel into a malloc'd string (NULL on ENOMEM). */
char *manifest_join(const char *dir, const char *rel);

/* Lowercase 64-hex-digit check. */
int manifest_is_sha256_hex(const char *s);

#endif
