/* chat_think.h - the reasoning of a thinking model split out of its
 * generated text, piece by piece as it streams (pure; no I/O).
 *
 * A thinking block is "<think>" ... "</think>". It is open from the start
 * when the rendered prompt ended with "<think>" (GLM-5), or the model may
 * open it as its first output (DeepSeek-R1 style). Text inside goes to the
 * reasoning, the rest to the answer. A marker may arrive split across
 * pieces (or as a special token's text): the longest tail that could begin
 * it is held until the next piece decides, so the result never depends on
 * how the text was cut. As the reference templates do, newlines right
 * after "<think>" and right after "</think>" are dropped.
 *
 * Used by the server (server_think.c: reasoning_content, thinking blocks)
 * and by colitop's chat (the collapsed thinking line). */
#ifndef COLI_CHAT_THINK_H
#define COLI_CHAT_THINK_H

#include <stddef.h>

#include "util_buf.h"

/* Receives the routed text: reasoning != 0 for the thinking. */
typedef void (*chat_think_sink)(void *ctx, int reasoning, const char *s, size_t n);

typedef struct chat_think {
	int state;
	int seen;                  /* a thinking block was open at some point */
	int skip_nl;               /* drop newlines at the start of the next part */
	int oom;                   /* sticky: holding text failed (since then text is routed unheld) */
	util_buf held;             /* may be the start of a marker */
} chat_think;

/* open: the prompt left a thinking block open. */
void chat_think_init(chat_think *t, int open);
void chat_think_free(chat_think *t);
/* Route generated text to the sink. */
void chat_think_push(chat_think *t, const char *text, size_t len, chat_think_sink fn, void *ctx);
/* The end of the text: route what is held. */
void chat_think_flush(chat_think *t, chat_think_sink fn, void *ctx);
/* Inside the thinking block now (the next token counts as reasoning). */
int chat_think_inside(const chat_think *t);

/* A whole stored answer "REASONING</think>ANSWER" (or "<think>...</think>
 * ANSWER") split in place of the stream: *r / *a point into text. 0 when
 * it holds no "</think>" (all answer). The newline rules are the
 * splitter's. */
int chat_think_split(const char *text, size_t len, const char **r, size_t *rlen, const char **a,
		     size_t *alen);

#endif
