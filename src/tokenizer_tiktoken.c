/* tokenizer_tiktoken.c - a tiktoken-format BPE (Kimi-K2's tiktoken.model)
 * loaded into the structures of tokenizer_impl.h, so encoding, decoding,
 * special tokens and chat templates are the same code as for a
 * tokenizer.json.
 *
 * DESIGN. tiktoken.model has one token a line, "BASE64 RANK", ranks 0..n-1;
 * a token's id is its rank. Within a pre-token, tiktoken takes the piece
 * whole when it is a token; otherwise it starts from single bytes and
 * repeatedly merges the adjacent pair whose concatenation has the lowest
 * rank (the leftmost on ties) while any concatenation is a token. That is
 * byte-level BPE with `ignore_merges` and one merge (a, b) -> ab of rank
 * rank(ab) for every split of every token into two tokens: the merge table
 * is built that way and tokenizer_bpe.c runs it unchanged (its heap pops
 * the lowest rank, leftmost first).
 *
 * Special tokens are the ids n..n+255 (n = lines in the file), named by
 * tokenizer_config.json's added_tokens_decoder, the rest
 * "<|reserved_token_ID|>", as Kimi's tokenizer defines them; more ids in
 * added_tokens_decoder widen the range.
 *
 * The pre-tokenization pattern is not in the files Kimi ships (it is in its
 * Python tokenizer), so: tokenizer_config.json "pat_str" when present (a
 * colitop key, used by synthesized tiktoken models), else Kimi's pattern
 * when "tokenizer_class" is "TikTokenTokenizer", else the load is refused.
 * Patterns may use Python-regex class intersection, [A&&[^B]] (Kimi's does);
 * PCRE2 has none, so each is rewritten (?:(?!B)[A]): the same set of code
 * points, matched one at a time. Any other "&&" is refused. A bare script
 * name such as \p{Han} means the Script property in tiktoken's Rust regex
 * (and Python's), but Script_Extensions in PCRE2 (where it would also
 * match shared CJK punctuation such as U+3002), so it is written
 * \p{sc=Han}; names of one or two letters (general categories) and Any
 * stay as they are. */
#include "config.h"

#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "tokenizer_impl.h"

#define TIKTOKEN_RESERVED 256

/* Kimi-K2's pattern, as written in its tokenization_kimi.py. */
static const char kimi_pattern[] =
	"[\\p{Han}]+"
	"|[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}&&[^\\p{Han}]]*"
	"[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}&&[^\\p{Han}]]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?"
	"|[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}&&[^\\p{Han}]]+"
	"[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}&&[^\\p{Han}]]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?"
	"|\\p{N}{1,3}"
	"| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*"
	"|\\s*[\\r\\n]+"
	"|\\s+(?!\\S)"
	"|\\s+";

/* \p{Script} -> \p{sc=Script} (see the top of the file); malloc'd. */
static char *scripts_as_sc(const char *pat)
{
	size_t n = strlen(pat);
	char *out = malloc(2 * n + 1);
	if (!out)
		return NULL;
	size_t o = 0;
	for (size_t i = 0; i < n;) {
		if (pat[i] == '\\' && (pat[i + 1] == 'p' || pat[i + 1] == 'P') && pat[i + 2] == '{') {
			const char *end = strchr(pat + i + 3, '}');
			size_t len = end ? (size_t)(end - (pat + i + 3)) : 0;
			int gc = len <= 2 || (len == 3 && !strncmp(pat + i + 3, "Any", 3)) ||
				 memchr(pat + i + 3, '=', len) || memchr(pat + i + 3, ':', len);
			if (end && !gc) {
				o += (size_t)sprintf(out + o, "\\%c{sc=%.*s}", pat[i + 1], (int)len, pat + i + 3);
				i += len + 4;
				continue;
			}
		}
		out[o++] = pat[i++];
	}
	out[o] = '\0';
	return out;
}

/* Rewrite every "[A&&[^B]]" as "(?:(?!B)[A])" (A and B without brackets),
 * and bare script names as sc=. Returns a malloc'd pattern, or NULL with
 * err set. */
