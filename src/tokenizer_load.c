/* tokenizer_load.c - read a Hugging Face tokenizer.json (+ the
 * tokenizer_config.json beside it) into the structures of tokenizer_impl.h.
 * Anything the file asks for that we cannot reproduce exactly is refused
 * with a message naming the feature, never approximated. */
#include "config.h"

#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "coli_log.h"
#include "tokenizer_impl.h"
#include "util_unicode.h"

/* Map a GPT-2 alphabet string back to bytes; -1 if a char is outside it. */
static int bytelevel_to_bytes(const char *s, size_t n, char *out, size_t *out_len)
{
	size_t i = 0, o = 0;
	while (i < n) {
		uint32_t cp;
		int r = unicode_utf8_next((const uint8_t *)s + i, n - i, &cp);
		if (r <= 0)
			return -1;
		int b = unicode_cp_to_byte(cp);
		if (b < 0)
			return -1;
		out[o++] = (char)b;
		i += (size_t)r;
	}
	*out_len = o;
	return 0;
}

static const char *jstr(json_t *o, const char *key)
{
	json_t *v = json_object_get(o, key);
	return json_is_string(v) ? json_string_value(v) : NULL;
}

static int jbool(json_t *o, const char *key, int dflt)
{
	json_t *v = json_object_get(o, key);
	return json_is_boolean(v) ? json_is_true(v) : dflt;
}

/* json_load_file reads with getc; one read() of the file is ~2x faster
 * for a 10 MB tokenizer.json. */
static json_t *load_json(const char *path, size_t flags, json_error_t *je)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat st;
	json_t *j = NULL;
	if (fd < 0 || fstat(fd, &st) < 0) {
		if (fd >= 0)
			close(fd);
		return json_load_file(path, flags, je); /* for its error text */
	}
	char *buf = malloc((size_t)st.st_size + 1);
	size_t got = 0;
	while (buf && got < (size_t)st.st_size) {
		ssize_t r = read(fd, buf + got, (size_t)st.st_size - got);
		if (r <= 0)
			break;
		got += (size_t)r;
	}
	close(fd);
	if (buf && got == (size_t)st.st_size)
		j = json_loadb(buf, got, flags, je);
	else
		j = json_load_file(path, flags, je);
	free(buf);
	return j;
}

/* Token strings live in large blocks freed together: a vocabulary is
 * hundreds of thousands of short strings and one malloc each is a good
 * part of the load time. */
char *tok_arena_dup(coli_tokenizer *t, const char *s, size_t len)
{
	enum { BLOCK = 1 << 20 };
	tok_arena *a = t->arena;
	if (!a || a->used + len + 1 > a->size) {
		size_t size = len + 1 > BLOCK ? len + 1 : BLOCK;
		tok_arena *nb = malloc(sizeof *nb + size);
		if (!nb)
			return NULL;
		nb->next = a;
		nb->size = size;
		nb->used = 0;
		t->arena = a = nb;
	}
	char *p = a->mem + a->used;
	a->used += len + 1;
	memcpy(p, s, len);
	p[len] = '\0';
	return p;
}

int tok_set_token(coli_tokenizer *t, int id, const char *bytes, size_t len)
{
	if (id < 0 || id >= t->n_ids)
		return -EINVAL;
	/* a replaced string stays in the arena until the tokenizer is freed */
	t->text[id] = tok_arena_dup(t, bytes, len);
	if (!t->text[id])
		return -ENOMEM;
	memcpy(t->text[id], bytes, len);
	t->text[id][len] = '\0';
	t->text_len[id] = (uint32_t)len;
	return 0;
}

