/* tokenizer_bpe.c - byte-pair merging of one pre-token.
 *
 * Symbols form a doubly linked list over the word's bytes; candidate pairs
 * sit in a binary min-heap ordered by (merge rank, position of the left
 * symbol), which is the reference's order (lowest rank first, leftmost on
 * ties). Stale heap entries are recognised on pop and dropped. Results of
 * short words are kept in a bounded cache. */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "tokenizer_impl.h"
#include "util_array.h"

#define CACHE_MAX_WORD 256
#define CACHE_SLOTS 32768u

int tok_ids_push(tok_ids *a, int id)
{
	if (util_array_grow(&a->v, &a->cap, a->n + 1, 64))
		return -ENOMEM;
	a->v[a->n++] = id;
	return 0;
}

typedef struct heap_ent {
	int rank, pos;
} heap_ent;

static int ent_less(heap_ent a, heap_ent b)
{
	return a.rank < b.rank || (a.rank == b.rank && a.pos < b.pos);
}

static void heap_push(heap_ent *h, int *n, heap_ent e)
{
	int i = (*n)++;
	while (i > 0) {
		int p = (i - 1) / 2;
		if (!ent_less(e, h[p]))
			break;
		h[i] = h[p];
		i = p;
	}
	h[i] = e;
}

static heap_ent heap_pop(heap_ent *h, int *n)
{
	heap_ent top = h[0], last = h[--(*n)];
	int i = 0;
	for (;;) {
		int c = 2 * i + 1;
		if (c >= *n)
			break;
		if (c + 1 < *n && ent_less(h[c + 1], h[c]))
			c++;
		if (!ent_less(h[c], last))
			break;
		h[i] = h[c];
		i = c;
	}
	if (*n > 0)
		h[i] = last;
	return top;
}

static int cache_get(coli_tokenizer *t, uint64_t hash, const char *s, size_t n, tok_ids *out,
		     int *hit)
{
	*hit = 0;
	if (pthread_mutex_trylock(&t->cache_lock))
		return 0;
	int rc = 0;
	if (t->cache) {
		uint32_t mask = t->cache_cap - 1;
		for (uint32_t i = (uint32_t)hash & mask; t->cache[i].key; i = (i + 1) & mask) {
			tok_cache_entry *e = &t->cache[i];
			if (e->hash == hash && e->key_len == n && !memcmp(e->key, s, n)) {
				for (uint32_t k = 0; k < e->n_ids && rc == 0; k++)
					rc = tok_ids_push(out, e->ids[k]);
				*hit = 1;
				break;
			}
		}
	}
	pthread_mutex_unlock(&t->cache_lock);
	return rc;
}

/* An entry's ids and key share one allocation that starts at ids: this is
 * the only place that frees it, so clear and free cannot disagree on which
 * pointer owns the block (freeing the interior key pointer aborted the server). */
static void cache_entry_free(tok_cache_entry *e)
{
	if (!e->key)
		return;
	free(e->ids);
	e->ids = NULL;
	e->key = NULL;
}

static void cache_clear(coli_tokenizer *t)
{
	for (uint32_t i = 0; t->cache && i < t->cache_cap; i++)
		cache_entry_free(&t->cache[i]);
	t->cache_n = 0;
}

static void cache_put(coli_tokenizer *t, uint64_t hash, const char *s, size_t n, const int *ids,
		      size_t n_ids)
{
	if (pthread_mutex_trylock(&t->cache_lock))
		return;
	if (!t->cache) {
		t->cache = calloc(CACHE_SLOTS, sizeof *t->cache);
		t->cache_cap = t->cache ? CACHE_SLOTS : 0;
	}
	if (!t->cache)
		goto out;
	if (t->cache_n * 4 >= t->cache_cap * 3)
		cache_clear(t); /* crude but bounded: frequent words come back fast */
	/* key and ids in one allocation */
	char *mem = malloc(n + n_ids * sizeof(int32_t) + sizeof(int32_t));
	if (!mem)
		goto out;
	uint32_t mask = t->cache_cap - 1, i = (uint32_t)hash & mask;
	while (t->cache[i].key)
		i = (i + 1) & mask;
	tok_cache_entry *e = &t->cache[i];
	e->ids = (int32_t *)(void *)mem;
	for (size_t k = 0; k < n_ids; k++)
		e->ids[k] = ids[k];
	e->key = mem + n_ids * sizeof(int32_t);
	memcpy(e->key, s, n);
	e->key_len = (uint32_t)n;
	e->n_ids = (uint32_t)n_ids;
	e->hash = hash;
	t->cache_n++;
out:
	pthread_mutex_unlock(&t->cache_lock);
}

