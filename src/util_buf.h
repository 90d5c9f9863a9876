/* util_buf.h - the growable byte string of the whole tree.
 *
 * A util_buf is zero-initialized ({ 0 }) and needs no constructor. Its
 * bytes are p[0..len), NUL-terminated once anything was added (p stays
 * NULL until then); capacity doubles from 64. An allocation failure is
 * sticky: oom is set, the contents stay as they were, and every later
 * call that would add fails with -ENOMEM, so a caller may append a run of
 * pieces and check once (util_buf_ok) at the end. Not for the engine
 * thread's per-token path, which allocates nothing. */
#ifndef COLI_UTIL_BUF_H
#define COLI_UTIL_BUF_H

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>

typedef struct util_buf {
	char *p;
	size_t len, cap;
	int oom;     /* sticky: an allocation failed */
} util_buf;

/* Room for EXTRA more bytes and the NUL. 0 or -ENOMEM. */
int util_buf_reserve(util_buf *b, size_t extra);
/* Append N bytes at S (S may be NULL when N is 0). 0 or -ENOMEM. */
int util_buf_add(util_buf *b, const void *s, size_t n);
/* Append the string S. 0 or -ENOMEM. */
int util_buf_puts(util_buf *b, const char *s);
/* Append formatted text. 0 or -ENOMEM. */
int util_buf_printf(util_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int util_buf_vprintf(util_buf *b, const char *fmt, va_list ap) __attribute__((format(printf, 2, 0)));
/* Append S[0..N) as the inside of a JSON string: \" \\ \n \r \t \b \f,
 * \u00xx (lower-case hex) for the other control bytes, every other byte
 * as it is (UTF-8 passes through). 0 or -ENOMEM. */
int util_buf_json_escape(util_buf *b, const char *s, size_t n);
/* Append what is left to read of F, at most MAX bytes (0: no limit).
 * 0, -ENOMEM, -EFBIG when F holds more than MAX, -EIO on a read error;
 * after an error B holds what was read so far. */
int util_buf_read(util_buf *b, FILE *f, size_t max);
/* The whole file at PATH (whatever fopen reads: a FIFO, /dev/stdin too),
 * at most MAX bytes (0: no limit), as a malloc'd NUL-terminated string in
 * *out, its length in *len when len is non-NULL. 0; -errno when it cannot
 * be opened; util_buf_read's -ENOMEM, -EFBIG or -EIO (*out untouched). */
int util_buf_read_path(const char *path, size_t max, char **out, size_t *len);
/* 0, or -ENOMEM when an allocation failed since the buffer was made. */
int util_buf_ok(const util_buf *b);

/* Length 0, memory and the oom flag kept. */
void util_buf_clear(util_buf *b);
/* Drop the first N bytes (all of them when N >= len). */
void util_buf_consume(util_buf *b, size_t n);
/* Hand the bytes over as a malloc'd NUL-terminated string (an allocated
 * "" when empty), their length in *len when len is non-NULL, and leave B
 * empty as after util_buf_free. NULL (B freed) when an allocation
 * failed. */
char *util_buf_steal(util_buf *b, size_t *len);
/* Release the memory; B is empty and usable again. */
void util_buf_free(util_buf *b);

#endif