static int load_vocab(coli_tokenizer *t, json_t *vocab, json_t *added, const char *path,
		      coli_err *err)
{
	int max_id = -1;
	const char *k;
	json_t *v;
	json_object_foreach(vocab, k, v) {
		if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) > INT_MAX / 2)
			return coli_err_set(err, -EINVAL, "%s: model.vocab[\"%s\"] is not a valid id", path, k);
		if (json_integer_value(v) > max_id)
			max_id = (int)json_integer_value(v);
	}
	size_t i;
	json_array_foreach(added, i, v) {
		json_t *id = json_object_get(v, "id");
		if (!json_is_integer(id) || json_integer_value(id) < 0 || json_integer_value(id) > INT_MAX / 2 ||
		    !jstr(v, "content"))
			return coli_err_set(err, -EINVAL, "%s: added_tokens[%zu] lacks id/content", path, i);
		if (json_integer_value(id) > max_id)
			max_id = (int)json_integer_value(id);
	}
	if (max_id < 0)
		return coli_err_set(err, -EINVAL, "%s: the vocabulary is empty (model.vocab and added_tokens)", path);
	size_t n_entries = json_object_size(vocab) + json_array_size(added);
	if (!tok_id_space_ok(max_id, n_entries))
		return coli_err_set(err, -EINVAL,
				    "%s: id %d is far beyond the %zu tokens the file defines (ids must be dense)",
				    path, max_id, n_entries);
	t->n_ids = max_id + 1;
	t->text = calloc((size_t)t->n_ids, sizeof *t->text);
	t->text_len = calloc((size_t)t->n_ids, sizeof *t->text_len);
	t->flags = calloc((size_t)t->n_ids, 1);
	if (!t->text || !t->text_len || !t->flags ||
	    tok_strmap_init(&t->vocab, (uint32_t)json_object_size(vocab)) < 0 ||
	    tok_strmap_init(&t->names, (uint32_t)(json_object_size(vocab) + json_array_size(added))) < 0)
		return coli_err_set(err, -ENOMEM, "%s: out of memory", path);
	char buf[4096];
	json_object_foreach(vocab, k, v) {
		int id = (int)json_integer_value(v);
		size_t kl = strlen(k), bl;
		int rc;
		if (kl < sizeof buf && bytelevel_to_bytes(k, kl, buf, &bl) == 0) {
			if ((rc = tok_set_token(t, id, buf, bl)) < 0)
				return coli_err_set(err, rc, "%s: vocab id %d out of range", path, id);
			if (tok_strmap_put(&t->vocab, t->text[id], (uint32_t)bl, id) < 0)
				return coli_err_set(err, -ENOMEM, "%s: out of memory", path);
		} else if ((rc = tok_set_token(t, id, k, kl)) < 0) {
			/* not in the byte alphabet: decodes as written (like the
			 * reference's ByteLevel decoder fallback) */
			return coli_err_set(err, rc, "%s: vocab id %d out of range", path, id);
		}
	}
	/* names: the token as written in the file (copied: the JSON tree is
	 * freed after loading) */
	json_object_foreach(vocab, k, v) {
		size_t kl = strlen(k);
		char *dup = tok_arena_dup(t, k, kl);
		if (!dup || tok_strmap_put(&t->names, dup, (uint32_t)kl, (int)json_integer_value(v)) < 0)
			return coli_err_set(err, -ENOMEM, "%s: out of memory", path);
	}
	for (int b = 0; b < 256; b++) {
		char c = (char)b;
		t->byte_id[b] = tok_strmap_get(&t->vocab, &c, 1);
	}
	return 0;
}

