/* synth_tokenizer.c - a small byte-level BPE tokenizer in Hugging Face
 * format, learned at run time from a built-in text sample.
 *
 * Ids: 0 <｜begin▁of▁sentence｜>, 1 <｜end▁of▁sentence｜> (as in
 * DeepSeek-V3), 2..257 the 256 byte tokens (byte b -> id 2 + b), then the
 * learned merges, then the chat markers the DeepSeek-V3 chat template
 * emits. Learning is plain BPE over the sample's pre-tokens: count adjacent
 * pairs weighted by word frequency, merge the most frequent (ties: lowest
 * ids), repeat. Deterministic, no floating point. */
#include "config.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "synth.h"

static const char *const synth_extra_tokens[] = {
	"<｜User｜>", "<｜Assistant｜>", "<think>", "</think>",
};
#define SYNTH_N_EXTRA ((int)(sizeof(synth_extra_tokens) / sizeof(synth_extra_tokens[0])))
#define SYNTH_FIRST_MERGE 258
#define SYNTH_N_MERGES (SYNTH_TOKENIZER_SIZE - SYNTH_FIRST_MERGE - SYNTH_N_EXTRA)

static const char synth_sample[] =
	"The quick brown fox jumps over the lazy dog. A model reads the prompt, "
	"thinks for a while and then writes the answer one token at a time. "
	"Each layer of the network mixes the tokens with attention and then "
	"sends every token through a small set of experts chosen by the router. "
	"The experts live on the disk and the hot ones stay in memory, so the "
	"machine can run a model that is much larger than its memory. "
	"When the cache is warm the answer comes quickly; when it is cold the "
	"reads from the drive take most of the time. We measure the time of each "
	"step and the number of bytes that were read, and we print them in the "
	"monitor so that the user can see where the time goes.\n"
	"Hello, world! How are you today? I am fine, thank you. What is the "
	"weather like in the city? It is sunny and warm, with a light wind from "
	"the west. The meeting starts at 10:30 and ends at 12:15 on Monday, "
	"March 3, 2025. Please bring the report and the numbers for the third "
	"quarter: 1,250 units sold, 340 returned, and 75 still in the store.\n"
	"int main(int argc, char **argv)\n{\n\tint n = 0;\n\tfor (int i = 0; i < argc; i++) {\n"
	"\t\tif (strcmp(argv[i], \"--help\") == 0)\n\t\t\treturn usage(stdout);\n"
	"\t\tn += strlen(argv[i]);\n\t}\n\tprintf(\"%d\\n\", n);\n\treturn 0;\n}\n"
	"def forward(self, x, positions):\n    h = self.norm(x)\n"
	"    for layer in self.layers:\n        h = layer(h, positions)\n"
	"    return self.head(self.final_norm(h))\n\n"
	"static int read_file(const char *path, char **out, size_t *len)\n{\n"
	"\tFILE *f = fopen(path, \"rb\");\n\tif (!f)\n\t\treturn -errno;\n"
	"\tsize_t size = 0;\n\tchar *buf = NULL;\n\twhile (!feof(f)) {\n"
	"\t\tbuf = realloc(buf, size + 4096);\n\t\tsize += fread(buf + size, 1, 4096, f);\n"
	"\t}\n\tfclose(f);\n\t*out = buf;\n\t*len = size;\n\treturn 0;\n}\n"
	"import numpy as np\nx = np.zeros((4, 8), dtype=np.float32)\n"
	"for i in range(len(x)):\n    x[i] = np.arange(8) * i\nprint(x.sum(), x.mean())\n"
	"The user asked for a list of the files in the directory, and the "
	"assistant answered with the names and the sizes of the files. Then the "
	"user asked again, and the answer was the same, because the files had "
	"not changed. A good answer is short, correct and kind; a bad answer is "
	"long, wrong or rude. The server listens on the local address and "
	"returns an error when the request is not valid JSON.\n";

/* ---- pre-tokenization of the ASCII sample (mirrors the Split regex) ---- */

