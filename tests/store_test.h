/* store_test.h - helpers for the expert store tests: a hand-built
 * container whose expert shards hold known bytes, in a mktemp directory.
 * (The tests do not depend on coli_container_open.) */
#ifndef COLI_STORE_TEST_H
#define COLI_STORE_TEST_H

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "model_container.h"
#include "test_util.h"

typedef struct test_model {
	char dir[256];
	coli_container c;
	char *paths[16];
	uint64_t sizes[16];
} test_model;

static inline uint64_t tm_word(int layer, int e, size_t i)
{
	uint64_t x = ((uint64_t)layer << 48) ^ ((uint64_t)e << 32) ^ (uint64_t)i;
	x ^= x >> 31;
	x *= 0x9e3779b97f4a7c15ULL;
	x ^= x >> 29;
	return x;
}

/* 1 if rec holds exactly the record of (layer, e). */
static inline int tm_check(const test_model *m, int layer, int e, const void *rec)
{
	const uint64_t *w = rec;
	if (!rec)
		return 0;
	for (size_t i = 0; i < m->c.expert_record_size / 8; i++)
		if (w[i] != tm_word(layer, e, i))
			return 0;
	return 1;
}

static inline void tm_write_shards(const test_model *m, const char *root)
{
	char p[512];
	snprintf(p, sizeof p, "%s/experts", root);
	mkdir(p, 0777);
	size_t rec = m->c.expert_record_size;
	uint64_t *buf = malloc(rec);
	REQUIRE(buf);
	for (int l = 0; l < m->c.config.num_hidden_layers; l++) {
		if (!m->c.expert_shard_paths[l])
			continue;
		snprintf(p, sizeof p, "%s/experts/shard-%03d.bin", root, l);
		FILE *f = fopen(p, "wb");
		REQUIRE(f);
		for (int e = 0; e < m->c.config.n_routed_experts; e++) {
			for (size_t i = 0; i < rec / 8; i++)
				buf[i] = tm_word(l, e, i);
			REQUIRE(fwrite(buf, 1, rec, f) == rec);
		}
		REQUIRE(fclose(f) == 0);
	}
	free(buf);
}

/* layers: total layers (layer 0 dense), experts per layer, top_k, record. */
static inline void tm_make(test_model *m, int layers, int experts, int top_k, size_t rec)
{
	memset(m, 0, sizeof *m);
	const char *tmp = getenv("TMPDIR");
	snprintf(m->dir, sizeof m->dir, "%s/store-test-XXXXXX", tmp && *tmp ? tmp : "/tmp");
	REQUIRE(mkdtemp(m->dir));
	m->c.dir = m->dir;
	m->c.config.num_hidden_layers = layers;
	m->c.config.n_routed_experts = experts;
	m->c.config.num_experts_per_tok = top_k;
	m->c.config.first_k_dense_replace = 1;
	m->c.config.moe_layer_freq = 1;
	m->c.expert_record_size = rec;
	m->c.expert_shard_paths = m->paths;
	m->c.expert_shard_sizes = m->sizes;
	m->c.dense_bytes = 1 << 20;
	snprintf(m->c.fingerprint, sizeof m->c.fingerprint, "%064d", 7);
	for (int l = 1; l < layers && l < 16; l++) {
		char p[512];
		snprintf(p, sizeof p, "%s/experts/shard-%03d.bin", m->dir, l);
		m->paths[l] = strdup(p);
		m->sizes[l] = (uint64_t)experts * rec;
	}
	tm_write_shards(m, m->dir);
}

static inline void tm_rmrf(const char *dir)
{
	char cmd[600];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	REQUIRE(system(cmd) == 0);
}

static inline void tm_free(test_model *m)
{
	for (int l = 0; l < 16; l++)
		free(m->paths[l]);
	tm_rmrf(m->dir);
}

#endif
