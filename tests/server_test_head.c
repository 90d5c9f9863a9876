/* server_test_head.c - the request head check of the front door
 * (server_head.c), fed the way a socket delivers: every prefix of a valid
 * head asks for more bytes and never passes or fails, the whole head
 * passes; a bad head fails with its status as soon as the offending byte
 * has arrived (a NUL first byte after one byte), and no prefix of it
 * passes. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server_internal.h"
#include "test_util.h"

#define MAX_BODY 1000

/* A valid head (then `tail`, the start of a body or the next request). */
static void ok(const char *head, const char *tail, const char *method, const char *path)
{
	size_t n = strlen(head);
	char *buf = malloc(n + strlen(tail) + 1);
	memcpy(buf, head, n);
	strcpy(buf + n, tail);
	srv_head h;
	srv_error e;
	for (size_t k = 0; k < n; k++) {
		int rc = srv_head_check(buf, k, MAX_BODY, &h, &e);
		if (rc != 0) {
			FAIL("valid head %.40s...: prefix of %zu bytes gave %d (%d %s)",
				head, k, rc, rc < 0 ? e.status : 0, rc < 0 ? e.message : "");
			break;
		}
	}
	int rc = srv_head_check(buf, n + strlen(tail), MAX_BODY, &h, &e);
	CHECK(rc == 1 && h.len == n && !strcmp(h.method, method) && !strcmp(h.path, path),
		"valid head %.40s...: rc %d len %zu/%zu method %s path %s (%s)", head, rc,
			h.len, n, h.method, h.path, rc < 0 ? e.message : "");
	free(buf);
}

/* A bad head: fails with `status` once its first `decided` bytes are
 * there (0: only when complete), passes at no prefix. */
static void bad_n(const char *head, size_t n, int status, size_t decided)
{
	srv_head h;
	srv_error e;
	if (!decided)
		decided = n;
	for (size_t k = 0; k <= n; k++) {
		memset(&e, 0, sizeof e);
		int rc = srv_head_check(head, k, MAX_BODY, &h, &e);
		int want = k >= decided ? -1 : 0;
		if (rc != want || (rc < 0 && e.status != status) || (rc < 0 && !e.message[0])) {
			FAIL("bad head %.40s...: %zu of %zu bytes gave %d (%d %s), want %d (%d)",
				head, k, n, rc, e.status, e.message, want, status);
			return;
		}
	}
}

static void bad(const char *head, int status, size_t decided)
{
	bad_n(head, strlen(head), status, decided);
}

/* A head of n bytes: request line, fields named X-Fk, padding. */
static char *big_head(size_t n, int fields)
{
	char *b = malloc(n + 1);
	size_t p = (size_t)sprintf(b, "GET /health HTTP/1.1\r\n");
	for (int k = 0; k < fields - 1; k++)
		p += (size_t)sprintf(b + p, "X-F%d: v\r\n", k);
	p += (size_t)sprintf(b + p, "X-Pad: ");
	while (p < n - 4)
		b[p++] = 'z';
	memcpy(b + p, "\r\n\r\n", 5);
	return b;
}

