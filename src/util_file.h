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

/* The end of the same sequence for a temporary file TMP the caller wrote
 * through FD (a file too large for memory, or one the caller goes on
 * using): fsync FD, rename TMP over PATH, fsync the directory. FD stays
 * open (after success it is PATH's). An fsync or rename error removes TMP
 * and leaves PATH as it was; a directory fsync error is returned after the
 * rename took effect. 0 or a negative errno. */
int coli_file_commit(int fd, const char *tmp, const char *path, coli_err *err);

/* fsync the directory PATH, or the directory holding PATH when it is not
 * one. */
int coli_fsync_dir(const char *path, coli_err *err);

#endif
