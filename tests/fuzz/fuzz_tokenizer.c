/* fuzz_tokenizer.c - libFuzzer target for the tokenizer loader
 * (tokenizer.json: model, vocab, merges, added tokens, normalizer,
 * pre-tokenizer regexes, decoder; tokenizer_config.json: special tokens,
 * chat template) and, when a file loads, for encode and decode.
 *
 * Input: TOKENIZER_JSON [0xFF CONFIG_JSON [0xFF TEXT]] (0xFF never occurs
 * in UTF-8, so it cannot be part of valid JSON). Without a TEXT part a
 * fixed sample with specials, digits, CJK and emoji is encoded.
 * Invariants: a refusal explains itself; every id encode produces is in
 * the vocabulary; decode of those ids succeeds.
 *
 * Built by tests/fuzz/run-fuzz.sh; linked into tests/fuzz_tokenizer_corpus
 * so the seeds in tests/fuzz/corpus-tokenizer run in `make check`. */
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_util.h"
#include "tokenizer.h"

static const char sample[] = "Hello, world! 12345 <|endoftext|> 你好 🙂 \t\n  don't";

/* 1 when the last input was accepted by coli_tokenizer_load (read by
 * tests/fuzz_corpus.c for ok-* / bad-* seeds) */
int fuzz_accepted;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char dir[64], path[128];
	fuzz_quiet();
	const uint8_t *sep1 = memchr(data, 0xff, size);
	size_t tok_len = sep1 ? (size_t)(sep1 - data) : size;
	const uint8_t *cfg = sep1 ? sep1 + 1 : NULL;
	size_t cfg_len = 0;
	const char *text = sample;
	size_t text_len = sizeof sample - 1;
	if (cfg) {
		const uint8_t *end = data + size;
		const uint8_t *sep2 = memchr(cfg, 0xff, (size_t)(end - cfg));
		cfg_len = sep2 ? (size_t)(sep2 - cfg) : (size_t)(end - cfg);
		if (sep2) {
			text = (const char *)sep2 + 1;
			text_len = (size_t)(end - sep2 - 1);
		}
	}
	if (fuzz_tmpdir(dir, sizeof dir))
		abort();
	snprintf(path, sizeof path, "%s/tokenizer.json", dir);
	fuzz_write(path, data, tok_len);
	if (cfg) {
		char cpath[128];
		snprintf(cpath, sizeof cpath, "%s/tokenizer_config.json", dir);
		fuzz_write(cpath, cfg, cfg_len);
	}

	coli_tokenizer *t = NULL;
	coli_err err = { 0 };
	fuzz_accepted = coli_tokenizer_load(path, &t, &err) == 0;
	if (!fuzz_accepted) {
		if (!err.msg[0] || t)
			abort();
	} else {
		int *ids = NULL;
		size_t n = 0;
		int V = coli_tokenizer_vocab_size(t);
		if (V <= 0 || coli_tokenizer_bos_id(t) >= V || coli_tokenizer_eos_id(t) >= V)
			abort();
		if (coli_tokenizer_encode(t, text, text_len, &ids, &n, &err) == 0) {
			for (size_t i = 0; i < n; i++)
				if (ids[i] < 0 || ids[i] >= V)
					abort();
			char *out = NULL;
			size_t out_len = 0;
			if (coli_tokenizer_decode(t, ids, n, 0, &out, &out_len, &err) < 0)
				abort();
			free(out);
		} else if (!err.msg[0]) {
			abort();
		}
		free(ids);
		coli_tokenizer_free(t);
	}
	fuzz_rmtree(dir);
	return 0;
}