static int load_merges(coli_tokenizer *t, json_t *merges, const char *path, coli_err *err)
{
	if (!json_is_array(merges))
		return coli_err_set(err, -EINVAL, "%s: model.merges is not an array", path);
	if (tok_merges_init(&t->merges, (uint32_t)json_array_size(merges)) < 0)
		return coli_err_set(err, -ENOMEM, "%s: out of memory", path);
	size_t i;
	json_t *m;
	char a[1024], b[1024], ab[2048];
	json_array_foreach(merges, i, m) {
		const char *sa, *sb;
		size_t la, lb;
		char tmp[2048];
		if (json_is_string(m)) {
			/* "a b": byte-level tokens never contain a plain space */
			const char *s = json_string_value(m);
			const char *sp = strchr(s, ' ');
			if (!sp || strchr(sp + 1, ' ') || strlen(s) >= sizeof tmp)
				return coli_err_set(err, -EINVAL, "%s: merges[%zu] \"%s\" is not \"a b\"", path, i, s);
			memcpy(tmp, s, strlen(s) + 1);
			tmp[sp - s] = '\0';
			sa = tmp;
			sb = tmp + (sp - s) + 1;
		} else if (json_is_array(m) && json_array_size(m) == 2 &&
			   json_is_string(json_array_get(m, 0)) && json_is_string(json_array_get(m, 1))) {
			sa = json_string_value(json_array_get(m, 0));
			sb = json_string_value(json_array_get(m, 1));
		} else {
			return coli_err_set(err, -EINVAL, "%s: merges[%zu] is neither \"a b\" nor [a, b]", path, i);
		}
		if (strlen(sa) >= sizeof a || strlen(sb) >= sizeof b ||
		    bytelevel_to_bytes(sa, strlen(sa), a, &la) < 0 ||
		    bytelevel_to_bytes(sb, strlen(sb), b, &lb) < 0)
			return coli_err_set(err, -EINVAL, "%s: merges[%zu] is not byte-level text", path, i);
		int ia = tok_strmap_get(&t->vocab, a, la), ib = tok_strmap_get(&t->vocab, b, lb);
		memcpy(ab, a, la);
		memcpy(ab + la, b, lb);
		int iab = tok_strmap_get(&t->vocab, ab, la + lb);
		if (ia < 0 || ib < 0 || iab < 0)
			continue; /* the reference cannot apply it either */
		if (tok_merges_put(&t->merges, ia, ib, (int)i, iab) < 0)
			return coli_err_set(err, -ENOMEM, "%s: merge table full", path);
	}
	return 0;
}

static int load_model(coli_tokenizer *t, json_t *root, const char *path, coli_err *err)
{
	json_t *model = json_object_get(root, "model");
	const char *type = jstr(model, "type");
	if (!json_is_object(model) || !type || strcmp(type, "BPE"))
		return coli_err_set(err, -ENOTSUP, "%s: model.type %s is not supported (BPE only)", path,
				    type ? type : "(missing)");
	json_t *dropout = json_object_get(model, "dropout");
	if (dropout && !json_is_null(dropout) && json_number_value(dropout) > 0)
		return coli_err_set(err, -ENOTSUP, "%s: BPE dropout is not supported", path);
	const char *cont = jstr(model, "continuing_subword_prefix");
	const char *eow = jstr(model, "end_of_word_suffix");
	if ((cont && *cont) || (eow && *eow))
		return coli_err_set(err, -ENOTSUP, "%s: continuing_subword_prefix/end_of_word_suffix not supported", path);
	json_t *vocab = json_object_get(model, "vocab");
	json_t *added = json_object_get(root, "added_tokens");
	if (!json_is_object(vocab))
		return coli_err_set(err, -EINVAL, "%s: model.vocab is not an object", path);
	if (added && !json_is_array(added))
		return coli_err_set(err, -EINVAL, "%s: added_tokens is not an array", path);
	int rc = load_vocab(t, vocab, added, path, err);
	if (rc < 0)
		return rc;
	if ((rc = load_merges(t, json_object_get(model, "merges"), path, err)) < 0)
		return rc;
	t->ignore_merges = jbool(model, "ignore_merges", 0);
	/* byte_fallback / fuse_unk only act on pieces missing from the vocab,
	 * which a byte-level alphabet never produces; unk is honoured. */
	const char *unk = jstr(model, "unk_token");
	t->unk_id = unk ? tok_strmap_get(&t->names, unk, strlen(unk)) : -1;
	return 0;
}

