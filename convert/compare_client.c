/* compare_client.c - one streamed chat completion against an
 * OpenAI-compatible endpoint with libcurl, timed the way a user feels it:
 * time to first content, total time, characters and tokens.
 *
 * The SSE decoder is strict about what it needs (data lines holding JSON,
 * a final [DONE]) and lenient about the rest (comments, event:/id:/retry:
 * fields, CRLF). A stream that ends without [DONE] is a disconnect, never
 * a success: a cut answer would otherwise pass for a short one.
 *
 * The key goes only into the Authorization header; error messages name the
 * variable it came from, never the value. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <curl/curl.h>
#include <jansson.h>

#include "compare.h"
#include "util_time.h"

void cmp_result_free(cmp_result *r)
{
	if (!r)
		return;
	util_buf_free(&r->text);
}

int cmp_base_url(const char *url, char *out, size_t cap, coli_err *err)
{
	const char *p = strstr(url, "://");
	if (!p || (strncmp(url, "http://", 7) && strncmp(url, "https://", 8)))
		return coli_err_set(err, -EINVAL, "'%s': not an http:// or https:// URL", url);
	size_t n = strlen(url);
	while (n > (size_t)(p + 3 - url) && url[n - 1] == '/')
		n--;
	const char *path = strchr(p + 3, '/');
	int has_path = path && (size_t)(path - url) < n;
	if (n + 4 > cap)
		return coli_err_set(err, -EINVAL, "'%.100s...': URL too long", url);
	snprintf(out, cap, "%.*s%s", (int)n, url, has_path ? "" : "/v1");
	return 0;
}

char *cmp_request_body(const cmp_prompt *p, const char *model, double temperature,
		       int max_tokens)
{
	json_t *msgs = json_loads(p->messages, 0, NULL);
	json_t *b = json_pack("{s:s, s:o, s:b, s:{s:b}, s:f}", "model", model, "messages", msgs,
			      "stream", 1, "stream_options", "include_usage", 1, "temperature",
			      temperature);
	if (!b)
		return NULL;
	if (max_tokens > 0)
		json_object_set_new(b, "max_tokens", json_integer(max_tokens));
	if (p->response_format)
		json_object_set_new(b, "response_format", json_loads(p->response_format, 0, NULL));
	char *s = json_dumps(b, JSON_COMPACT | JSON_PRESERVE_ORDER);
	json_decref(b);
	return s;
}

static long utf8_chars(const char *s, size_t n)
{
	long c = 0;
	for (size_t i = 0; i < n; i++)
		c += ((unsigned char)s[i] & 0xC0) != 0x80;
	return c;
}

static int sse_fail(cmp_sse *s, const char *fmt, const char *what)
{
	snprintf(s->r->error, sizeof s->r->error, fmt, what);
	return -1;
}

/* One complete "data:" payload. */
static int sse_data(cmp_sse *s, const char *data, double now)
{
	cmp_result *r = s->r;
	if (s->done)
		return sse_fail(s, "malformed SSE: data after [DONE]%s", "");
	if (!strcmp(data, "[DONE]")) {
		s->done = 1;
		return 0;
	}
	json_error_t je;
	json_t *j = json_loads(data, JSON_ALLOW_NUL, &je);
	int rc = 0;
	if (!json_is_object(j)) {
		char shown[80];
		snprintf(shown, sizeof shown, "%.60s", data);
		rc = sse_fail(s, "malformed SSE: a data line is not a JSON object: '%s'", shown);
		goto out;
	}
	json_t *e = json_object_get(j, "error");
	if (e) {
		const char *m = json_string_value(json_object_get(e, "message"));
		rc = sse_fail(s, "error event in the stream: %.300s", m ? m : "(no message)");
		goto out;
	}
	json_t *u = json_object_get(j, "usage");
	if (json_is_object(u)) {
		json_t *pt = json_object_get(u, "prompt_tokens"), *ct = json_object_get(u, "completion_tokens");
		if (json_is_integer(ct)) {
			r->completion_tokens = (long)json_integer_value(ct);
			r->prompt_tokens = json_is_integer(pt) ? (long)json_integer_value(pt) : 0;
			r->usage_valid = 1;
		}
	}
	json_t *ch = json_object_get(j, "choices");
	if (ch && !json_is_array(ch)) {
		rc = sse_fail(s, "malformed SSE: \"choices\" is not an array%s", "");
		goto out;
	}
	json_t *c0 = json_array_get(ch, 0);
	json_t *content = json_object_get(json_object_get(c0, "delta"), "content");
	if (json_is_string(content) && json_string_length(content)) {
		if (r->ttft_s < 0)
			r->ttft_s = now - s->t0;
		if (util_buf_add(&r->text, json_string_value(content), json_string_length(content)))
			rc = sse_fail(s, "out of memory%s", "");
	}
out:
	json_decref(j);
	return rc;
}

