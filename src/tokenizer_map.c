/* tokenizer_map.c - the tokenizer's lookup structures: string -> id map,
 * merge-pair map and added-token trie. */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "tokenizer_impl.h"
#include "util_array.h"

uint64_t tok_hash_bytes(const void *p, size_t n)
{
	/* FNV-1a, then a final mix so low bits are usable as a slot index */
	const uint8_t *b = p;
	uint64_t h = 1469598103934665603ULL;
	for (size_t i = 0; i < n; i++) {
		h ^= b[i];
		h *= 1099511628211ULL;
	}
	h ^= h >> 29;
	h *= 0xBF58476D1CE4E5B9ULL;
	h ^= h >> 32;
	return h;
}

static uint32_t pow2_at_least(uint32_t n)
{
	uint32_t c = 16;
	while (c < n)
		c <<= 1;
	return c;
}

int tok_strmap_init(tok_strmap *m, uint32_t expect)
{
	m->cap = pow2_at_least(expect * 2 + 1);
	m->n = 0;
	m->ids = malloc(sizeof *m->ids * m->cap);
	m->keys = calloc(m->cap, sizeof *m->keys);
	m->lens = calloc(m->cap, sizeof *m->lens);
	if (!m->ids || !m->keys || !m->lens) {
		tok_strmap_free(m);
		return -ENOMEM;
	}
	memset(m->ids, 0xFF, sizeof *m->ids * m->cap);
	return 0;
}

void tok_strmap_free(tok_strmap *m)
{
	free(m->ids);
	free(m->keys);
	free(m->lens);
	memset(m, 0, sizeof *m);
}

static int strmap_grow(tok_strmap *m)
{
	tok_strmap g;
	if (tok_strmap_init(&g, m->cap) < 0)
		return -ENOMEM;
	for (uint32_t i = 0; i < m->cap; i++)
		if (m->ids[i] >= 0)
			tok_strmap_put(&g, m->keys[i], m->lens[i], m->ids[i]);
	tok_strmap_free(m);
	*m = g;
	return 0;
}

/* The key memory must outlive the map. First insertion of a key wins. */
int tok_strmap_put(tok_strmap *m, const char *key, uint32_t len, int id)
{
	if ((m->n + 1) * 2 > m->cap && strmap_grow(m) < 0)
		return -ENOMEM;
	uint32_t mask = m->cap - 1;
	uint32_t i = (uint32_t)tok_hash_bytes(key, len) & mask;
	while (m->ids[i] >= 0) {
		if (m->lens[i] == len && !memcmp(m->keys[i], key, len))
			return 0;
		i = (i + 1) & mask;
	}
	m->ids[i] = id;
	m->keys[i] = key;
	m->lens[i] = len;
	m->n++;
	return 1;
}

int tok_strmap_set(tok_strmap *m, const char *key, uint32_t len, int id)
{
	if (m->cap) {
		uint32_t mask = m->cap - 1;
		uint32_t i = (uint32_t)tok_hash_bytes(key, len) & mask;
		for (; m->ids[i] >= 0; i = (i + 1) & mask)
			if (m->lens[i] == len && !memcmp(m->keys[i], key, len)) {
				m->ids[i] = id;
				return 0;
			}
	}
	return tok_strmap_put(m, key, len, id);
}

int tok_strmap_get(const tok_strmap *m, const char *key, size_t len)
{
	if (!m->cap)
		return -1;
	uint32_t mask = m->cap - 1;
	uint32_t i = (uint32_t)tok_hash_bytes(key, len) & mask;
	while (m->ids[i] >= 0) {
		if (m->lens[i] == len && !memcmp(m->keys[i], key, len))
			return m->ids[i];
		i = (i + 1) & mask;
	}
	return -1;
}

static uint64_t pair_key(int left, int right)
{
	return (((uint64_t)(uint32_t)left << 32) | (uint32_t)right) + 1;
}

static uint32_t pair_slot(uint64_t k, uint32_t mask)
{
	k ^= k >> 31;
	k *= 0x9E3779B97F4A7C15ULL;
	return (uint32_t)(k >> 32) & mask;
}

int tok_merges_init(tok_merges *m, uint32_t expect)
{
	m->cap = pow2_at_least(expect * 2 + 1);
	m->n = 0;
	m->keys = calloc(m->cap, sizeof *m->keys);
	m->rank = malloc(sizeof *m->rank * m->cap);
	m->result = malloc(sizeof *m->result * m->cap);
	if (!m->keys || !m->rank || !m->result) {
		tok_merges_free(m);
		return -ENOMEM;
	}
	return 0;
}

void tok_merges_free(tok_merges *m)
{
	free(m->keys);
	free(m->rank);
	free(m->result);
	memset(m, 0, sizeof *m);
}

/* Fixed capacity (sized from the merge count); a repeated pair keeps its
 * first (lowest) rank, as the reference's map does. */
int tok_merges_put(tok_merges *m, int left, int right, int rank, int result)
{
	if ((m->n + 1) * 2 > m->cap)
		return -ENOSPC;
	uint64_t k = pair_key(left, right);
	uint32_t mask = m->cap - 1, i = pair_slot(k, mask);
	while (m->keys[i]) {
		if (m->keys[i] == k)
			return 0;
		i = (i + 1) & mask;
	}
	m->keys[i] = k;
	m->rank[i] = rank;
	m->result[i] = result;
	m->n++;
	return 1;
}

int tok_merges_get(const tok_merges *m, int left, int right, int *result)
{
	uint64_t k = pair_key(left, right);
	uint32_t mask = m->cap - 1, i = pair_slot(k, mask);
	while (m->keys[i]) {
		if (m->keys[i] == k) {
			*result = m->result[i];
			return m->rank[i];
		}
		i = (i + 1) & mask;
	}
	return -1;
}

static int trie_node(tok_trie *t, uint8_t byte)
{
	if (util_array_grow(&t->nodes, &t->cap, t->n + 1, 256))
		return -ENOMEM;
	tok_trie_node *n = &t->nodes[t->n];
	n->child = n->sibling = n->token = -1;
	n->byte = byte;
	return t->n++;
}

int tok_trie_add(tok_trie *t, const char *s, size_t len, int token)
{
	if (!t->n && trie_node(t, 0) < 0)
		return -ENOMEM;
	int cur = 0;
	for (size_t i = 0; i < len; i++) {
		uint8_t b = (uint8_t)s[i];
		int c = t->nodes[cur].child;
		while (c >= 0 && t->nodes[c].byte != b)
			c = t->nodes[c].sibling;
		if (c < 0) {
			c = trie_node(t, b);
			if (c < 0)
				return -ENOMEM;
			t->nodes[c].sibling = t->nodes[cur].child;
			t->nodes[cur].child = c;
		}
		cur = c;
	}
	if (t->nodes[cur].token < 0)
		t->nodes[cur].token = token;
	return 0;
}

int tok_trie_match(const tok_trie *t, const char *s, size_t n, size_t *mlen)
{
	if (!t->n)
		return -1;
	int cur = 0, best = -1;
	for (size_t i = 0; i < n; i++) {
		int c = t->nodes[cur].child;
		while (c >= 0 && t->nodes[c].byte != (uint8_t)s[i])
			c = t->nodes[c].sibling;
		if (c < 0)
			break;
		cur = c;
		if (t->nodes[cur].token >= 0) {
			best = t->nodes[cur].token;
			*mlen = i + 1;
		}
	}
	return best;
}

void tok_trie_free(tok_trie *t)
{
	free(t->nodes);
	memset(t, 0, sizeof *t);
}