static int load_added(coli_tokenizer *t, json_t *added, const char *path, coli_err *err)
{
	size_t n = json_array_size(added), i;
	json_t *a;
	t->added = calloc(n ? n : 1, sizeof *t->added);
	if (!t->added)
		return coli_err_set(err, -ENOMEM, "%s: out of memory", path);
	json_array_foreach(added, i, a) {
		tok_added *d = &t->added[t->n_added];
		const char *content = jstr(a, "content");
		d->id = (int)json_integer_value(json_object_get(a, "id"));
		d->special = (uint8_t)jbool(a, "special", 0);
		d->lstrip = (uint8_t)jbool(a, "lstrip", 0);
		d->rstrip = (uint8_t)jbool(a, "rstrip", 0);
		/* single_word is ignored, as the reference implementation does */
		d->normalized = (uint8_t)(jbool(a, "normalized", !d->special) && t->has_normalizer);
		if (!*content)
			continue;
		if (!unicode_utf8_valid((const uint8_t *)content, strlen(content)))
			return coli_err_set(err, -EINVAL, "%s: added_tokens[%zu] is not UTF-8", path, i);
		if (d->normalized) {
			char *nc;
			size_t nl;
			int rc = tok_normalize(t, content, strlen(content), &nc, &nl, err);
			if (rc < 0)
				return coli_err_wrap(err, "%s: added_tokens[%zu]", path, i);
			d->content = nc;
			d->len = nl;
		} else {
			d->content = strdup(content);
			d->len = strlen(content);
		}
		if (!d->content || tok_set_token(t, d->id, content, strlen(content)) < 0)
			return coli_err_set(err, -ENOMEM, "%s: out of memory", path);
		t->flags[d->id] |= TOK_F_ADDED | (d->special ? TOK_F_SPECIAL : 0);
		/* an added token naming an existing vocab entry takes it over,
		 * as in the reference, which overwrites its map */
		char *dup = tok_arena_dup(t, content, strlen(content));
		if (!dup || tok_strmap_set(&t->names, dup, (uint32_t)strlen(dup), d->id) < 0)
			return coli_err_set(err, -ENOMEM, "%s: out of memory", path);
		tok_trie *tr = d->normalized ? &t->trie_norm : &t->trie_raw;
		if (tok_trie_add(tr, d->content, d->len, t->n_added) < 0)
			return coli_err_set(err, -ENOMEM, "%s: out of memory", path);
		t->n_added++;
	}
	return 0;
}

static int load_normalizer(coli_tokenizer *t, json_t *n, const char *path, coli_err *err)
{
	if (!n || json_is_null(n))
		return 0;
	t->has_normalizer = 1;
	const char *type = jstr(n, "type");
	if (!type)
		return coli_err_set(err, -EINVAL, "%s: normalizer without type", path);
	if (!strcmp(type, "Sequence")) {
		size_t i;
		json_t *c;
		json_array_foreach(json_object_get(n, "normalizers"), i, c) {
			int rc = load_normalizer(t, c, path, err);
			if (rc < 0)
				return rc;
		}
		return 0;
	}
	int kind;
	if (!strcmp(type, "NFC"))
		kind = TOK_NORM_NFC;
	else if (!strcmp(type, "NFD"))
		kind = TOK_NORM_NFD;
	else if (!strcmp(type, "NFKC"))
		kind = TOK_NORM_NFKC;
	else if (!strcmp(type, "NFKD"))
		kind = TOK_NORM_NFKD;
	else
		return coli_err_set(err, -ENOTSUP, "%s: normalizer %s is not supported", path, type);
	if (t->n_norm == (int)(sizeof t->norm / sizeof t->norm[0]))
		return coli_err_set(err, -ENOTSUP, "%s: too many normalizers", path);
	t->norm[t->n_norm++] = kind;
	return 0;
}

/* GPT-2's pre-tokenization regex, used by ByteLevel with use_regex. */
static const char gpt2_regex[] =
	"'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";

int tok_add_pretok(coli_tokenizer *t, tok_pretok p, const char *path, coli_err *err)
{
	tok_pretok *np = realloc(t->pre, sizeof *np * (size_t)(t->n_pre + 1));
	if (!np) {
		pcre2_code_free(p.re);
		return coli_err_set(err, -ENOMEM, "%s: out of memory", path);
	}
	t->pre = np;
	t->pre[t->n_pre++] = p;
	return 0;
}