static char *tok_tiktoken_pattern_rewrite(const char *pat_in, coli_err *err)
{
	char *pat = scripts_as_sc(pat_in);
	size_t n = pat ? strlen(pat) : 0;
	char *out = pat ? malloc(2 * n + 16) : NULL;
	if (!out) {
		free(pat);
		coli_err_set(err, -ENOMEM, "out of memory");
		return NULL;
	}
	size_t o = 0, i = 0;
	while (i < n) {
		const char *amp = strstr(pat + i, "&&[^");
		if (!amp) {
			memcpy(out + o, pat + i, n - i);
			o += n - i;
			break;
		}
		/* the class opening before "&&": the last unescaped '[' */
		size_t a = (size_t)(amp - pat), open = a;
		while (open > i && !(pat[open - 1] == '[' && (open < 2 || pat[open - 2] != '\\')))
			open--;
		const char *close = strstr(amp + 4, "]]");
		if (open == i || !close || memchr(pat + open, '[', a - open) ||
		    memchr(amp + 4, '[', (size_t)(close - (amp + 4)))) {
			free(out);
			free(pat);
			coli_err_set(err, -ENOTSUP, "pre-tokenizer pattern: only [A&&[^B]] class intersections are supported");
			return NULL;
		}
		open--; /* at '[' */
		memcpy(out + o, pat + i, open - i);
		o += open - i;
		o += (size_t)sprintf(out + o, "(?:(?![%.*s])[%.*s])", (int)(close - (amp + 4)), amp + 4,
				     (int)(a - open - 1), pat + open + 1);
		i = (size_t)(close - pat) + 2;
	}
	out[o] = '\0';
	free(pat);
	if (strstr(out, "&&")) {
		free(out);
		coli_err_set(err, -ENOTSUP, "pre-tokenizer pattern: unsupported class intersection");
		return NULL;
	}
	return out;
}

static int b64_val(int c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	return c == '+' ? 62 : c == '/' ? 63 : -1;
}

/* Standard base64 with '=' padding; -1 on a bad character or length. */
static int b64_decode(const char *s, size_t n, uint8_t *out, size_t cap, size_t *len)
{
	size_t o = 0;
	uint32_t acc = 0;
	int bits = 0, pad = 0;
	for (size_t i = 0; i < n; i++) {
		if (s[i] == '=') {
			pad++;
			continue;
		}
		int v = b64_val((unsigned char)s[i]);
		if (v < 0 || pad)
			return -1;
		acc = acc << 6 | (uint32_t)v;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			if (o == cap)
				return -1;
			out[o++] = (uint8_t)(acc >> bits);
		}
	}
	if (n % 4 || pad > 2)
		return -1;
	*len = o;
	return 0;
}

static char *read_file(const char *path, size_t *len, coli_err *err)
{
	FILE *f = fopen(path, "rb");
	if (!f) {
		coli_err_set(err, -errno, "%s: %s", path, strerror(errno));
		return NULL;
	}
	struct stat st;
	char *buf = NULL;
	if (fstat(fileno(f), &st) == 0 && (buf = malloc((size_t)st.st_size + 1)) &&
	    fread(buf, 1, (size_t)st.st_size, f) == (size_t)st.st_size) {
		buf[st.st_size] = '\0';
		*len = (size_t)st.st_size;
	} else {
		free(buf);
		buf = NULL;
		coli_err_set(err, -EIO, "%s: cannot read", path);
	}
	fclose(f);
	return buf;
}