static int sse_line(cmp_sse *s, char *line, double now)
{
	size_t n = strlen(line);
	if (n && line[n - 1] == '\r')
		line[--n] = '\0';
	if (n == 0 || line[0] == ':')
		return 0;   /* event boundary or comment (keepalive) */
	if (!strncmp(line, "data:", 5)) {
		const char *d = line + 5;
		if (*d == ' ')
			d++;
		return sse_data(s, d, now);
	}
	/* event:, id:, retry: carry nothing we need; anything else is not SSE */
	if (!strncmp(line, "event:", 6) || !strncmp(line, "id:", 3) || !strncmp(line, "retry:", 6))
		return 0;
	char shown[80];
	snprintf(shown, sizeof shown, "%.60s", line);
	return sse_fail(s, "malformed SSE: unexpected line '%s'", shown);
}

int cmp_sse_feed(cmp_sse *s, const char *buf, size_t len, double now)
{
	for (size_t i = 0; i < len; i++) {
		if (buf[i] != '\n') {
			if (s->n + 1 >= sizeof s->line)
				return sse_fail(s, "malformed SSE: a line longer than %s bytes", "65535");
			s->line[s->n++] = buf[i];
			continue;
		}
		s->line[s->n] = '\0';
		s->n = 0;
		if (sse_line(s, s->line, now))
			return -1;
	}
	return 0;
}

/* ---- libcurl ---- */

typedef struct call_ctx {
	cmp_sse sse;
	long status;
	int is_sse, sse_failed, checked;
	char body[4096];           /* a non-200 answer's first bytes */
	size_t body_len;
	CURL *h;
} call_ctx;

static size_t on_data(char *buf, size_t sz, size_t nm, void *arg)
{
	call_ctx *c = arg;
	size_t n = sz * nm;
	if (!c->checked) {
		c->checked = 1;
		curl_easy_getinfo(c->h, CURLINFO_RESPONSE_CODE, &c->status);
		char *ct = NULL;
		curl_easy_getinfo(c->h, CURLINFO_CONTENT_TYPE, &ct);
		c->is_sse = c->status == 200 && ct && strstr(ct, "text/event-stream");
	}
	if (!c->is_sse) {
		size_t room = sizeof c->body - 1 - c->body_len, k = n < room ? n : room;
		memcpy(c->body + c->body_len, buf, k);
		c->body_len += k;
		c->body[c->body_len] = '\0';
		return n;
	}
	if (cmp_sse_feed(&c->sse, buf, n, coli_now_s())) {
		c->sse_failed = 1;
		return 0;   /* abort the transfer */
	}
	return n;
}

/* The message of an OpenAI/Anthropic error object, or the raw start. */
static void error_detail(const char *body, char *out, size_t cap)
{
	json_t *j = json_loads(body, JSON_ALLOW_NUL, NULL);
	json_t *e = json_object_get(j, "error");
	const char *m = json_string_value(json_object_get(e, "message"));
	if (!m)
		m = json_string_value(e);
	if (m)
		snprintf(out, cap, "%.300s", m);
	else
		snprintf(out, cap, "%.120s", body);
	for (char *p = out; *p; p++)
		if (*p == '\n' || *p == '\r')
			*p = ' ';
	json_decref(j);
}

