/* ingest_util.h - helpers shared by the ingest unit tests: assertions,
 * a private temporary directory, and a minimal safetensors writer (written
 * here, independently of the reader under test). */
#ifndef INGEST_UTIL_H
#define INGEST_UTIL_H

#include <ftw.h>
#include <stdarg.h>
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "test_util.h"

/* not every test uses every helper */
#define UTIL_FN static __attribute__((unused))

static char tmpdir[256];

UTIL_FN int rm_one(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb; (void)flag; (void)ftw;
	return remove(p);
}

UTIL_FN void tmp_cleanup(void)
{
	if (tmpdir[0])
		nftw(tmpdir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

UTIL_FN const char *tmp_setup(void)
{
	const char *base = getenv("TMPDIR");
	snprintf(tmpdir, sizeof tmpdir, "%s/coli-ingest-XXXXXX", base && base[0] ? base : "/tmp");
	if (!mkdtemp(tmpdir)) {
		perror("mkdtemp");
		exit(99);
	}
	atexit(tmp_cleanup);
	return tmpdir;
}

/* Path inside the temporary directory (static buffer rotation of 4). */
static const char *tpath(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
UTIL_FN const char *tpath(const char *fmt, ...)
{
	static char bufs[4][512];
	static int k;
	char *b = bufs[k++ & 3];
	int n = snprintf(b, 512, "%s/", tmpdir);
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(b + n, 512 - (size_t)n, fmt, ap);
	va_end(ap);
	return b;
}

UTIL_FN void write_bytes(const char *path, const void *data, size_t len)
{
	FILE *f = fopen(path, "wb");
	if (!f || (len && fwrite(data, 1, len, f) != len) || fclose(f)) {
		perror(path);
		exit(99);
	}
}

UTIL_FN void write_text(const char *path, const char *text)
{
	write_bytes(path, text, strlen(text));
}

/* Write a safetensors file with the given header text and data bytes. */
UTIL_FN void write_st_raw(const char *path, const char *header, const void *data, size_t dlen)
{
	size_t hl = strlen(header);
	uint8_t *buf = malloc(8 + hl + dlen + 1);
	for (int i = 0; i < 8; i++)
		buf[i] = (uint8_t)((uint64_t)hl >> (8 * i));
	memcpy(buf + 8, header, hl);
	if (dlen)
		memcpy(buf + 8 + hl, data, dlen);
	write_bytes(path, buf, 8 + hl + dlen);
	free(buf);
}

/* Accumulating writer: add tensors (contiguous data), then flush. */
struct st_builder {
	json_t *hdr;
	uint8_t *data;
	size_t len;
};

UTIL_FN void stb_init(struct st_builder *b)
{
	b->hdr = json_object();
	b->data = NULL;
	b->len = 0;
}

UTIL_FN void stb_add(struct st_builder *b, const char *name, const char *dtype, int ndim,
		    const int64_t *shape, const void *bytes, size_t nbytes)
{
	json_t *sh = json_array();
	for (int i = 0; i < ndim; i++)
		json_array_append_new(sh, json_integer(shape[i]));
	json_object_set_new(b->hdr, name,
			    json_pack("{s:s, s:o, s:[I,I]}", "dtype", dtype, "shape", sh, "data_offsets",
				      (json_int_t)b->len, (json_int_t)(b->len + nbytes)));
	b->data = realloc(b->data, b->len + nbytes + 1);
	memcpy(b->data + b->len, bytes, nbytes);
	b->len += nbytes;
}

UTIL_FN void stb_write(struct st_builder *b, const char *path)
{
	json_object_set_new(b->hdr, "__metadata__", json_pack("{s:s}", "format", "pt"));
	char *h = json_dumps(b->hdr, JSON_COMPACT | JSON_SORT_KEYS);
	/* pad the header with spaces to 8 bytes, as writers do */
	size_t hl = strlen(h), pad = (8 - hl % 8) % 8;
	char *hp = malloc(hl + pad + 1);
	memcpy(hp, h, hl);
	memset(hp + hl, ' ', pad);
	hp[hl + pad] = '\0';
	write_st_raw(path, hp, b->data, b->len);
	free(hp);
	free(h);
	json_decref(b->hdr);
	free(b->data);
}

#endif
