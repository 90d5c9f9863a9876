/* cmd_tokenize.c - `coli tokenize`: text -> ids, ids -> text, and chat
 * rendering, as JSON on stdout. See coli-tokenize(1). */
#include "config.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chat_template.h"
#include "cli.h"
#include "cli_print.h"
#include "model_dir.h"
#include "tokenizer.h"
#include "util_array.h"
#include "util_buf.h"

static const char usage_text[] =
	"usage: coli tokenize [DIR|tokenizer.json] TEXT\n"
	"       coli tokenize [DIR|tokenizer.json] --file FILE\n"
	"       coli tokenize [DIR|tokenizer.json] --lines FILE\n"
	"       coli tokenize [DIR|tokenizer.json] --decode IDS [--skip-special]\n"
	"       coli tokenize [DIR|tokenizer.json] --chat MESSAGES.json [--no-generation-prompt]\n"
	"                     [--model-type TYPE]\n"
	"DIR defaults to $COLI_MODEL, then to the embedded default model.\n";

/* ids as a JSON list; printf per id would dominate a large --file */
static void put_ids(const int *ids, size_t n)
{
	char buf[4096];
	size_t o = 0;
	for (size_t i = 0; i < n; i++) {
		char tmp[16];
		int k = 0;
		unsigned v = (unsigned)ids[i];
		do
			tmp[k++] = (char)('0' + v % 10);
		while ((v /= 10) && k < 15);
		if (o + 17 > sizeof buf) {
			fwrite(buf, 1, o, stdout);
			o = 0;
		}
		if (i)
			buf[o++] = ',';
		while (k)
			buf[o++] = tmp[--k];
	}
	fwrite(buf, 1, o, stdout);
}

static void print_ids(const int *ids, size_t n)
{
	fputs("{\"ids\":[", stdout);
	put_ids(ids, n);
	fputs("]}\n", stdout);
}

static int print_text(const char *text, size_t len)
{
	json_t *o = json_pack("{s:s%}", "text", text, len);
	if (!o)
		return -EINVAL;
	return cli_print_json(o, JSON_COMPACT | JSON_ENSURE_ASCII);
}

static int parse_ids(const char *s, int **ids, size_t *n)
{
	size_t cap = 16;
	*n = 0;
	*ids = malloc(cap * sizeof **ids);
	if (!*ids)
		return -ENOMEM;
	while (*s) {
		while (*s == ',' || *s == ' ' || *s == '\t' || *s == '\n')
			s++;
		if (!*s)
			break;
		char *end;
		errno = 0;
		long v = strtol(s, &end, 10);
		if (end == s || errno || v < 0 || v > 0x7FFFFFFF || (*end && *end != ',' && *end != ' ' &&
								    *end != '\t' && *end != '\n'))
			return -EINVAL;
		if (util_array_grow(ids, &cap, *n + 1, 16))
			return -ENOMEM;
		(*ids)[(*n)++] = (int)v;
		s = end;
	}
	return 0;
}

static int hex_bytes(const char *h, char **out, size_t *len)
{
	if (!h || strlen(h) % 2)
		return -EINVAL;
	size_t n = strlen(h) / 2;
	char *b = malloc(n + 1);
	if (!b)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		unsigned v;
		if (sscanf(h + 2 * i, "%2x", &v) != 1) {
			free(b);
			return -EINVAL;
		}
		b[i] = (char)v;
	}
	*out = b;
	*len = n;
	return 0;
}

/* --lines: one JSON string per line in, one {"ids":[...],"text":"..."}
 * per line out, text being the decoding of ids (lets tests tokenize
 * thousands of strings in one process and check the round trip). */
static int encode_lines(const coli_tokenizer *t, const char *path)
{
	char *data;
	size_t len;
	int rc = util_buf_read_path(path, 0, &data, &len);
	if (rc < 0) {
		cli_errorf("tokenize", "%s: %s", path, strerror(-rc));
		return COLI_EXIT_FAIL;
	}
	int status = COLI_EXIT_OK;
	size_t lineno = 0;
	for (char *line = data, *next; line < data + len; line = next) {
		char *nl = memchr(line, '\n', (size_t)(data + len - line));
		next = nl ? nl + 1 : data + len;
		lineno++;
		if (next - line <= 1 && nl)
			continue;
		json_error_t je;
		json_t *v = json_loadb(line, (size_t)(next - line), JSON_DECODE_ANY | JSON_ALLOW_NUL, &je);
		char *raw = NULL;
		size_t raw_len = 0;
		if (json_is_object(v) && hex_bytes(json_string_value(json_object_get(v, "hex")), &raw, &raw_len) == 0) {
			/* {"hex":"..."}: raw bytes, for input JSON cannot carry (invalid UTF-8) */
		} else if (json_is_string(v)) {
			raw_len = json_string_length(v);
			raw = malloc(raw_len + 1);
			if (raw)
				memcpy(raw, json_string_value(v), raw_len);
		} else {
			cli_errorf("tokenize", "%s:%zu: not a JSON string nor {\"hex\":...}", path, lineno);
			json_decref(v);
			status = COLI_EXIT_FAIL;
			break;
		}
		int *ids;
		size_t n;
		coli_err err = { 0 };
		rc = raw ? coli_tokenizer_encode(t, raw, raw_len, &ids, &n, &err)
			 : coli_err_set(&err, -ENOMEM, "out of memory");
		free(raw);
		json_decref(v);
		if (rc < 0) {
			cli_errorf("tokenize", "%s:%zu: %s", path, lineno, err.msg);
			status = COLI_EXIT_FAIL;
			break;
		}
		/* the decoding rides along so a test checks the round trip too */
		char *text;
		size_t tl;
		if (coli_tokenizer_decode(t, ids, n, 0, &text, &tl, &err) < 0) {
			cli_errorf("tokenize", "%s:%zu: decode: %s", path, lineno, err.msg);
			free(ids);
			status = COLI_EXIT_FAIL;
			break;
		}
		fputs("{\"ids\":[", stdout);
		put_ids(ids, n);
		json_t *js = json_stringn(text, tl);
		char *enc = js ? json_dumps(js, JSON_ENCODE_ANY | JSON_COMPACT) : NULL;
		printf("],\"text\":%s}\n", enc ? enc : "null");
		free(enc);
		json_decref(js);
		free(text);
		free(ids);
	}
	free(data);
	return status;
}

