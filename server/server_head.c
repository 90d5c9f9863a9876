/* server_head.c - checks a request head (request line and header fields)
 * before libmicrohttpd sees it, and the framing rules both the front door
 * and the request handler apply (pure: no sockets, no MHD).
 *
 * Why: libmicrohttpd 0.9.75 answers a head it cannot parse, or one over
 * its memory, with its own HTML page (400, 413, 414, 431, 505), or closes
 * without a word (a NUL where the method should be waits for the idle
 * timeout, a tab between the parts closes at once). The front door
 * (server_door.c) runs this check on the bytes a new connection has sent,
 * so every such head gets the API's JSON error instead. The grammar is
 * RFC 9112's, strict where a lenient reading can smuggle (whitespace before
 * a colon, folded lines, control bytes, unclear body length) and lenient
 * where clients differ harmlessly (bare LF line ends, empty lines before
 * the request line, HTTP/1.2-1.9 read as 1.1, as libmicrohttpd does). The
 * size limits are below what libmicrohttpd's per-connection memory holds
 * (server_http.c's CONN_MEMORY), so a head that passes here is never
 * refused there for its size. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "server_internal.h"

/* RFC 9110 token characters (method, field name) */
static int tchar(unsigned char c)
{
	if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'))
		return 1;
	return c && strchr("!#$%&'*+-.^_`|~", c) != NULL;
}

void srv_framing_add(srv_framing *f, const char *name, size_t nlen, const char *value, size_t vlen)
{
	while (vlen && (*value == ' ' || *value == '\t')) {
		value++;
		vlen--;
	}
	while (vlen && (value[vlen - 1] == ' ' || value[vlen - 1] == '\t'))
		vlen--;
	if (nlen == 14 && !strncasecmp(name, "Content-Length", 14)) {
		size_t n = 0;
		while (n < vlen && value[n] >= '0' && value[n] <= '9')
			n++;
		if (!n || n != vlen || n >= sizeof f->cl)
			f->cl_bad = 1;
		else if (f->n_cl && (strlen(f->cl) != n || strncmp(f->cl, value, n)))
			f->cl_conflict = 1;
		else
			snprintf(f->cl, sizeof f->cl, "%.*s", (int)n, value);
		f->n_cl++;
	} else if (nlen == 17 && !strncasecmp(name, "Transfer-Encoding", 17)) {
		f->te_ok = f->n_te == 0 && vlen == 7 && !strncasecmp(value, "chunked", 7);
		f->n_te++;
	}
}

/* Framing libmicrohttpd accepts but we must not: a body whose length two
 * headers disagree on (request smuggling through a proxy), a
 * Transfer-Encoding other than chunked (MHD would wait for a body it cannot
 * delimit until the idle timeout), both at once, or a length that is not a
 * number. */
int srv_framing_check(const srv_framing *f, srv_error *e)
{
	if (f->cl_bad)
		return srv_fail(e, 400, "invalid_request_error", "invalid_content_length", NULL,
				"Content-Length must be a decimal number");
	if (f->cl_conflict)
		return srv_fail(e, 400, "invalid_request_error", "invalid_content_length", NULL,
				"conflicting Content-Length headers");
	if (f->n_te && !f->te_ok)
		return srv_fail(e, 400, "invalid_request_error", "unsupported_transfer_encoding", NULL,
				"unsupported Transfer-Encoding (only 'chunked' is accepted)");
	if (f->n_te && f->n_cl)
		return srv_fail(e, 400, "invalid_request_error", "invalid_content_length", NULL,
				"Content-Length and Transfer-Encoding must not both be sent");
	return 0;
}

static int malformed(srv_error *e, const char *what)
{
	return srv_fail(e, 400, "invalid_request_error", "malformed_request", NULL,
			"malformed HTTP request: %s", what);
}

/* More bytes are needed: fine while the head may still fit. */
static int need_more(size_t n, srv_error *e)
{
	if (n > SRV_HEAD_MAX)
		return srv_fail(e, 431, "invalid_request_error", "headers_too_large", NULL,
				"the request line and headers exceed %d bytes", SRV_HEAD_MAX);
	return 0;
}

/* The request line from p (a complete line or a prefix of one). Returns
 * the offset after its line end, 0 when more bytes are needed, or -1 with
 * e filled. */