/* Lines "BASE64 RANK" -> tokens; *n_base = number of lines. */
static int load_ranks(coli_tokenizer *t, char *buf, size_t len, int n_base,
		      const char *path, coli_err *err)
{
	uint8_t tok[1024];
	int line = 0;
	for (char *p = buf, *end = buf + len; p < end; line++) {
		char *nl = memchr(p, '\n', (size_t)(end - p));
		char *e = nl ? nl : end;
		if (e > p && e[-1] == '\r')
			e--;
		char *sp = memchr(p, ' ', (size_t)(e - p));
		char *stop;
		long rank = sp ? strtol(sp + 1, &stop, 10) : -1;
		size_t tl;
		if (!sp || stop != e || rank < 0 || rank >= n_base ||
		    b64_decode(p, (size_t)(sp - p), tok, sizeof tok, &tl) < 0 || tl == 0)
			return coli_err_set(err, -EINVAL, "%s:%d: not \"BASE64 RANK\" with a rank in 0..%d", path,
					    line + 1, n_base - 1);
		if (t->text[rank])
			return coli_err_set(err, -EINVAL, "%s:%d: rank %ld given twice", path, line + 1, rank);
		int rc = tok_set_token(t, (int)rank, (const char *)tok, tl);
		if (rc < 0)
			return coli_err_set(err, rc, "%s: out of memory", path);
		if (tok_strmap_put(&t->vocab, t->text[rank], (uint32_t)tl, (int)rank) < 0)
			return coli_err_set(err, -EINVAL, "%s:%d: a token given twice", path, line + 1);
		p = nl ? nl + 1 : end;
	}
	for (int b = 0; b < 256; b++) {
		char c = (char)b;
		if ((t->byte_id[b] = tok_strmap_get(&t->vocab, &c, 1)) < 0)
			return coli_err_set(err, -EINVAL, "%s: byte 0x%02x has no token (tiktoken needs all 256)",
					    path, b);
	}
	return 0;
}

/* One merge per split of each token into two tokens, of the token's rank. */
static int build_merges(coli_tokenizer *t, int n_base, const char *path, coli_err *err)
{
	if (tok_merges_init(&t->merges, (uint32_t)n_base * 2u) < 0)
		return coli_err_set(err, -ENOMEM, "%s: out of memory", path);
	for (int id = 0; id < n_base; id++) {
		const char *s = t->text[id];
		uint32_t n = t->text_len[id];
		for (uint32_t k = 1; k < n; k++) {
			int a = tok_strmap_get(&t->vocab, s, k), b = tok_strmap_get(&t->vocab, s + k, n - k);
			if (a >= 0 && b >= 0 && tok_merges_put(&t->merges, a, b, id, id) < 0)
				return coli_err_set(err, -ENOMEM, "%s: merge table full", path);
		}
	}
	return 0;
}

static int add_special(coli_tokenizer *t, int id, const char *content, const char *path, coli_err *err)
{
	size_t len = strlen(content);
	tok_added *d = &t->added[t->n_added];
	if (!len || tok_set_token(t, id, content, len) < 0)
		return coli_err_set(err, -EINVAL, "%s: special token %d is empty", path, id);
	d->id = id;
	d->special = 1;
	d->content = strdup(content);
	d->len = len;
	char *name = tok_arena_dup(t, content, len);
	if (!d->content || !name || tok_strmap_set(&t->names, name, (uint32_t)len, id) < 0 ||
	    tok_trie_add(&t->trie_raw, d->content, len, t->n_added) < 0)
		return coli_err_set(err, -ENOMEM, "%s: out of memory", path);
	t->flags[id] |= TOK_F_ADDED | TOK_F_SPECIAL;
	t->n_added++;
	return 0;
}

static int load_specials(coli_tokenizer *t, json_t *decoder, int n_base, const char *path, coli_err *err)
{
	t->added = calloc((size_t)(t->n_ids - n_base), sizeof *t->added);
	if (!t->added)
		return coli_err_set(err, -ENOMEM, "%s: out of memory", path);
	for (int id = n_base; id < t->n_ids; id++) {
		char key[16], dflt[48];
		snprintf(key, sizeof key, "%d", id);
		json_t *v = json_object_get(decoder, key);
		const char *content = json_string_value(json_object_get(v, "content"));
		if (!content) {
			snprintf(dflt, sizeof dflt, "<|reserved_token_%d|>", id);
			content = dflt;
		}
		int rc = add_special(t, id, content, path, err);
		if (rc < 0)
			return rc;
	}
	return 0;
}