static int synth_is_alpha(int c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
static int synth_is_digit(int c) { return c >= '0' && c <= '9'; }
static int synth_is_space(int c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

/* Length of the pre-token at s. */
static size_t synth_pretoken(const char *s)
{
	size_t i = 0;
	if (synth_is_digit(s[0])) {
		while (i < 3 && synth_is_digit(s[i]))
			i++;
		return i;
	}
	size_t lead = (s[0] == ' ' && s[1] && !synth_is_space(s[1]) && !synth_is_digit(s[1])) ? 1 : 0;
	i = lead;
	if (synth_is_alpha(s[i])) {
		while (synth_is_alpha(s[i]))
			i++;
		return i;
	}
	if (!synth_is_space(s[i]) && !synth_is_digit(s[i])) {
		while (s[i] && !synth_is_space(s[i]) && !synth_is_alpha(s[i]) && !synth_is_digit(s[i]))
			i++;
		return i;
	}
	while (synth_is_space(s[i]))
		i++;
	/* \s+(?!\S): leave the last space to lead the next word. */
	if (i > 1 && s[i] && s[i - 1] == ' ')
		i--;
	return i;
}

typedef struct synth_word {
	int *ids;
	int len;
	int count;
	const char *text;
	size_t tlen;
} synth_word;

typedef struct synth_bpe {
	synth_word *w;
	int nw;
	unsigned char *tok[SYNTH_TOKENIZER_SIZE]; /* raw bytes of each token */
	int tok_len[SYNTH_TOKENIZER_SIZE];
	int merge_a[SYNTH_N_MERGES], merge_b[SYNTH_N_MERGES];
} synth_bpe;

static void synth_bpe_free(synth_bpe *b)
{
	for (int i = 0; i < b->nw; i++)
		free(b->w[i].ids);
	free(b->w);
	for (int i = 0; i < SYNTH_TOKENIZER_SIZE; i++)
		free(b->tok[i]);
}

static int synth_bpe_words(synth_bpe *b)
{
	size_t n = sizeof(synth_sample) - 1;
	b->w = calloc(n, sizeof(*b->w));
	if (!b->w)
		return -ENOMEM;
	for (size_t at = 0; at < n;) {
		const char *s = synth_sample + at;
		size_t len = synth_pretoken(s);
		at += len;
		int j;
		for (j = 0; j < b->nw; j++)
			if (b->w[j].tlen == len && !memcmp(b->w[j].text, s, len))
				break;
		if (j < b->nw) {
			b->w[j].count++;
			continue;
		}
		synth_word *w = &b->w[b->nw++];
		w->text = s;
		w->tlen = len;
		w->count = 1;
		w->len = (int)len;
		if (!(w->ids = malloc(len * sizeof(int))))
			return -ENOMEM;
		for (size_t k = 0; k < len; k++)
			w->ids[k] = 2 + (unsigned char)s[k];
	}
	return 0;
}

/* Does the concatenation of tokens a and c already exist among ids < n? */
static int synth_bpe_exists(const synth_bpe *b, int a, int c, int n)
{
	int len = b->tok_len[a] + b->tok_len[c];
	for (int id = 2; id < n; id++)
		if (b->tok_len[id] == len && !memcmp(b->tok[id], b->tok[a], (size_t)b->tok_len[a]) &&
		    !memcmp(b->tok[id] + b->tok_len[a], b->tok[c], (size_t)b->tok_len[c]))
			return 1;
	return 0;
}

static int synth_bpe_learn(synth_bpe *b)
{
	const int V = SYNTH_TOKENIZER_SIZE;
	int *counts = malloc((size_t)V * V * sizeof(int));
	unsigned char *banned = calloc((size_t)V * V, 1);
	if (!counts || !banned) {
		free(counts);
		free(banned);
		return -ENOMEM;
	}
	int rc = 0;
	for (int m = 0; m < SYNTH_N_MERGES; m++) {
		memset(counts, 0, (size_t)V * V * sizeof(int));
		for (int i = 0; i < b->nw; i++)
			for (int k = 0; k + 1 < b->w[i].len; k++)
				counts[b->w[i].ids[k] * V + b->w[i].ids[k + 1]] += b->w[i].count;
		int best = -1;
		for (;;) {
			best = -1;
			for (int p = 0; p < V * V; p++)
				if (counts[p] > 0 && !banned[p] && (best < 0 || counts[p] > counts[best]))
					best = p;
			/* Two merge orders can spell the same string ("a"+"bc",
			 * "ab"+"c"); a vocab needs unique strings, so such a pair
			 * is never merged. */
			if (best < 0 || !synth_bpe_exists(b, best / V, best % V, SYNTH_FIRST_MERGE + m))
				break;
			banned[best] = 1;
		}
		if (best < 0) {
			rc = -ERANGE; /* sample too small for the merge count */
			break;
		}
		int a = best / V, c = best % V, id = SYNTH_FIRST_MERGE + m;
		b->merge_a[m] = a;
		b->merge_b[m] = c;
		b->tok_len[id] = b->tok_len[a] + b->tok_len[c];
		if (!(b->tok[id] = malloc((size_t)b->tok_len[id]))) {
			rc = -ENOMEM;
			break;
		}
		memcpy(b->tok[id], b->tok[a], (size_t)b->tok_len[a]);
		memcpy(b->tok[id] + b->tok_len[a], b->tok[c], (size_t)b->tok_len[c]);
		for (int i = 0; i < b->nw; i++) {
			synth_word *w = &b->w[i];
			int o = 0;
			for (int k = 0; k < w->len; k++) {
				if (k + 1 < w->len && w->ids[k] == a && w->ids[k + 1] == c) {
					w->ids[o++] = id;
					k++;
				} else {
					w->ids[o++] = w->ids[k];
				}
			}
			w->len = o;
		}
	}
	free(counts);
	free(banned);
	return rc;
}

/* GPT-2 byte-level alphabet: printable bytes map to themselves, the others
 * to U+0100 upwards, so every token is printable text. */
static unsigned synth_byte_cp(unsigned char c)
{
	if ((c >= 33 && c <= 126) || (c >= 161 && c <= 172) || c >= 174)
		return c;
	unsigned n = 0;
	for (unsigned k = 0; k < c; k++)
		if (!((k >= 33 && k <= 126) || (k >= 161 && k <= 172) || k >= 174))
			n++;
	return 256 + n;
}

static size_t synth_utf8(unsigned cp, char *o)
{
	if (cp < 0x80) {
		o[0] = (char)cp;
		return 1;
	}
	o[0] = (char)(0xC0 | (cp >> 6));
	o[1] = (char)(0x80 | (cp & 0x3F));
	return 2;
}

static char *synth_mapped(const synth_bpe *b, int id, char *out)
{
	size_t o = 0;
	for (int i = 0; i < b->tok_len[id]; i++)
		o += synth_utf8(synth_byte_cp(b->tok[id][i]), out + o);
	out[o] = 0;
	return out;
}

static const char *synth_special(int id)
{
	if (id == SYNTH_BOS_ID)
		return "<｜begin▁of▁sentence｜>";
	if (id == SYNTH_EOS_ID)
		return "<｜end▁of▁sentence｜>";
	if (id >= SYNTH_TOKENIZER_SIZE - SYNTH_N_EXTRA)
		return synth_extra_tokens[id - (SYNTH_TOKENIZER_SIZE - SYNTH_N_EXTRA)];
	return NULL;
}

static json_t *synth_added_token(int id, const char *content)
{
	json_t *t = json_object();
	json_object_set_new(t, "id", json_integer(id));
	json_object_set_new(t, "content", json_string(content));
	json_object_set_new(t, "single_word", json_false());
	json_object_set_new(t, "lstrip", json_false());
	json_object_set_new(t, "rstrip", json_false());
	json_object_set_new(t, "normalized", json_true());
	json_object_set_new(t, "special", json_true());
	return t;
}

static json_t *synth_split(const char *regex)
{
	json_t *s = json_object(), *p = json_object();
	json_object_set_new(s, "type", json_string("Split"));
	json_object_set_new(p, "Regex", json_string(regex));
	json_object_set_new(s, "pattern", p);
	json_object_set_new(s, "behavior", json_string("Isolated"));
	json_object_set_new(s, "invert", json_false());
	return s;
}

static json_t *synth_bytelevel(bool prefix_space, bool use_regex)
{
	json_t *o = json_object();
	json_object_set_new(o, "type", json_string("ByteLevel"));
	json_object_set_new(o, "add_prefix_space", json_boolean(prefix_space));
	json_object_set_new(o, "trim_offsets", json_true());
	json_object_set_new(o, "use_regex", json_boolean(use_regex));
	return o;
}

static json_t *synth_tokenizer_json(const synth_bpe *b)
{
	json_t *root = json_object(), *added = json_array(), *vocab = json_object(), *merges = json_array();
	char sa[512], sb[512], line[1100];
	for (int id = 0; id < SYNTH_TOKENIZER_SIZE; id++) {
		const char *sp = synth_special(id);
		if (sp)
			json_array_append_new(added, synth_added_token(id, sp));
		json_object_set_new(vocab, sp ? sp : synth_mapped(b, id, sa), json_integer(id));
	}
	for (int m = 0; m < SYNTH_N_MERGES; m++) {
		snprintf(line, sizeof(line), "%s %s", synth_mapped(b, b->merge_a[m], sa),
			 synth_mapped(b, b->merge_b[m], sb));
		json_array_append_new(merges, json_string(line));
	}
	json_object_set_new(root, "version", json_string("1.0"));
	json_object_set_new(root, "truncation", json_null());
	json_object_set_new(root, "padding", json_null());
	json_object_set_new(root, "added_tokens", added);
	json_object_set_new(root, "normalizer", json_null());
	json_t *pre = json_object(), *list = json_array();
	json_object_set_new(pre, "type", json_string("Sequence"));
	json_array_append_new(list, synth_split("\\p{N}{1,3}"));
	json_array_append_new(list, synth_split(" ?\\p{L}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+"));
	json_array_append_new(list, synth_bytelevel(false, false));
	json_object_set_new(pre, "pretokenizers", list);
	json_object_set_new(root, "pre_tokenizer", pre);
	/* BOS is prepended by the post-processor, like DeepSeek-V3's file. */
	json_t *post = json_object(), *single = json_array(), *pair = json_array(), *spec = json_object();
	const char *bos = synth_special(SYNTH_BOS_ID);
	json_t *bos_piece = json_pack("{s:{s:s,s:i}}", "SpecialToken", "id", bos, "type_id", 0);
	json_array_append(single, bos_piece);
	json_array_append_new(single, json_pack("{s:{s:s,s:i}}", "Sequence", "id", "A", "type_id", 0));
	json_array_append(pair, bos_piece);
	json_array_append_new(pair, json_pack("{s:{s:s,s:i}}", "Sequence", "id", "A", "type_id", 0));
	json_array_append_new(pair, bos_piece);
	json_array_append_new(pair, json_pack("{s:{s:s,s:i}}", "Sequence", "id", "B", "type_id", 1));
	json_object_set_new(spec, bos, json_pack("{s:s,s:[i],s:[s]}", "id", bos, "ids", SYNTH_BOS_ID, "tokens", bos));
	json_object_set_new(post, "type", json_string("TemplateProcessing"));
	json_object_set_new(post, "single", single);
	json_object_set_new(post, "pair", pair);
	json_object_set_new(post, "special_tokens", spec);
	json_object_set_new(root, "post_processor", post);
	json_object_set_new(root, "decoder", synth_bytelevel(true, true));
	json_t *model = json_object();
	json_object_set_new(model, "type", json_string("BPE"));
	json_object_set_new(model, "dropout", json_null());
	json_object_set_new(model, "unk_token", json_null());
	json_object_set_new(model, "continuing_subword_prefix", json_null());
	json_object_set_new(model, "end_of_word_suffix", json_null());
	json_object_set_new(model, "fuse_unk", json_false());
	json_object_set_new(model, "byte_fallback", json_false());
	json_object_set_new(model, "vocab", vocab);
	json_object_set_new(model, "merges", merges);
	json_object_set_new(root, "model", model);
	return root;
}

/* The chat template of DeepSeek-V3's tokenizer_config.json (verbatim: it is
 * data the chat code must interpret, not prose). */
static const char synth_chat_template[] =
	"{% if not add_generation_prompt is defined %}{% set add_generation_prompt = false %}{% endif %}"
	"{% set ns = namespace(is_first=false, is_tool=false, is_output_first=true, system_prompt='', is_first_sp=true) %}"
	"{%- for message in messages %}{%- if message['role'] == 'system' %}{%- if ns.is_first_sp %}"
	"{% set ns.system_prompt = ns.system_prompt + message['content'] %}{% set ns.is_first_sp = false %}"
	"{%- else %}{% set ns.system_prompt = ns.system_prompt + '\\n\\n' + message['content'] %}{%- endif %}"
	"{%- endif %}{%- endfor %}{{ bos_token }}{{ ns.system_prompt }}{%- for message in messages %}"
	"{%- if message['role'] == 'user' %}{%- set ns.is_tool = false -%}{{'<｜User｜>' + message['content']}}"
	"{%- endif %}{%- if message['role'] == 'assistant' and 'tool_calls' in message %}{%- set ns.is_tool = false -%}"
	"{%- for tool in message['tool_calls'] %}{%- if not ns.is_first %}{%- if message['content'] is none %}"
	"{{'<｜Assistant｜><｜tool▁calls▁begin｜><｜tool▁call▁begin｜>' + tool['type'] + '<｜tool▁sep｜>' + "
	"tool['function']['name'] + '\\n' + '```json' + '\\n' + tool['function']['arguments'] + '\\n' + '```' + "
	"'<｜tool▁call▁end｜>'}}{%- else %}{{'<｜Assistant｜>' + message['content'] + "
	"'<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>' + tool['type'] + '<｜tool▁sep｜>' + tool['function']['name'] + "
	"'\\n' + '```json' + '\\n' + tool['function']['arguments'] + '\\n' + '```' + '<｜tool▁call▁end｜>'}}"
	"{%- endif %}{%- set ns.is_first = true -%}{%- else %}{{'\\n' + '<｜tool▁call▁begin｜>' + tool['type'] + "
	"'<｜tool▁sep｜>' + tool['function']['name'] + '\\n' + '```json' + '\\n' + tool['function']['arguments'] + "
	"'\\n' + '```' + '<｜tool▁call▁end｜>'}}{%- endif %}{%- endfor %}{{'<｜tool▁calls▁end｜><｜end▁of▁sentence｜>'}}"
	"{%- endif %}{%- if message['role'] == 'assistant' and 'tool_calls' not in message %}{%- if ns.is_tool %}"
	"{{'<｜tool▁outputs▁end｜>' + message['content'] + '<｜end▁of▁sentence｜>'}}{%- set ns.is_tool = false -%}"
	"{%- else %}{% set content = message['content'] %}{% if '</think>' in content %}"
	"{% set content = content.split('</think>')[-1] %}{% endif %}"
	"{{'<｜Assistant｜>' + content + '<｜end▁of▁sentence｜>'}}{%- endif %}{%- endif %}"
	"{%- if message['role'] == 'tool' %}{%- set ns.is_tool = true -%}{%- if ns.is_output_first %}"
	"{{'<｜tool▁outputs▁begin｜><｜tool▁output▁begin｜>' + message['content'] + '<｜tool▁output▁end｜>'}}"
	"{%- set ns.is_output_first = false %}{%- else %}"
	"{{'<｜tool▁output▁begin｜>' + message['content'] + '<｜tool▁output▁end｜>'}}{%- endif %}{%- endif %}"
	"{%- endfor -%}{% if ns.is_tool %}{{'<｜tool▁outputs▁end｜>'}}{% endif %}"
	"{% if add_generation_prompt and not ns.is_tool %}{{'<｜Assistant｜>'}}{% endif %}";

static json_t *synth_added_obj(const char *content)
{
	return json_pack("{s:s,s:s,s:b,s:b,s:b,s:b}", "__type", "AddedToken", "content", content, "lstrip", 0,
			 "normalized", 1, "rstrip", 0, "single_word", 0);
}

static json_t *synth_tokenizer_config_json(void)
{
	json_t *j = json_object();
	json_object_set_new(j, "add_bos_token", json_true());
	json_object_set_new(j, "add_eos_token", json_false());
	json_object_set_new(j, "bos_token", synth_added_obj(synth_special(SYNTH_BOS_ID)));
	json_object_set_new(j, "clean_up_tokenization_spaces", json_false());
	json_object_set_new(j, "eos_token", synth_added_obj(synth_special(SYNTH_EOS_ID)));
	json_object_set_new(j, "legacy", json_true());
	json_object_set_new(j, "model_max_length", json_integer(16384));
	json_object_set_new(j, "pad_token", synth_added_obj(synth_special(SYNTH_EOS_ID)));
	json_object_set_new(j, "sp_model_kwargs", json_object());
	json_object_set_new(j, "unk_token", json_null());
	json_object_set_new(j, "tokenizer_class", json_string("LlamaTokenizerFast"));
	json_object_set_new(j, "chat_template", json_string(synth_chat_template));
	return j;
}

static int synth_dump(json_t *j, const char *dir, const char *name, coli_err *err)
{
	char path[4096];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	int bad = !j || json_dump_file(j, path, JSON_INDENT(2)) != 0;
	json_decref(j);
	return bad ? coli_err_set(err, -EIO, "%s: cannot write", path) : 0;
}

int synth_tokenizer_write(const char *dir, coli_err *err)
{
	synth_bpe b;
	memset(&b, 0, sizeof(b));
	int rc = 0;
	for (int i = 0; i < 256; i++) {
		if (!(b.tok[2 + i] = malloc(1))) {
			rc = -ENOMEM;
			goto out;
		}
		b.tok[2 + i][0] = (unsigned char)i;
		b.tok_len[2 + i] = 1;
	}
	if ((rc = synth_bpe_words(&b)) || (rc = synth_bpe_learn(&b)))
		goto out;
	if ((rc = synth_dump(synth_tokenizer_json(&b), dir, "tokenizer.json", err)))
		goto out;
	rc = synth_dump(synth_tokenizer_config_json(), dir, "tokenizer_config.json", err);
out:
	synth_bpe_free(&b);
	if (rc == -ENOMEM || rc == -ERANGE)
		coli_err_set(err, rc, "synth: cannot build the tokenizer (%s)",
			     rc == -ENOMEM ? "out of memory" : "sample too small");
	return rc;
}
