/* server_logprobs.c - OpenAI log-probabilities: the request fields and the
 * response shapes (pure functions).
 *
 * Chat: choices[].logprobs = {"content": [{"token", "logprob", "bytes",
 * "top_logprobs": [{"token", "logprob", "bytes"}...]}...], "refusal": null},
 * streamed per chunk for the chunk's tokens. Completions: choices[].logprobs
 * = {"tokens", "token_logprobs", "top_logprobs": [{token: logprob}...],
 * "text_offset"}. A token's "token" text is its bytes decoded (a partial
 * UTF-8 character shows as U+FFFD); "bytes" has the exact bytes. */
#include "config.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "server_internal.h"
#include "util_unicode.h"

int srv_parse_logprobs(json_t *root, int chat, srv_request *r, srv_error *e)
{
	json_t *lp = json_object_get(root, "logprobs"), *top = json_object_get(root, "top_logprobs");
	if (chat) {
		if (lp && !json_is_null(lp) && !json_is_boolean(lp))
			return srv_fail(e, 400, "invalid_request_error", "invalid_type", "logprobs",
					"logprobs: must be a boolean");
		r->logprobs = json_is_true(lp);
		if (!top || json_is_null(top))
			return 0;
		if (!json_is_integer(top) || json_integer_value(top) < 0 ||
		    json_integer_value(top) > COLI_MAX_TOP_LOGPROBS)
			return srv_fail(e, 400, "invalid_request_error", "invalid_value", "top_logprobs",
					"top_logprobs: must be an integer from 0 to %d", COLI_MAX_TOP_LOGPROBS);
		if (!r->logprobs)
			return srv_fail(e, 400, "invalid_request_error", "invalid_value", "top_logprobs",
					"top_logprobs: needs logprobs set to true");
		r->top_logprobs = (int)json_integer_value(top);
		return 0;
	}
	if (!lp || json_is_null(lp))
		return 0;
	if (!json_is_integer(lp) || json_integer_value(lp) < 0 || json_integer_value(lp) > COLI_MAX_TOP_LOGPROBS)
		return srv_fail(e, 400, "invalid_request_error", "invalid_value", "logprobs",
				"logprobs: must be an integer from 0 to %d", COLI_MAX_TOP_LOGPROBS);
	r->logprobs = 1;
	r->top_logprobs = (int)json_integer_value(lp);
	return 0;
}

/* The bytes of a token (added tokens: their text). */
static const uint8_t *token_bytes(const coli_tokenizer *t, int id, size_t *n)
{
	const uint8_t *b = t ? coli_tokenizer_token_bytes(t, id, n) : NULL;
	if (b)
		return b;
	const char *s = t ? coli_tokenizer_token_text(t, id) : NULL;
	*n = s ? strlen(s) : 0;
	return (const uint8_t *)(s ? s : "");
}

static json_t *token_string(const uint8_t *b, size_t n)
{
	char stack[1024];
	char *tmp = 3 * n + 1 <= sizeof stack ? stack : malloc(3 * n + 1);
	if (!tmp)
		return json_string("");
	size_t w = unicode_utf8_lossy(b, n, 1, (uint8_t *)tmp, NULL);
	json_t *s = json_stringn(tmp, w);
	if (tmp != stack)
		free(tmp);
	return s ? s : json_string("");
}

static json_t *byte_list(const uint8_t *b, size_t n)
{
	json_t *a = json_array();
	for (size_t i = 0; i < n; i++)
		json_array_append_new(a, json_integer(b[i]));
	return a;
}

static json_t *chat_entry(const coli_tokenizer *t, int id, float logprob)
{
	size_t n;
	const uint8_t *b = token_bytes(t, id, &n);
	return json_pack("{s:o, s:f, s:o}", "token", token_string(b, n), "logprob", (double)logprob, "bytes",
			 byte_list(b, n));
}

json_t *srv_logprobs_json(const srv_result *r, int chat, int from, size_t text_offset)
{
	if (chat) {
		json_t *content = json_array();
		for (int i = from; i < r->n_lp; i++) {
			json_t *e = chat_entry(r->tok, r->lp_tok[i], r->lp[i].logprob);
			json_t *tops = json_array();
			for (int k = 0; k < r->lp[i].n_top; k++)
				json_array_append_new(tops, chat_entry(r->tok, r->lp[i].top_id[k],
								       r->lp[i].top_logprob[k]));
			json_object_set_new(e, "top_logprobs", tops);
			json_array_append_new(content, e);
		}
		return json_pack("{s:o, s:n}", "content", content, "refusal");
	}
	json_t *toks = json_array(), *lps = json_array(), *tops = json_array(), *offs = json_array();
	for (int i = from; i < r->n_lp; i++) {
		size_t n;
		const uint8_t *b = token_bytes(r->tok, r->lp_tok[i], &n);
		json_array_append_new(toks, token_string(b, n));
		json_array_append_new(lps, json_real(r->lp[i].logprob));
		json_array_append_new(offs, json_integer((json_int_t)text_offset));
		text_offset += n;
		json_t *m = json_object();
		for (int k = 0; k < r->lp[i].n_top; k++) {
			const uint8_t *tb = token_bytes(r->tok, r->lp[i].top_id[k], &n);
			json_t *s = token_string(tb, n);
			json_object_set_new(m, json_string_value(s), json_real(r->lp[i].top_logprob[k]));
			json_decref(s);
		}
		json_array_append_new(tops, m);
	}
	return json_pack("{s:o, s:o, s:o, s:o}", "tokens", toks, "token_logprobs", lps, "top_logprobs", tops,
			 "text_offset", offs);
}
