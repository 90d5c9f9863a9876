/* util_file.h - replacing a file so that a crash leaves either the old
 * contents or the new, never a mix, and an error leaves no temporary file.
 *
 * The sequence, written once: write a temporary file in the same
 * directory (PATH.tmp.PID.N: unique to the process and the call, so
 * processes sharing a directory never rename each other's file), fsync
 * it, rename it over PATH, fsync the directory (the rename is durable
 * only then). On any error the temporary file is removed and the one line
 * in err names the file and the step. */
#ifndef COLI_UTIL_FILE_H
#define COLI_UTIL_FILE_H

#include <stddef.h>

#include "coli_err.h"

/* PATH := the LEN bytes at DATA. 0 or a negative errno. */
int coli_file_replace(const char *path, const void *data, size_t len, coli_err *err);

/* fsync the directory PATH, or the directory holding PATH when it is not
 * one. */
int coli_fsync_dir(const char *path, coli_err *err);

#endif
