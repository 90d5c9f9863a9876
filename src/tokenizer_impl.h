/* tokenizer_impl.h - internals shared by tokenizer*.c (not a contract).
 *
 * DESIGN. Byte-level BPE is run on raw bytes, not on the GPT-2 printable
 * alphabet: at load every vocab string is mapped back to the bytes it
 * stands for, so a pre-token's bytes index the vocab directly and decoding
 * is a table lookup. Merges live in an open-addressing map keyed by the
 * pair of ids. Added tokens are split out first with a byte trie (first
 * match from the left, longest at that position, like the reference), the
 * rest is normalized, pre-tokenized with PCRE2 and merged. */
#ifndef COLI_TOKENIZER_IMPL_H
#define COLI_TOKENIZER_IMPL_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "coli_err.h"
#include "tokenizer.h"

/* The id space a tokenizer file may claim for the entries it holds: the
 * tables are sized by the largest id, so a file with a handful of tokens
 * and an id near INT_MAX would make load allocate gigabytes (found by the
 * tokenizer fuzzer). Real vocabularies are dense; padding to a model's
 * vocab_size happens in the model, not here. */
#define TOK_ID_SLACK (1 << 16)
static inline int tok_id_space_ok(long max_id, size_t n_entries)
{
	return max_id >= 0 && (size_t)max_id < 2 * n_entries + TOK_ID_SLACK;
}

/* string -> id, open addressing, keys point into owned storage */
typedef struct tok_strmap {
	uint32_t cap;          /* power of two */
	uint32_t n;
	int32_t *ids;          /* slot -> id, -1 empty */
	const char **keys;     /* slot -> key bytes */
	uint32_t *lens;
} tok_strmap;

/* (left id, right id) -> merge rank and result id */
typedef struct tok_merges {
	uint32_t cap;
	uint32_t n;
	uint64_t *keys;        /* (left << 32 | right) + 1; 0 = empty */
	int32_t *rank;
	int32_t *result;
} tok_merges;

/* byte trie over added-token contents */
typedef struct tok_trie_node {
	int32_t child;         /* first child, -1 none */
	int32_t sibling;       /* next sibling, -1 none */
	int32_t token;         /* index into added[], -1 when not a token end */
	uint8_t byte;
} tok_trie_node;

typedef struct tok_trie {
	tok_trie_node *nodes;
	int n, cap;
} tok_trie;

typedef struct tok_added {
	char *content;         /* as matched (normalized form for normalized tokens) */
	size_t len;
	int id;
	uint8_t special, lstrip, rstrip, normalized;
} tok_added;

enum tok_norm_kind { TOK_NORM_NFC, TOK_NORM_NFD, TOK_NORM_NFKC, TOK_NORM_NFKD };

enum tok_split_behavior {
	TOK_SPLIT_ISOLATED, TOK_SPLIT_REMOVED, TOK_SPLIT_MERGED_PREV,
	TOK_SPLIT_MERGED_NEXT, TOK_SPLIT_CONTIGUOUS,
};

enum tok_pretok_kind { TOK_PRE_SPLIT, TOK_PRE_BYTELEVEL };

typedef struct tok_pretok {
	int kind;
	pcre2_code *re;        /* SPLIT (and BYTELEVEL with use_regex) */
	int behavior;
	int invert;
	int add_prefix_space;  /* BYTELEVEL */
} tok_pretok;

/* bounded cache of BPE results for frequent pre-tokens */
typedef struct tok_cache_entry {
	uint64_t hash;
	char *key;
	uint32_t key_len;
	uint32_t n_ids;
	int32_t *ids;
} tok_cache_entry;

typedef struct tok_arena {
	struct tok_arena *next;
	size_t size, used;
	char mem[];
} tok_arena;

struct coli_tokenizer {
	tok_arena *arena;      /* token strings and names */
	int n_ids;             /* highest id + 1 */
	char **text;           /* id -> bytes the token stands for (NULL: no token) */
	uint32_t *text_len;
	uint8_t *flags;        /* id -> TOK_F_* */
	tok_strmap vocab;      /* bytes -> id, byte-level vocabulary */
	tok_strmap names;      /* token string as written in the file -> id */
	int32_t byte_id[256];
	tok_merges merges;
	int ignore_merges;
	int unk_id;