static void http_error(const cmp_endpoint *ep, const char *url, call_ctx *c, cmp_result *r)
{
	char detail[320];
	error_detail(c->body, detail, sizeof detail);
	if (c->status == 401 || c->status == 403) {
		if (ep->key)
			snprintf(r->error, sizeof r->error,
				 "%ld from %s: the API key in $%s was refused (wrong key?): %s",
				 c->status, url, ep->key_env, detail);
		else
			snprintf(r->error, sizeof r->error,
				 "%ld from %s: the endpoint wants an API key; give the variable "
				 "holding it with %s: %s", c->status, url,
				 strcmp(ep->name, "local") ? "--key-env VAR" : "--local-key-env VAR",
				 detail);
	} else if (c->status == 404) {
		int v1 = strlen(ep->base) >= 3 && !strcmp(ep->base + strlen(ep->base) - 3, "/v1");
		snprintf(r->error, sizeof r->error,
			 "404 from POST %s: wrong URL or model? %s (%s)", url,
			 v1 ? "the /v1 prefix was used; check the base URL"
			    : "most OpenAI-compatible APIs live under /v1: try the base URL with /v1 appended",
			 detail);
	} else if (c->status == 200) {
		snprintf(r->error, sizeof r->error,
			 "200 from %s but not an event stream (streaming unsupported?): %s", url, detail);
	} else {
		snprintf(r->error, sizeof r->error, "%ld from %s: %s", c->status, url, detail);
	}
}

void cmp_chat_stream(const cmp_endpoint *ep, const char *body, cmp_result *r)
{
	memset(r, 0, sizeof *r);
	r->ttft_s = -1;
	char url[1200], auth[1100];
	snprintf(url, sizeof url, "%s/chat/completions", ep->base);
	call_ctx *c = calloc(1, sizeof *c);
	CURL *h = curl_easy_init();
	struct curl_slist *hd = NULL;
	if (!c || !h || !body) {
		snprintf(r->error, sizeof r->error, "out of memory");
		goto out;
	}
	c->h = h;
	c->sse.r = r;
	hd = curl_slist_append(hd, "Content-Type: application/json");
	hd = curl_slist_append(hd, "Accept: text/event-stream");
	if (ep->key) {
		snprintf(auth, sizeof auth, "Authorization: Bearer %s", ep->key);
		hd = curl_slist_append(hd, auth);
		memset(auth, 0, sizeof auth);   /* curl keeps its own copy */
	}
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, hd);
	curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_data);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, c);
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT, 10L);
	curl_easy_setopt(h, CURLOPT_TIMEOUT, (long)(ep->timeout_s > 0 ? ep->timeout_s : 300));
	curl_easy_setopt(h, CURLOPT_USERAGENT, "coli-compare/" PACKAGE_VERSION);
	double t0 = coli_now_s();
	c->sse.t0 = t0;
	CURLcode cc = curl_easy_perform(h);
	r->total_s = coli_now_s() - t0;
	if (!c->checked)
		curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &c->status);
	r->http_status = (int)c->status;
	if (!c->sse_failed && c->is_sse && c->sse.n && cmp_sse_feed(&c->sse, "\n", 1, coli_now_s()))
		c->sse_failed = 1;   /* a last line without its newline */
	if (c->sse_failed)
		goto out;   /* r->error says what was malformed */
	if (c->checked && !c->is_sse) {
		http_error(ep, url, c, r);
		goto out;
	}
	if (cc != CURLE_OK) {
		if (c->is_sse)
			snprintf(r->error, sizeof r->error,
				 "the stream from %s broke off after %.1f s: %s", url, r->total_s,
				 curl_easy_strerror(cc));
		else
			snprintf(r->error, sizeof r->error, "%s: %s", url, curl_easy_strerror(cc));
		goto out;
	}
	if (!c->checked) {
		snprintf(r->error, sizeof r->error, "%ld from %s with an empty body", c->status, url);
		goto out;
	}
	if (!c->sse.done) {
		snprintf(r->error, sizeof r->error,
			 "the stream from %s ended without [DONE] (disconnected mid-stream)", url);
		goto out;
	}
	r->chars = utf8_chars(r->text.p ? r->text.p : "", r->text.len);
	r->ok = 1;
out:
	curl_slist_free_all(hd);
	if (h)
		curl_easy_cleanup(h);
	free(c);
}
