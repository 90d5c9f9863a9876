/* tokenizer_decode.c - ids back to text.
 *
 * Like the reference ByteLevel decoder, the bytes of consecutive ordinary
 * tokens are joined and decoded as one UTF-8 run (invalid sequences become
 * U+FFFD, one per maximal subpart, as TextDecoder does), while an added
 * token ends the run and contributes its text as written. The streaming
 * decoder produces exactly the same bytes, chunk by chunk. */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "tokenizer_impl.h"
#include "util_buf.h"
#include "util_unicode.h"

int coli_tokenizer_decode(const coli_tokenizer *t, const int *ids, size_t n, int skip_special,
			  char **text, size_t *len, coli_err *err)
{
	util_buf out = { 0 }, run = { 0 };
	int rc = 0;
	*text = NULL;
	*len = 0;
	for (size_t i = 0; i <= n; i++) {
		int id = i < n ? ids[i] : -1;
		if (i < n && (id < 0 || id >= t->n_ids || !t->text[id])) {
			rc = coli_err_set(err, -EINVAL, "token id %d is not in the vocabulary (0..%d)", id,
					  t->n_ids - 1);
			goto out;
		}
		int added = i < n && (t->flags[id] & TOK_F_ADDED);
		if (i < n && skip_special && (t->flags[id] & TOK_F_SPECIAL))
			continue;
		if (i == n || added) {
			/* end of a byte run: decode it lossily */
			if ((rc = util_buf_reserve(&out, run.len * 3)) < 0)
				goto oom;
			out.len += unicode_utf8_lossy((const uint8_t *)run.p, run.len, 1,
						      (uint8_t *)out.p + out.len, NULL);
			out.p[out.len] = '\0';
			util_buf_clear(&run);
			if (i == n)
				break;
			if ((rc = util_buf_add(&out, t->text[id], t->text_len[id])) < 0)
				goto oom;
			continue;
		}
		if ((rc = util_buf_add(&run, t->text[id], t->text_len[id])) < 0)
			goto oom;
	}
	if (!(*text = util_buf_steal(&out, len))) {
		rc = -ENOMEM;
		goto oom;
	}
	goto out;
oom:
	coli_err_set(err, rc, "out of memory");
out:
	util_buf_free(&out);
	util_buf_free(&run);
	return rc;
}

void coli_detok_init(coli_detok *d)
{
	memset(d, 0, sizeof *d);
}

/* Decode in[0..n) into out without overflowing cap; what does not fit is
 * dropped at a character boundary (cap >= 1024 never drops a token). */
static size_t emit_lossy(const uint8_t *in, size_t n, int final, char *out, size_t cap,
			 size_t *consumed)
{
	uint8_t stack[3 * 512];
	uint8_t *tmp = 3 * n <= sizeof stack ? stack : malloc(3 * n);
	if (!tmp) {
		*consumed = n;
		return 0;
	}
	size_t w = unicode_utf8_lossy(in, n, final, tmp, consumed);
	size_t fit = w <= cap ? w : cap;
	while (fit < w && fit > 0 && (tmp[fit] & 0xC0) == 0x80)
		fit--;
	memcpy(out, tmp, fit);
	if (tmp != stack)
		free(tmp);
	return fit;
}

size_t coli_detok_push(const coli_tokenizer *t, coli_detok *d, int id, int skip_special,
		       char *out, size_t cap)
{
	if (id < 0 || id >= t->n_ids || !t->text[id])
		return 0;
	if (skip_special && (t->flags[id] & TOK_F_SPECIAL))
		return 0;
	size_t o = 0;
	if (t->flags[id] & TOK_F_ADDED) {
		o = coli_detok_flush(d, out, cap);
		size_t n = t->text_len[id] <= cap - o ? t->text_len[id] : cap - o; /* cap >= 1024 fits */
		memcpy(out + o, t->text[id], n);
		return o + n;
	}
	/* pending bytes (at most 3) followed by the token's bytes */
	uint8_t stack[1024];
	size_t need = (size_t)d->n_pending + t->text_len[id];
	uint8_t *in = need <= sizeof stack ? stack : malloc(need);
	if (!in)
		return 0;
	memcpy(in, d->pending, (size_t)d->n_pending);
	memcpy(in + d->n_pending, t->text[id], t->text_len[id]);
	size_t used;
	o = emit_lossy(in, need, 0, out, cap, &used);
	d->n_pending = (int)(need - used);
	memcpy(d->pending, in + used, (size_t)d->n_pending);
	if (in != stack)
		free(in);
	return o;
}

size_t coli_detok_flush(coli_detok *d, char *out, size_t cap)
{
	if (!d->n_pending)
		return 0;
	size_t used;
	size_t o = emit_lossy(d->pending, (size_t)d->n_pending, 1, out, cap, &used);
	d->n_pending = 0;
	return o;
}
