/* grammar_mask.h - which tokens of a vocabulary may come next under a grammar.
 *
 * The vocabulary is prepared once per model: every ordinary token's bytes,
 * sorted, with the length of the prefix each shares with the one before.
 * A mask walks that list like a trie: the matcher's advance over a shared
 * prefix is computed once, and a dead prefix skips every token beginning
 * with it. A token is allowed iff all its bytes keep the document valid
 * (so one token may close a string, add a comma and open the next key, or
 * carry half of a UTF-8 character). Added/special tokens are never allowed
 * except the end-of-sequence ids, which are allowed exactly when the
 * document is complete. */
#ifndef COLI_GRAMMAR_MASK_H
#define COLI_GRAMMAR_MASK_H

#include <stdint.h>

#include "grammar.h"
#include "tokenizer.h"

typedef struct grammar_vocab grammar_vocab;

/* eos: the ids that end a sequence (n_eos of them). */
int grammar_vocab_new(const coli_tokenizer *t, int n_vocab, const int *eos, int n_eos, grammar_vocab **out,
		      coli_err *err);
void grammar_vocab_free(grammar_vocab *v);

/* mask: (n_vocab + 63) / 64 words, bit set = allowed. Returns the number of
 * allowed tokens. Allocates nothing. */
int grammar_mask_compute(const grammar_vocab *v, grammar_matcher *m, uint64_t *mask);
/* Feed the bytes of token `id` for real (the end-of-sequence ids feed
 * nothing). -EINVAL when the token was not allowed. */
int grammar_mask_feed(const grammar_vocab *v, grammar_matcher *m, int id);
/* logits[i] = -inf where the mask bit is clear. */
void grammar_mask_apply(const uint64_t *mask, float *logits, int n);

#endif