static int load_pretok(coli_tokenizer *t, json_t *p, const char *path, int *bytelevel,
		       coli_err *err)
{
	if (!p || json_is_null(p))
		return 0;
	const char *type = jstr(p, "type");
	tok_pretok pt = { 0 };
	if (!type)
		return coli_err_set(err, -EINVAL, "%s: pre_tokenizer without type", path);
	if (!strcmp(type, "Sequence")) {
		size_t i;
		json_t *c;
		json_array_foreach(json_object_get(p, "pretokenizers"), i, c) {
			int rc = load_pretok(t, c, path, bytelevel, err);
			if (rc < 0)
				return rc;
		}
		return 0;
	}
	if (!strcmp(type, "Split")) {
		json_t *pat = json_object_get(p, "pattern");
		const char *re = jstr(pat, "Regex"), *lit = jstr(pat, "String");
		const char *beh = jstr(p, "behavior");
		if (!re && !lit)
			return coli_err_set(err, -EINVAL, "%s: Split without pattern", path);
		pt.kind = TOK_PRE_SPLIT;
		if (!beh || !strcmp(beh, "Isolated"))
			pt.behavior = TOK_SPLIT_ISOLATED;
		else if (!strcmp(beh, "Removed"))
			pt.behavior = TOK_SPLIT_REMOVED;
		else if (!strcmp(beh, "MergedWithPrevious"))
			pt.behavior = TOK_SPLIT_MERGED_PREV;
		else if (!strcmp(beh, "MergedWithNext"))
			pt.behavior = TOK_SPLIT_MERGED_NEXT;
		else if (!strcmp(beh, "Contiguous"))
			pt.behavior = TOK_SPLIT_CONTIGUOUS;
		else
			return coli_err_set(err, -ENOTSUP, "%s: Split behavior %s is not supported", path, beh);
		pt.invert = jbool(p, "invert", 0);
		pt.re = tok_regex_compile(re ? re : lit, !re, err);
		if (!pt.re)
			return coli_err_wrap(err, "%s: Split pattern", path);
		return tok_add_pretok(t, pt, path, err);
	}
	if (!strcmp(type, "Digits")) {
		pt.kind = TOK_PRE_SPLIT;
		pt.behavior = jbool(p, "individual_digits", 0) ? TOK_SPLIT_ISOLATED : TOK_SPLIT_CONTIGUOUS;
		/* ASCII digits, as both references (Rust is_ascii_digit, JS \\d) */
		pt.re = tok_regex_compile("[0-9]", 0, err);
		if (!pt.re)
			return coli_err_wrap(err, "%s: Digits", path);
		return tok_add_pretok(t, pt, path, err);
	}
	if (!strcmp(type, "ByteLevel")) {
		pt.kind = TOK_PRE_BYTELEVEL;
		pt.add_prefix_space = jbool(p, "add_prefix_space", 1);
		if (jbool(p, "use_regex", 1)) {
			pt.re = tok_regex_compile(gpt2_regex, 0, err);
			if (!pt.re)
				return coli_err_wrap(err, "%s: ByteLevel", path);
		}
		*bytelevel = 1;
		return tok_add_pretok(t, pt, path, err);
	}
	return coli_err_set(err, -ENOTSUP, "%s: pre_tokenizer %s is not supported", path, type);
}

static int check_decoder(json_t *d, const char *path, coli_err *err)
{
	const char *type = jstr(d, "type");
	if (type && !strcmp(type, "ByteLevel"))
		return 0;
	if (type && !strcmp(type, "Sequence")) {
		size_t i;
		json_t *c;
		json_array_foreach(json_object_get(d, "decoders"), i, c)
			if (check_decoder(c, path, err) < 0)
				return -ENOTSUP;
		return 0;
	}
	return coli_err_set(err, -ENOTSUP, "%s: decoder %s is not supported (ByteLevel only)", path,
			    type ? type : "(none)");
}

