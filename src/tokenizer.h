/* tokenizer.h - Hugging Face tokenizer.json (byte-level BPE) in C.
 *
 * Contract used by the engine, the server and the TUI. The implementation
 * (tokenizer*.c) is checked id-for-id against the reference JavaScript
 * implementation on real tokenizer files. */
#ifndef COLI_TOKENIZER_H
#define COLI_TOKENIZER_H

#include <stddef.h>
#include <stdint.h>

#include "coli_err.h"

typedef struct coli_tokenizer coli_tokenizer;

/* Load tokenizer.json; tokenizer_config.json beside it (if present) gives
 * bos/eos tokens, add_bos_token and the chat template. */
int coli_tokenizer_load(const char *tokenizer_json_path, coli_tokenizer **out, coli_err *err);
/* Load from a model directory (container: DIR/tokenizer/, HF: DIR/). */
int coli_tokenizer_load_dir(const char *dir, coli_tokenizer **out, coli_err *err);
void coli_tokenizer_free(coli_tokenizer *t);

/* Encode UTF-8 text (added/special tokens recognised in the text). The
 * caller frees *ids. Does not add BOS: chat templates write it as text. */
int coli_tokenizer_encode(const coli_tokenizer *t, const char *text, size_t len,
			  int **ids, size_t *n_ids, coli_err *err);

int coli_tokenizer_vocab_size(const coli_tokenizer *t);
/* 0 when every id the tokenizer can produce is a row of the model's
 * embedding (ids < model_vocab), else -EINVAL naming the tokenizer file:
 * a tokenizer from another model. Engine open and coli doctor share it. */
int coli_tokenizer_check_vocab(const coli_tokenizer *t, int model_vocab, coli_err *err);
/* The id of a token string (e.g. "<｜end▁of▁sentence｜>"), -1 if absent. */
int coli_tokenizer_token_id(const coli_tokenizer *t, const char *token);
int coli_tokenizer_bos_id(const coli_tokenizer *t);   /* -1 when none */
int coli_tokenizer_eos_id(const coli_tokenizer *t);   /* -1 when none */
/* Non-zero when id is a special (control) token, never shown as text. */
int coli_tokenizer_is_special(const coli_tokenizer *t, int id);

/* Decode ids to UTF-8 (whole sequence); caller frees *text. Invalid UTF-8
 * produced by a byte-level decode is replaced with U+FFFD. */
int coli_tokenizer_decode(const coli_tokenizer *t, const int *ids, size_t n,
			  int skip_special, char **text, size_t *len, coli_err *err);

/* Streaming decode: bytes are held until a UTF-8 character is complete, so
 * every chunk emitted is valid UTF-8. */
typedef struct coli_detok {
	uint8_t pending[8];
	int n_pending;
} coli_detok;
void coli_detok_init(coli_detok *d);
/* Append the text of `id` to out (capacity cap); returns bytes written. A
 * token's text is at most a few hundred bytes; cap >= 1024 is always
 * enough. Special tokens produce no text when skip_special is set. */
size_t coli_detok_push(const coli_tokenizer *t, coli_detok *d, int id, int skip_special,
		       char *out, size_t cap);
/* Flush held bytes at end of stream (incomplete sequences become U+FFFD). */
size_t coli_detok_flush(coli_detok *d, char *out, size_t cap);

/* The text a token stands for (NUL-terminated; for added tokens their
 * content), or NULL for an id outside the vocabulary. Owned by t. */
const char *coli_tokenizer_token_text(const coli_tokenizer *t, int id);

/* The bytes an ordinary token decodes to (may be part of a UTF-8
 * character), or NULL for added/special tokens and ids outside the
 * vocabulary. Owned by t. */
const uint8_t *coli_tokenizer_token_bytes(const coli_tokenizer *t, int id, size_t *len);

/* The raw chat template: chat_template.jinja beside tokenizer_config.json,
 * else the config's chat_template (its "default" when it is a list of
 * named templates), or NULL. */
const char *coli_tokenizer_chat_template(const coli_tokenizer *t);
/* The config's template named "tool_use" (used when tools are given, as
 * transformers does), or NULL. */
const char *coli_tokenizer_chat_template_tool_use(const coli_tokenizer *t);

#endif
