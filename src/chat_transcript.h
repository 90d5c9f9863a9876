/* chat_transcript.h - the visible conversation of a chat session, kept
 * beside its KV file as CACHE_DIR/kv/NAME.chat.json so colitop and
 * `coli chat` show and continue the same conversation:
 *
 *   {"format": "colitop-chat", "version": 1, "session": NAME,
 *    "last_finish": "" | "stop" | "length" | "cancelled" | "error",
 *    "messages": [{"role": "system|user|assistant|note|error",
 *                  "content": TEXT,
 *                  "reasoning_content": TEXT, "reasoning_tokens": N}, ...]}
 *
 * "reasoning_content" (the thinking of a thinking model, split out of an
 * assistant answer) and "reasoning_tokens" (its length in tokens) are
 * optional: they are written only for an answer that thought, older
 * readers ignore them, and a file without them still loads (an old
 * colitop kept "THINKING</think>ANSWER" in "content"; the loader splits
 * that, with the token count unknown). Written atomically (temporary
 * file, fsync, rename). The KV file is the truth for the model; the
 * transcript is for people. */
#ifndef COLI_CHAT_TRANSCRIPT_H
#define COLI_CHAT_TRANSCRIPT_H

#include <stddef.h>

#include "chat_template.h"
#include "coli_err.h"

typedef struct chat_transcript {
	coli_chat_msg *msgs;   /* role and content owned by the transcript */
	/* parallel to msgs: the thinking of an answer (NULL: none) and its
	 * tokens (0: not known) */
	char **reasoning;
	int *reasoning_tokens;
	int n, cap;
	int last_finish;       /* enum coli_finish of the last answer, 0 = none */
} chat_transcript;

/* Load NAME.chat.json from kv_dir; a missing file is an empty transcript. */
int chat_transcript_load(const char *kv_dir, const char *session, chat_transcript *t, coli_err *err);
int chat_transcript_save(const char *kv_dir, const char *session, const chat_transcript *t,
			 coli_err *err);
int chat_transcript_add(chat_transcript *t, const char *role, const char *text, size_t len);
/* Attach thinking to message i (replacing any); tokens 0 when unknown. */
int chat_transcript_set_reasoning(chat_transcript *t, int i, const char *text, size_t len, int tokens);
/* Keep only the first n messages. */
void chat_transcript_truncate(chat_transcript *t, int n);
void chat_transcript_free(chat_transcript *t);


#endif