	tok_added *added;
	int n_added;
	tok_trie trie_raw;     /* tokens matched before normalization */
	tok_trie trie_norm;    /* normalized tokens, matched after */

	int has_normalizer;    /* the file names one (even an empty Sequence) */
	int norm[8];
	int n_norm;
	tok_pretok *pre;
	int n_pre;

	int bos_id, eos_id;
	char *chat_template;
	char *chat_template_tool_use;  /* tokenizer_config.json's "tool_use" template */
	char *dir;             /* directory of tokenizer.json */

	pthread_mutex_t cache_lock;
	tok_cache_entry *cache;
	uint32_t cache_cap;
	uint32_t cache_n;
};

enum { TOK_F_ADDED = 1, TOK_F_SPECIAL = 2 };

/* tokenizer_load.c: pieces the tiktoken loader shares */
/* Copy into the tokenizer's arena (freed with it). */
char *tok_arena_dup(coli_tokenizer *t, const char *s, size_t len);
/* text[id] = bytes (arena copy). */
int tok_set_token(coli_tokenizer *t, int id, const char *bytes, size_t len);
/* Append a pre-tokenizer step (takes p.re). */
int tok_add_pretok(coli_tokenizer *t, tok_pretok p, const char *path, coli_err *err);
/* bos/eos, additional special tokens and the chat template from
 * tokenizer_config.json (absent file: nothing). */
int tok_load_config(coli_tokenizer *t, const char *cfg_path, coli_err *err);

/* tokenizer_tiktoken.c */
/* Load DIR/tiktoken.model with DIR/tokenizer_config.json. */
int tok_load_tiktoken(const char *model_path, coli_tokenizer **out, coli_err *err);

/* tokenizer_map.c */
int tok_strmap_init(tok_strmap *m, uint32_t expect);
void tok_strmap_free(tok_strmap *m);
int tok_strmap_put(tok_strmap *m, const char *key, uint32_t len, int id);
/* Like put, but an existing key gets the new id; 1 when inserted. */
int tok_strmap_set(tok_strmap *m, const char *key, uint32_t len, int id);
int tok_strmap_get(const tok_strmap *m, const char *key, size_t len);
int tok_merges_init(tok_merges *m, uint32_t expect);
void tok_merges_free(tok_merges *m);
int tok_merges_put(tok_merges *m, int left, int right, int rank, int result);
/* rank of the pair, -1 when it does not merge; *result the merged id */
int tok_merges_get(const tok_merges *m, int left, int right, int *result);
int tok_trie_add(tok_trie *t, const char *s, size_t len, int token);
/* longest token starting at s[0..n); returns its index or -1, *mlen set */
int tok_trie_match(const tok_trie *t, const char *s, size_t n, size_t *mlen);
void tok_trie_free(tok_trie *t);
uint64_t tok_hash_bytes(const void *p, size_t n);

/* tokenizer_pretok.c */
/* Normalize text per the file's normalizers; *out malloc'd. */
int tok_normalize(const coli_tokenizer *t, const char *s, size_t n, char **out, size_t *out_len,
		  coli_err *err);
/* Compile a Split pattern (JS/Oniguruma semantics translated to PCRE2). */
pcre2_code *tok_regex_compile(const char *pattern, int literal, coli_err *err);
/* Pre-tokenize s[0..n): append (offset, length) pairs to *spans. The
 * offsets index s, or *rebuilt (malloc'd) when a ByteLevel step with
 * add_prefix_space had to insert spaces; *rebuilt is NULL otherwise. */
typedef struct tok_spans {
	size_t *v;             /* pairs: off, len */
	size_t n, cap;
} tok_spans;
int tok_pretokenize(const coli_tokenizer *t, const char *s, size_t n, char **rebuilt,
		    tok_spans *spans, coli_err *err);

/* tokenizer_bpe.c */
typedef struct tok_ids {
	int *v;
	size_t n, cap;
} tok_ids;
int tok_ids_push(tok_ids *a, int id);
/* BPE one pre-token (raw bytes); appends ids. */
int tok_bpe_word(coli_tokenizer *t, const char *s, size_t n, tok_ids *out);
void tok_cache_free(coli_tokenizer *t);

#endif
