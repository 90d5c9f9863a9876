/* kv_test.h - shared helpers for the kv module's tests: deterministic
 * session content, temporary directories, check macros. */
#ifndef COLI_KV_TEST_H
#define COLI_KV_TEST_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coli_log.h"
#include "kv_file.h"
#include "test_util.h"

#define FP_A "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
#define FP_B "fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210"

/* Warnings are counted, not printed: the torn-tail tests cut hundreds. */
static int kvt_warnings __attribute__((unused));
static char kvt_last_warning[512] __attribute__((unused));

static inline void kvt_sink(void *opaque, int level, const char *line)
{
	(void)opaque;
	if (level >= COLI_LOG_WARN) {
		kvt_warnings++;
		snprintf(kvt_last_warning, sizeof kvt_last_warning, "%s", line);
	}
}

static inline void kvt_quiet(void)
{
	coli_log_set_sink(kvt_sink, NULL);
}

/* Token id and KV value at a position, from a seed: any loaded record can
 * be checked against what the writer must have written. */
static inline int32_t kvt_token(uint32_t seed, uint32_t pos)
{
	return (int32_t)((pos * 2654435761u + seed * 40503u) % 150000u);
}

static inline float kvt_value(uint32_t seed, uint32_t layer, uint32_t pos, uint32_t j)
{
	uint32_t h = (seed * 31u + layer) * 2246822519u ^ (pos * 3266489917u + j * 668265263u);
	h ^= h >> 15;
	return (float)(int32_t)(h & 0xffffff) / 65536.0f - 128.0f;
}

/* Buffers for appending n tokens starting at pos: layers slots of width
 * numbers, then ilayers index key slots of iwidth. */
typedef struct kvt_batch {
	int n, layers, width, ilayers, iwidth;
	int32_t *tokens;
	float **rows;
} kvt_batch;

static inline void kvt_batch_fill_indexed(kvt_batch *b, uint32_t seed, int layers, int width, int ilayers,
					  int iwidth, int pos, int n)
{
	b->n = n;
	b->layers = layers;
	b->width = width;
	b->ilayers = ilayers;
	b->iwidth = iwidth;
	b->tokens = malloc((size_t)n * sizeof *b->tokens);
	b->rows = malloc((size_t)(layers + ilayers) * sizeof *b->rows);
	for (int i = 0; i < n; i++)
		b->tokens[i] = kvt_token(seed, (uint32_t)(pos + i));
	for (int l = 0; l < layers + ilayers; l++) {
		const int w = l < layers ? width : iwidth;
		b->rows[l] = malloc((size_t)n * w * sizeof(float));
		for (int i = 0; i < n; i++)
			for (int j = 0; j < w; j++)
				b->rows[l][(size_t)i * w + j] = kvt_value(seed, (uint32_t)l, (uint32_t)(pos + i), (uint32_t)j);
	}
}

static inline void kvt_batch_fill(kvt_batch *b, uint32_t seed, int layers, int width, int pos, int n)
{
	kvt_batch_fill_indexed(b, seed, layers, width, 0, 0, pos, n);
}

static inline void kvt_batch_free(kvt_batch *b)
{
	for (int l = 0; l < b->layers + b->ilayers; l++)
		free(b->rows[l]);
	free(b->rows);
	free(b->tokens);
}

static inline int kvt_append(kv_session *s, uint32_t seed, int pos, int n, coli_err *err)
{
	kvt_batch b;
	kvt_batch_fill_indexed(&b, seed, kv_session_n_layers(s), kv_session_width(s), kv_session_index_layers(s),
			       kv_session_index_width(s), pos, n);
	int rc = kv_session_append(s, b.tokens, n, (const float *const *)b.rows, err);
	kvt_batch_free(&b);
	return rc;
}

/* 1 if loaded holds exactly positions [0, n) of the seed's content. */
static inline int kvt_loaded_ok(const kv_loaded *l, uint32_t seed, int n)
{
	if (l->n_tokens != n)
		return 0;
	for (int p = 0; p < n; p++) {
		if (l->tokens[p] != kvt_token(seed, (uint32_t)p))
			return 0;
		if (!l->rows)
			continue;
		for (int k = 0; k < l->n_layers + l->index_layers; k++) {
			const int w = k < l->n_layers ? l->width : l->index_width;
			for (int j = 0; j < w; j++) {
				float want = kvt_value(seed, (uint32_t)k, (uint32_t)p, (uint32_t)j);
				if (memcmp(&l->rows[k][(size_t)p * w + j], &want, sizeof want))
					return 0;
			}
		}
	}
	return 1;
}

static inline char *kvt_tmpdir(void)
{
	const char *base = getenv("TMPDIR");
	static char buf[4096];
	snprintf(buf, sizeof buf, "%s/kvtest.XXXXXX", base && *base ? base : "/tmp");
	if (!mkdtemp(buf)) {
		perror("mkdtemp");
		exit(99);
	}
	return buf;
}

static inline void kvt_rmrf(const char *dir)
{
	char cmd[4200];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "warning: could not remove %s\n", dir);
}

#endif
