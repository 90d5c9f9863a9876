/* server_think.c - the reasoning splitter (chat_think.h) writing into the
 * server's buffers: reasoning_content / thinking blocks and the answer. */
#include "config.h"

#include "server_internal.h"

typedef struct think_bufs {
	util_buf *reasoning, *answer;
} think_bufs;

static void to_bufs(void *ctx, int reasoning, const char *s, size_t n)
{
	think_bufs *b = ctx;
	util_buf_add(reasoning ? b->reasoning : b->answer, s, n);
}

void srv_think_push(srv_think *t, const char *text, size_t len, util_buf *reasoning, util_buf *answer)
{
	think_bufs b = { reasoning, answer };
	chat_think_push(t, text, len, to_bufs, &b);
}

void srv_think_flush(srv_think *t, util_buf *reasoning, util_buf *answer)
{
	think_bufs b = { reasoning, answer };
	chat_think_flush(t, to_bufs, &b);
}