void tok_cache_free(coli_tokenizer *t)
{
	cache_clear(t);
	free(t->cache);
	t->cache = NULL;
	t->cache_cap = 0;
}

int tok_bpe_word(coli_tokenizer *t, const char *s, size_t n, tok_ids *out)
{
	if (n == 0)
		return 0;
	if (t->ignore_merges || n == 1) {
		int id = tok_strmap_get(&t->vocab, s, n);
		if (id >= 0)
			return tok_ids_push(out, id);
	}
	uint64_t hash = 0;
	int hit, rc;
	if (n < CACHE_MAX_WORD) {
		hash = tok_hash_bytes(s, n);
		if ((rc = cache_get(t, hash, s, n, out, &hit)) < 0 || hit)
			return rc;
	}
	enum { SMALL = 64 };
	int sid_s[SMALL], prev_s[SMALL], next_s[SMALL];
	heap_ent heap_s[3 * SMALL];
	int *sid = sid_s, *prev = prev_s, *next = next_s;
	heap_ent *heap = heap_s;
	void *big = NULL;
	if (n > SMALL) {
		/* each merge pushes at most two entries: n + 2n bound */
		big = malloc(n * 3 * sizeof(int) + 3 * n * sizeof(heap_ent));
		if (!big)
			return -ENOMEM;
		sid = big;
		prev = sid + n;
		next = prev + n;
		heap = (heap_ent *)(void *)(next + n);
	}
	int nh = 0, r;
	for (size_t i = 0; i < n; i++) {
		int id = t->byte_id[(uint8_t)s[i]];
		sid[i] = id >= 0 ? id : -2;
		prev[i] = (int)i - 1;
		next[i] = i + 1 < n ? (int)i + 1 : -1;
	}
	for (size_t i = 0; i + 1 < n; i++) {
		int rk = tok_merges_get(&t->merges, sid[i], sid[i + 1], &r);
		if (rk >= 0)
			heap_push(heap, &nh, (heap_ent){ rk, (int)i });
	}
	while (nh > 0) {
		heap_ent e = heap_pop(heap, &nh);
		int p = e.pos, q = next[p];
		if (sid[p] == -1 || q < 0)
			continue;
		int rk = tok_merges_get(&t->merges, sid[p], sid[q], &r);
		if (rk != e.rank)
			continue; /* stale: this position's pair changed */
		sid[p] = r;
		sid[q] = -1;
		next[p] = next[q];
		if (next[q] >= 0)
			prev[next[q]] = p;
		if (prev[p] >= 0 && (rk = tok_merges_get(&t->merges, sid[prev[p]], sid[p], &r)) >= 0)
			heap_push(heap, &nh, (heap_ent){ rk, prev[p] });
		if (next[p] >= 0 && (rk = tok_merges_get(&t->merges, sid[p], sid[next[p]], &r)) >= 0)
			heap_push(heap, &nh, (heap_ent){ rk, p });
	}
	size_t first = out->n;
	rc = 0;
	for (int i = 0; i >= 0 && rc == 0; i = next[i]) {
		if (sid[i] >= 0)
			rc = tok_ids_push(out, sid[i]);
		else if (t->unk_id >= 0)
			rc = tok_ids_push(out, t->unk_id);
		/* else: dropped, as the reference does without an unk token */
	}
	/* out->v is still NULL when every byte was dropped (no ids at all) */
	if (rc == 0 && n < CACHE_MAX_WORD)
		cache_put(t, hash, s, n, out->v ? out->v + first : NULL, out->n - first);
	free(big);
	return rc;
}