int main(void)
{
	ok("GET /health HTTP/1.1\r\nHost: x\r\n\r\n", "", "GET", "/health");
	ok("POST /v1/chat/completions?a=1 HTTP/1.1\r\nHost: x\r\nContent-Length: 7\r\n"
	   "Content-Type: application/json\r\n\r\n", "{\"a\":1}", "POST", "/v1/chat/completions");
	ok("GET /health HTTP/1.0\r\n\r\n", "GET /next HTTP/1.1\r\n", "GET", "/health");
	ok("GET /health HTTP/1.1\nHost: x\n\n", "", "GET", "/health");           /* bare LF */
	ok("\r\n\r\nGET /x HTTP/1.1\r\n\r\n", "", "GET", "/x");                 /* empty lines first */
	ok("GET /x HTTP/1.5\r\n\r\n", "", "GET", "/x");                         /* read as 1.1 */
	ok("OPTIONS * HTTP/1.1\r\nA: \t v \t\r\nB:\r\n\r\n", "", "OPTIONS", "*");
	ok("POST /v1/messages HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n", "0\r\n\r\n", "POST",
	   "/v1/messages");
	ok("POST /x HTTP/1.1\r\nContent-Length: 5\r\ncontent-length: 5\r\n\r\n", "hello", "POST", "/x");
	ok("GET /x HTTP/1.1\r\nX: caf\xc3\xa9\r\n\r\n", "", "GET", "/x");     /* obs-text */

	bad("\0GET / HTTP/1.1\r\n\r\n", 400, 1);
	bad_n("\0GET / HTTP/1.1\r\n\r\n", 19, 400, 1);
	bad("\x16\x03\x01\x02\x00", 400, 1);                /* a TLS hello */
	bad("hello world\r\n\r\n", 400, 12);
	bad("GET /health\r\n\r\n", 400, 12);
	bad("GET /health http/1.1\r\n\r\n", 400, 13);
	bad("GET /health HTTP/1.10\r\n\r\n", 400, 21);
	bad("GET /health HTTP/1.1 \r\n\r\n", 400, 21);
	bad("GET /health HTTP/1.1\rX\r\n\r\n", 400, 22);
	bad("GET /health HTTP/2.0\r\n\r\n", 505, 22);
	bad("GET /health HTTP/0.9\r\n\r\n", 505, 22);
	bad("GET\t/health HTTP/1.1\r\n\r\n", 400, 4);
	bad("GET  /health HTTP/1.1\r\n\r\n", 400, 5);
	bad("G(T / HTTP/1.1\r\n\r\n", 400, 2);
	bad("GET /a\x01 HTTP/1.1\r\n\r\n", 400, 7);
	bad("GET /caf\xc3\xa9 HTTP/1.1\r\n\r\n", 400, 9);
	bad("GET / HTTP/1.1\r\nfoo\r\n\r\n", 400, 20);
	bad("GET / HTTP/1.1\r\nfoo : bar\r\n\r\n", 400, 20);
	bad("GET / HTTP/1.1\r\n: v\r\n\r\n", 400, 17);
	bad("GET / HTTP/1.1\r\nA: b\r\n c\r\n\r\n", 400, 23);
	bad_n("GET / HTTP/1.1\r\nA: b\0c\r\n\r\n", 26, 400, 21);
	bad("GET / HTTP/1.1\r\nA: b\x7f\r\n\r\n", 400, 21);
	bad("GET / HTTP/1.1\r\nA: b\rc\r\n\r\n", 400, 22);
	bad("GET / HTTP/1.1\r\n\rx", 400, 18);
	/* framing: decided once the head is complete */
	bad("POST / HTTP/1.1\r\nContent-Length: abc\r\n\r\n", 400, 0);
	bad("POST / HTTP/1.1\r\nContent-Length: -1\r\n\r\n", 400, 0);
	bad("POST / HTTP/1.1\r\nContent-Length: 5, 5\r\n\r\n", 400, 0);
	bad("POST / HTTP/1.1\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n", 400, 0);
	bad("POST / HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\n", 400, 0);
	bad("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n", 400, 0);
	bad("POST / HTTP/1.1\r\nContent-Length: 1001\r\n\r\n", 413, 0);
	bad("POST / HTTP/1.1\r\nContent-Length: 99999999999999999999999\r\n\r\n", 413, 0);
	ok("POST / HTTP/1.1\r\nContent-Length: 1000\r\n\r\n", "", "POST", "/");

	/* sizes: the target, parameters, fields, the whole head */
	{
		char *t = malloc(SRV_TARGET_MAX + 64);
		int p = sprintf(t, "GET /");
		memset(t + p, 'a', SRV_TARGET_MAX - 1);
		strcpy(t + p + SRV_TARGET_MAX - 1, " HTTP/1.1\r\n\r\n");
		srv_head h;
		srv_error e;
		CHECK(srv_head_check(t, strlen(t), MAX_BODY, &h, &e) == 1 && strlen(h.path) == sizeof h.path - 1);
		memmove(t + 5, t + 4, strlen(t + 4) + 1);  /* one byte more */
		bad(t, 414, 5 + SRV_TARGET_MAX);
		p = sprintf(t, "GET /x?a");
		for (int k = 1; k < SRV_PARAMS_MAX; k++)
			p += sprintf(t + p, "&a");
		strcpy(t + p, " HTTP/1.1\r\n\r\n");
		CHECK(srv_head_check(t, strlen(t), MAX_BODY, &h, &e) == 1);
		strcpy(t + p, "&a HTTP/1.1\r\n\r\n");
		bad(t, 414, (size_t)p + 1);
		free(t);
	}
	{
		char *b = big_head(SRV_HEAD_MAX, SRV_FIELDS_MAX);
		srv_head h;
		srv_error e;
		CHECK(srv_head_check(b, SRV_HEAD_MAX, MAX_BODY, &h, &e) == 1 && h.len == SRV_HEAD_MAX);
		free(b);
		b = big_head(SRV_HEAD_MAX + 1, 2);
		CHECK(srv_head_check(b, SRV_HEAD_MAX + 1, MAX_BODY, &h, &e) == -1 && e.status == 431);
		/* an endless header line fails once the head cannot fit */
		CHECK(srv_head_check(b, SRV_HEAD_MAX, MAX_BODY, &h, &e) == 0);
		free(b);
		b = big_head(SRV_HEAD_MAX, SRV_FIELDS_MAX + 1);
		CHECK(srv_head_check(b, SRV_HEAD_MAX, MAX_BODY, &h, &e) == -1 && e.status == 431);
		free(b);
	}
	/* the error shape follows the route */
	{
		srv_head h;
		srv_error e;
		srv_head_check("POST /v1/messages HTTP/1.1\r\nA\r\n", 31, MAX_BODY, &h, &e);
		CHECK(srv_head_anthropic(&h));
		srv_head_check("POST /messages/count_tokens?x HTTP/1.1\r\n", 40, MAX_BODY, &h, &e);
		CHECK(srv_head_anthropic(&h));
		srv_head_check("POST /v1/messagesx HTTP/1.1\r\n", 29, MAX_BODY, &h, &e);
		CHECK(!srv_head_anthropic(&h));
		srv_head_check("\0", 1, MAX_BODY, &h, &e);
		CHECK(!srv_head_anthropic(&h));
	}
	return test_summary(__FILE__);
}