/* A tokenizer_config.json special token is a string or an AddedToken. */
static const char *config_token(json_t *cfg, const char *key)
{
	json_t *v = json_object_get(cfg, key);
	if (json_is_string(v))
		return json_string_value(v);
	return jstr(v, "content");
}

/* chat_template.jinja beside tokenizer_config.json takes priority over
 * the config's chat_template, as in transformers (GLM-5.2 ships only the
 * file); the config's named templates go with it. */
static int load_template_file(coli_tokenizer *t, coli_err *err)
{
	char path[4200];
	snprintf(path, sizeof path, "%s/chat_template.jinja", t->dir ? t->dir : ".");
	FILE *f = fopen(path, "rb");
	if (!f)
		return 0;
	char *s = NULL;
	long n = fseek(f, 0, SEEK_END) == 0 ? ftell(f) : -1;
	if (n >= 0 && n <= (16L << 20) && fseek(f, 0, SEEK_SET) == 0 && (s = malloc((size_t)n + 1)) &&
	    fread(s, 1, (size_t)n, f) == (size_t)n) {
		s[n] = '\0';
	} else {
		free(s);
		s = NULL;
	}
	fclose(f);
	if (!s)
		return coli_err_set(err, -EIO, "%s: cannot read it (or over 16 MiB)", path);
	free(t->chat_template);
	free(t->chat_template_tool_use);
	t->chat_template = s;
	t->chat_template_tool_use = NULL;
	return 0;
}

int tok_load_config(coli_tokenizer *t, const char *cfg_path, coli_err *err)
{
	struct stat st;
	if (stat(cfg_path, &st) < 0)
		return load_template_file(t, err);
	json_error_t je;
	json_t *cfg = load_json(cfg_path, JSON_DECODE_INT_AS_REAL, &je); /* model_max_length can exceed int64 */
	if (!cfg)
		return coli_err_set(err, -EINVAL, "%s:%d: %s", cfg_path, je.line, je.text);
	const char *bos = config_token(cfg, "bos_token"), *eos = config_token(cfg, "eos_token");
	if (bos)
		t->bos_id = tok_strmap_get(&t->names, bos, strlen(bos));
	if (eos)
		t->eos_id = tok_strmap_get(&t->names, eos, strlen(eos));
	/* a named special token the vocabulary lacks means the two files do
	 * not belong together: prompts would silently lose their BOS, and
	 * generation would never stop on EOS */
	if ((bos && t->bos_id < 0) || (eos && t->eos_id < 0)) {
		int which_bos = bos && t->bos_id < 0;
		int rc = coli_err_set(err, -EINVAL, "%s: %s \"%.200s\" is not in the vocabulary of the tokenizer in %s",
				      cfg_path, which_bos ? "bos_token" : "eos_token", which_bos ? bos : eos,
				      t->dir);
		json_decref(cfg);
		return rc;
	}
	size_t i;
	json_t *a;
	json_array_foreach(json_object_get(cfg, "additional_special_tokens"), i, a) {
		const char *s = json_is_string(a) ? json_string_value(a) : jstr(a, "content");
		int id = s ? tok_strmap_get(&t->names, s, strlen(s)) : -1;
		if (id >= 0)
			t->flags[id] |= TOK_F_SPECIAL;
	}
	json_t *tpl = json_object_get(cfg, "chat_template");
	if (json_is_string(tpl)) {
		t->chat_template = strdup(json_string_value(tpl));
	} else if (json_is_array(tpl)) {
		/* named templates: the "default" one is what chat uses */
		json_array_foreach(tpl, i, a) {
			const char *name = jstr(a, "name"), *text = jstr(a, "template");
			if (name && text && !strcmp(name, "default"))
				t->chat_template = strdup(text);
			else if (name && text && !strcmp(name, "tool_use"))
				t->chat_template_tool_use = strdup(text);
		}
	}
	json_decref(cfg);
	return load_template_file(t, err);
}

