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
/* Version 2 added the CRC-32C of every resident tensor and expert record
 * (colitop-model(5)); readers accept versions MANIFEST_VERSION_MIN up to
 * MANIFEST_VERSION, writers write MANIFEST_VERSION. */
#define MANIFEST_VERSION 2
#define MANIFEST_VERSION_MIN 1

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

/* CRC-32C as the manifest spells it: 8 lowercase hex digits, most
 * significant first (printf "%08x"). hex must hold 9 bytes. */
void manifest_crc_hex(uint32_t crc, char *hex);
/* Parse n such values written back to back (8 n hex digits, nothing else);
 * 0, or -EINVAL when s is not exactly that. */
int manifest_crc_parse(const char *s, uint32_t *out, size_t n);

/* Lowercase 64-hex-digit check. */
int manifest_is_sha256_hex(const char *s);

#endif