int tokenize_chat(const coli_tokenizer *t, const char *path, const char *model_type, int gen_prompt);

int cmd_tokenize(int argc, char **argv)
{
	const char *file = NULL, *lines = NULL, *decode = NULL, *chat = NULL, *model_type = NULL;
	const char *pos[2];
	int npos = 0, skip_special = 0, gen_prompt = 1;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		const char **slot = NULL;
		if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			fputs(usage_text, stdout);
			return COLI_EXIT_OK;
		} else if (!strcmp(a, "--file"))
			slot = &file;
		else if (!strcmp(a, "--lines"))
			slot = &lines;
		else if (!strcmp(a, "--decode"))
			slot = &decode;
		else if (!strcmp(a, "--chat"))
			slot = &chat;
		else if (!strcmp(a, "--model-type"))
			slot = &model_type;
		else if (!strcmp(a, "--skip-special"))
			skip_special = 1;
		else if (!strcmp(a, "--no-generation-prompt"))
			gen_prompt = 0;
		else if (!strcmp(a, "--")) {
			while (++i < argc && npos < 2)
				pos[npos++] = argv[i];
			if (i < argc) {
				cli_errorf("tokenize", "too many arguments (see --help)");
				return COLI_EXIT_USAGE;
			}
		} else if (a[0] == '-' && a[1]) {
			cli_errorf("tokenize", "unknown option '%s' (see --help)", a);
			return COLI_EXIT_USAGE;
		} else if (npos < 2) {
			pos[npos++] = a;
		} else {
			cli_errorf("tokenize", "too many arguments (see --help)");
			return COLI_EXIT_USAGE;
		}
		if (slot) {
			if (i + 1 >= argc) {
				cli_errorf("tokenize", "%s needs a value", a);
				return COLI_EXIT_USAGE;
			}
			*slot = argv[++i];
		}
	}
	int modes = !!file + !!lines + !!decode + !!chat;
	if (modes > 1) {
		cli_errorf("tokenize", "--file, --lines, --decode and --chat are exclusive");
		return COLI_EXIT_USAGE;
	}
	const char *dir = NULL, *text = NULL;
	if (modes) {
		if (npos > 1) {
			cli_errorf("tokenize", "TEXT cannot be combined with --file/--lines/--decode/--chat");
			return COLI_EXIT_USAGE;
		}
		dir = npos ? pos[0] : NULL;
	} else if (npos == 2) {
		dir = pos[0];
		text = pos[1];
	} else if (npos == 1) {
		text = pos[0];
	} else {
		fputs(usage_text, stderr);
		return COLI_EXIT_USAGE;
	}
	coli_tokenizer *t;
	coli_err err = { 0 };
	char dirbuf[4096];
	if (coli_model_dir_resolve(dir, dirbuf, sizeof dirbuf, &err) < 0 ||
	    coli_tokenizer_load_dir(dirbuf, &t, &err) < 0) {
		cli_errorf("tokenize", "%s", err.msg);
		return COLI_EXIT_FAIL;
	}
	int status = COLI_EXIT_OK, rc;
	char *data = NULL;
	size_t len = 0;
	if (lines) {
		status = encode_lines(t, lines);
	} else if (chat) {
		status = tokenize_chat(t, chat, model_type, gen_prompt);
	} else if (decode) {
		int *ids = NULL;
		size_t n;
		char *out;
		if (parse_ids(decode, &ids, &n) < 0) {
			cli_errorf("tokenize", "--decode: '%s' is not a list of token ids", decode);
			status = COLI_EXIT_USAGE;
		} else if (coli_tokenizer_decode(t, ids, n, skip_special, &out, &len, &err) < 0) {
			cli_errorf("tokenize", "--decode: %s", err.msg);
			status = COLI_EXIT_FAIL;
		} else {
			if (print_text(out, len) < 0)
				status = COLI_EXIT_FAIL;
			free(out);
		}
		free(ids);
	} else {
		if (file && (rc = util_buf_read_path(file, 0, &data, &len)) < 0) {
			cli_errorf("tokenize", "--file %s: %s", file, strerror(-rc));
			status = COLI_EXIT_FAIL;
		} else {
			int *ids;
			size_t n;
			if (!file)
				len = strlen(text);
			if (coli_tokenizer_encode(t, file ? data : text, len, &ids, &n, &err) < 0) {
				cli_errorf("tokenize", "%s", err.msg);
				status = COLI_EXIT_FAIL;
			} else {
				print_ids(ids, n);
				free(ids);
			}
		}
	}
	free(data);
	coli_tokenizer_free(t);
	return status;
}