static long request_line(const unsigned char *b, size_t n, size_t p, srv_head *h, srv_error *e)
{
	size_t m = p;
	while (m < n && tchar(b[m]))
		m++;
	if (m - p > sizeof h->method - 1)
		return malformed(e, "the method is too long"), -1;
	if (m == n)
		return need_more(n, e) ? -1 : 0;
	if (b[m] != ' ' || m == p)
		return malformed(e, "the request line is not METHOD SP TARGET SP HTTP/1.x"), -1;
	snprintf(h->method, sizeof h->method, "%.*s", (int)(m - p), (const char *)b + p);
	size_t t = ++m;
	int params = 0, query = 0;
	while (m < n && b[m] > 0x20 && b[m] < 0x7f) {
		if (b[m] == '?' && !query)
			query = params = 1;
		else if (b[m] == '&' && query)
			params++;
		m++;
	}
	if (m - t > SRV_TARGET_MAX)
		return srv_fail(e, 414, "invalid_request_error", "uri_too_long", NULL,
				"the request target exceeds %d bytes", SRV_TARGET_MAX), -1;
	if (params > SRV_PARAMS_MAX)
		return srv_fail(e, 414, "invalid_request_error", "uri_too_long", NULL,
				"more than %d query parameters", SRV_PARAMS_MAX), -1;
	if (m == n)
		return need_more(n, e) ? -1 : 0;
	if (b[m] != ' ' || m == t)
		return malformed(e, "the request target is empty or holds a control, space or non-ASCII byte"), -1;
	size_t plen = 0;
	while (t + plen < m && b[t + plen] != '?')
		plen++;
	snprintf(h->path, sizeof h->path, "%.*s", (int)(plen < sizeof h->path ? plen : sizeof h->path - 1),
		 (const char *)b + t);
	m++;
	/* HTTP/D.D then CRLF or LF, checked on whatever prefix has arrived */
	static const char ver[] = "HTTP/0.0";
	for (size_t i = 0; i < 8; i++) {
		if (m + i == n)
			return need_more(n, e) ? -1 : 0;
		unsigned char c = b[m + i];
		if (i == 5 || i == 7 ? !(c >= '0' && c <= '9') : c != (unsigned char)ver[i])
			return malformed(e, "the protocol is not HTTP/1.x"), -1;
	}
	size_t q = m + 8;
	if (q == n || (b[q] == '\r' && q + 1 == n))
		return need_more(n, e) ? -1 : 0;
	if (b[q] == '\r' && b[q + 1] == '\n')
		q += 2;
	else if (b[q] == '\n')
		q++;
	else
		return malformed(e, "the protocol is not HTTP/1.x"), -1;
	if (b[m + 5] != '1')
		return srv_fail(e, 505, "invalid_request_error", "http_version_not_supported", NULL,
				"HTTP/%c.%c is not supported (HTTP/1.0 and 1.1 are)", b[m + 5], b[m + 7]), -1;
	return (long)q;
}

static int head_check(const char *buf, size_t n, size_t max_body, srv_head *h, srv_error *e)
{
	const unsigned char *b = (const unsigned char *)buf;
	memset(h, 0, sizeof *h);
	srv_framing f = { 0 };
	size_t p = 0;
	/* empty lines before the request line are allowed (RFC 9112 2.2) */
	while (p < n && (b[p] == '\n' || (b[p] == '\r' && p + 1 < n && b[p + 1] == '\n')))
		p += b[p] == '\r' ? 2 : 1;
	if (p == n || (b[p] == '\r' && p + 1 == n))
		return need_more(n, e) ? -1 : 0;
	long r = request_line(b, n, p, h, e);
	if (r <= 0)
		return (int)r;
	p = (size_t)r;
	int fields = 0;
	for (;;) {
		if (p == n)
			return need_more(n, e) ? -1 : 0;
		if (b[p] == '\r' || b[p] == '\n') {   /* the empty line: end of the head */
			if (b[p] == '\r' && p + 1 == n)
				return need_more(n, e) ? -1 : 0;
			if (b[p] == '\r' && b[p + 1] != '\n')
				return malformed(e, "a CR without LF");
			p += b[p] == '\r' ? 2 : 1;
			break;
		}
		if (b[p] == ' ' || b[p] == '\t')
			return malformed(e, "a folded header line (obsolete line folding)");
		size_t name = p;
		while (p < n && tchar(b[p]))
			p++;
		if (p == n)
			return need_more(n, e) ? -1 : 0;
		if (b[p] != ':' || p == name)
			return malformed(e, "a header line is not NAME: VALUE (no space before the colon)");
		size_t nlen = p - name, val = ++p;
		while (p < n && (b[p] == '\t' || (b[p] >= 0x20 && b[p] != 0x7f)))
			p++;
		if (p == n)
			return need_more(n, e) ? -1 : 0;
		size_t vend = p;
		if (b[p] == '\r') {
			if (p + 1 == n)
				return need_more(n, e) ? -1 : 0;
			if (b[p + 1] != '\n')
				return malformed(e, "a CR without LF");
			p++;
		} else if (b[p] != '\n') {
			return malformed(e, "a control byte in a header value");
		}
		p++;
		if (++fields > SRV_FIELDS_MAX)
			return srv_fail(e, 431, "invalid_request_error", "headers_too_large", NULL,
					"more than %d header fields", SRV_FIELDS_MAX);
		srv_framing_add(&f, buf + name, nlen, buf + val, vend - val);
	}
	if (p > SRV_HEAD_MAX)
		return need_more(p, e);
	h->len = p;
	if (srv_framing_check(&f, e))
		return -1;
	/* a length beyond the body limit (or beyond 64 bits, which MHD
	 * refuses with its own page) is refused before a byte of it is read */
	if (f.n_cl && (strlen(f.cl) > 19 || strtoull(f.cl, NULL, 10) > max_body))
		return srv_fail(e, 413, "invalid_request_error", "request_too_large", NULL,
				"request body exceeds %zu bytes", max_body);
	return 1;
}

int srv_head_check(const char *buf, size_t n, size_t max_body, srv_head *h, srv_error *e)
{
	int rc = head_check(buf, n, max_body, h, e);
	return rc < 0 ? -1 : rc;
}

int srv_head_anthropic(const srv_head *h)
{
	const char *p = h->path;
	if (!strncmp(p, "/v1/", 4))
		p += 3;
	return !strncmp(p, "/messages", 9) && (p[9] == '\0' || p[9] == '/');
}