/* The pattern and the added_tokens_decoder from tokenizer_config.json. */
static int read_config(const char *cfg_path, char **pattern, json_t **decoder, coli_err *err)
{
	json_error_t je;
	json_t *cfg = json_load_file(cfg_path, JSON_DECODE_INT_AS_REAL, &je);
	if (!cfg)
		return coli_err_set(err, -EINVAL, "%s:%d: %s (a tiktoken.model needs its tokenizer_config.json)",
				    cfg_path, je.line, je.text);
	const char *pat = json_string_value(json_object_get(cfg, "pat_str"));
	const char *cls = json_string_value(json_object_get(cfg, "tokenizer_class"));
	int rc = 0;
	if (!pat && cls && !strcmp(cls, "TikTokenTokenizer"))
		pat = kimi_pattern;
	if (!pat) {
		rc = coli_err_set(err, -ENOTSUP, "%s: a tiktoken.model tokenizer needs its pre-tokenizer pattern: "
				  "tokenizer_class TikTokenTokenizer (Kimi) or a \"pat_str\"", cfg_path);
	} else if (!(*pattern = tok_tiktoken_pattern_rewrite(pat, err))) {
		rc = coli_err_wrap(err, "%s", cfg_path);
	}
	json_t *dec = json_object_get(cfg, "added_tokens_decoder");
	*decoder = json_is_object(dec) ? json_incref(dec) : json_object();
	json_decref(cfg);
	return rc;
}

int tok_load_tiktoken(const char *model_path, coli_tokenizer **out, coli_err *err)
{
	*out = NULL;
	coli_tokenizer *t = calloc(1, sizeof *t);
	if (!t)
		return coli_err_set(err, -ENOMEM, "%s: out of memory", model_path);
	t->bos_id = t->eos_id = t->unk_id = -1;
	t->ignore_merges = 1;
	pthread_mutex_init(&t->cache_lock, NULL);
	const char *slash = strrchr(model_path, '/');
	t->dir = slash ? strndup(model_path, (size_t)(slash - model_path)) : strdup(".");
	char cfg[4200];
	snprintf(cfg, sizeof cfg, "%s/tokenizer_config.json", t->dir ? t->dir : ".");
	char *pattern = NULL, *buf = NULL;
	json_t *decoder = NULL;
	size_t len = 0;
	int rc = read_config(cfg, &pattern, &decoder, err);
	if (rc < 0 || !(buf = read_file(model_path, &len, err))) {
		rc = rc < 0 ? rc : -EIO;
		goto fail;
	}
	int n_base = 0;
	for (size_t i = 0; i < len; i++)
		n_base += buf[i] == '\n' || (i + 1 == len);
	int n_ids = n_base + TIKTOKEN_RESERVED;
	const char *k;
	json_t *v;
	json_object_foreach(decoder, k, v) {
		long id = strtol(k, NULL, 10);
		if (id >= n_base && id < INT_MAX / 2 && id + 1 > n_ids)
			n_ids = (int)id + 1;
	}
	if (!tok_id_space_ok(n_ids - 1, (size_t)n_base + json_object_size(decoder))) {
		rc = coli_err_set(err, -EINVAL, "%s: special token id %d is far beyond the %d ranks the file defines",
				  model_path, n_ids - 1, n_base);
		goto fail;
	}
	t->n_ids = n_ids;
	t->text = calloc((size_t)n_ids, sizeof *t->text);
	t->text_len = calloc((size_t)n_ids, sizeof *t->text_len);
	t->flags = calloc((size_t)n_ids, 1);
	if (!t->text || !t->text_len || !t->flags || tok_strmap_init(&t->vocab, (uint32_t)n_base) < 0 ||
	    tok_strmap_init(&t->names, (uint32_t)(n_ids - n_base)) < 0) {
		rc = coli_err_set(err, -ENOMEM, "%s: out of memory", model_path);
		goto fail;
	}
	if ((rc = load_ranks(t, buf, len, n_base, model_path, err)) < 0 ||
	    (rc = build_merges(t, n_base, model_path, err)) < 0 ||
	    (rc = load_specials(t, decoder, n_base, model_path, err)) < 0)
		goto fail;
	tok_pretok pt = { .kind = TOK_PRE_SPLIT, .behavior = TOK_SPLIT_ISOLATED };
	if (!(pt.re = tok_regex_compile(pattern, 0, err))) {
		rc = coli_err_wrap(err, "%s: pat_str", cfg);
		goto fail;
	}
	if ((rc = tok_add_pretok(t, pt, cfg, err)) < 0 || (rc = tok_load_config(t, cfg, err)) < 0)
		goto fail;
	free(pattern);
	free(buf);
	json_decref(decoder);
	*out = t;
	return 0;
fail:
	free(pattern);
	free(buf);
	json_decref(decoder);
	coli_tokenizer_free(t);
	return rc;
}