int coli_tokenizer_load(const char *path, coli_tokenizer **out, coli_err *err)
{
	*out = NULL;
	coli_tokenizer *t = calloc(1, sizeof *t);
	if (!t)
		return coli_err_set(err, -ENOMEM, "%s: out of memory", path);
	t->bos_id = t->eos_id = t->unk_id = -1;
	pthread_mutex_init(&t->cache_lock, NULL);
	int rc = 0, bytelevel = 0;
	json_error_t je;
	json_t *root = load_json(path, 0, &je);
	if (!root) {
		rc = coli_err_set(err, -EINVAL, "%s:%d: %s", path, je.line, je.text);
		goto fail;
	}
	if ((rc = load_normalizer(t, json_object_get(root, "normalizer"), path, err)) < 0 ||
	    (rc = load_model(t, root, path, err)) < 0 ||
	    (rc = load_added(t, json_object_get(root, "added_tokens"), path, err)) < 0 ||
	    (rc = load_pretok(t, json_object_get(root, "pre_tokenizer"), path, &bytelevel, err)) < 0 ||
	    (rc = check_decoder(json_object_get(root, "decoder"), path, err)) < 0)
		goto fail;
	if (!bytelevel) {
		rc = coli_err_set(err, -ENOTSUP, "%s: only byte-level BPE tokenizers are supported (no ByteLevel pre_tokenizer)", path);
		goto fail;
	}
	const char *slash = strrchr(path, '/');
	t->dir = slash ? strndup(path, (size_t)(slash - path)) : strdup(".");
	char cfg[4096];
	snprintf(cfg, sizeof cfg, "%s/tokenizer_config.json", t->dir);
	if ((rc = tok_load_config(t, cfg, err)) < 0)
		goto fail;
	json_decref(root);
	*out = t;
	return 0;
fail:
	json_decref(root);
	coli_tokenizer_free(t);
	return rc;
}

int coli_tokenizer_load_dir(const char *dir, coli_tokenizer **out, coli_err *err)
{
	char p[4096];
	struct stat st;
	if (stat(dir, &st) == 0 && S_ISREG(st.st_mode))
		return coli_tokenizer_load(dir, out, err);
	snprintf(p, sizeof p, "%s/tokenizer/tokenizer.json", dir);
	if (stat(p, &st) == 0)
		return coli_tokenizer_load(p, out, err);
	snprintf(p, sizeof p, "%s/tokenizer.json", dir);
	if (stat(p, &st) == 0)
		return coli_tokenizer_load(p, out, err);
	*out = NULL;
	/* tiktoken format (Kimi-K2): tiktoken.model + tokenizer_config.json */
	snprintf(p, sizeof p, "%s/tokenizer/tiktoken.model", dir);
	if (stat(p, &st) == 0)
		return tok_load_tiktoken(p, out, err);
	snprintf(p, sizeof p, "%s/tiktoken.model", dir);
	if (stat(p, &st) == 0)
		return tok_load_tiktoken(p, out, err);
	return coli_err_set(err, -ENOENT, "%s: no tokenizer.json or tiktoken.model (in tokenizer/ or beside it)", dir);
}

void coli_tokenizer_free(coli_tokenizer *t)
{
	if (!t)
		return;
	while (t->arena) {
		tok_arena *next = t->arena->next;
		free(t->arena);
		t->arena = next;
	}
	free(t->text);
	free(t->text_len);
	free(t->flags);
	tok_strmap_free(&t->names);
	tok_strmap_free(&t->vocab);
	tok_merges_free(&t->merges);
	for (int i = 0; i < t->n_added; i++)
		free(t->added[i].content);
	free(t->added);
	tok_trie_free(&t->trie_raw);
	tok_trie_free(&t->trie_norm);
	for (int i = 0; i < t->n_pre; i++)
		pcre2_code_free(t->pre[i].re);
	free(t->pre);
	tok_cache_free(t);
	pthread_mutex_destroy(&t->cache_lock);
	free(t->chat_template);
	free(t->chat_template_tool_use);
	free(t->dir);
	free(t);
}
