/* ingest_safetensors.c - the safetensors reader on checkpoints written by
 * this test: single file, sharded with an index, directory with one file,
 * FP8 with block scales; and a catalogue of malformed inputs, each refused
 * with one line naming the file and the tensor. */
#include "config.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ingest_dtype.h"
#include "ingest_util.h"
#include "ingest_safetensors.h"
#include "test_util.h"

static void test_single(void)
{
	struct st_builder b;
	stb_init(&b);
	float a[6] = { 1, -2, 3.5f, 0, 1e-3f, -7 };
	stb_add(&b, "a", "F32", 2, (int64_t[]){ 2, 3 }, a, sizeof a);
	uint16_t bf[4], hf[4];
	for (int i = 0; i < 4; i++) {
		bf[i] = dtype_f32_to_bf16(0.5f * (float)i - 1);
		hf[i] = dtype_f32_to_f16(0.25f * (float)i + 2);
	}
	stb_add(&b, "b", "BF16", 1, (int64_t[]){ 4 }, bf, sizeof bf);
	stb_add(&b, "c", "F16", 2, (int64_t[]){ 2, 2 }, hf, sizeof hf);
	/* FP8 130 x 260 with F32 block scales [2][3] */
	enum { R = 130, C = 260 };
	uint8_t *w = malloc(R * C);
	for (int i = 0; i < R * C; i++)
		w[i] = (uint8_t)(i % 0x7e);  /* finite codes only */
	float sc[6] = { 1, 2, 4, 0.5f, 0.25f, 8 };
	stb_add(&b, "w", "F8_E4M3", 2, (int64_t[]){ R, C }, w, R * C);
	stb_add(&b, "w_scale_inv", "F32", 2, (int64_t[]){ 2, 3 }, sc, sizeof sc);
	/* FP8 with a BF16 scale */
	uint8_t w2[12];
	for (int i = 0; i < 12; i++)
		w2[i] = (uint8_t)(0x30 + i);
	uint16_t s2 = dtype_f32_to_bf16(3.0f);
	stb_add(&b, "w2", "F8_E4M3", 2, (int64_t[]){ 3, 4 }, w2, sizeof w2);
	stb_add(&b, "w2_scale_inv", "BF16", 2, (int64_t[]){ 1, 1 }, &s2, 2);
	stb_add(&b, "empty", "F32", 1, (int64_t[]){ 0 }, "", 0);
	int32_t ints[2] = { 5, 6 };
	stb_add(&b, "ints", "I32", 1, (int64_t[]){ 2 }, ints, sizeof ints);
	double dd[3] = { 1.5, -2.25, 1e10 };
	stb_add(&b, "d", "F64", 1, (int64_t[]){ 3 }, dd, sizeof dd);
	stb_add(&b, "scalar", "F32", 0, NULL, a, 4);
	mkdir(tpath("single"), 0755);
	stb_write(&b, tpath("single/model.safetensors"));

	st_checkpoint *ck = NULL;
	coli_err err = { 0 };
	int rc = st_open_dir(tpath("single"), &ck, &err);
	CHECK(rc == 0);
	if (rc) {
		fprintf(stderr, "open: %s\n", err.msg);
		free(w);
		return;
	}
	CHECK(ck->n_files == 1 && ck->n_tensors == 11);
	for (int i = 1; i < ck->n_tensors; i++)
		CHECK(strcmp(ck->tensors[i - 1].name, ck->tensors[i].name) < 0);
	CHECK(st_find(ck, "nope") == NULL);
	const st_tensor *t = st_find(ck, "a");
	CHECK(t && t->dtype == ST_F32 && t->ndim == 2 && t->shape[0] == 2 && t->shape[1] == 3);
	CHECK(t && st_numel(t) == 6 && t->nbytes == 24);
	float out[R * C];
	CHECK(st_read_f32(ck, t, out, &err) == 0 && !memcmp(out, a, sizeof a));
	t = st_find(ck, "b");
	CHECK(t && st_read_f32(ck, t, out, &err) == 0);
	for (int i = 0; i < 4; i++)
		CHECK(out[i] == 0.5f * (float)i - 1);
	t = st_find(ck, "c");
	CHECK(t && st_read_f32(ck, t, out, &err) == 0);
	for (int i = 0; i < 4; i++)
		CHECK(out[i] == 0.25f * (float)i + 2);
	t = st_find(ck, "w");
	CHECK(t && st_find_fp8_scale(ck, t) == st_find(ck, "w_scale_inv"));
	CHECK(t && st_read_f32(ck, t, out, &err) == 0);
	int bad = 0;
	for (int r = 0; r < R; r++)
		for (int c = 0; c < C; c++) {
			float want = dtype_fp8_e4m3_to_f32(w[r * C + c]) * sc[(r / 128) * 3 + c / 128];
			bad += out[r * C + c] != want;
		}
	CHECK(bad == 0);
	t = st_find(ck, "w2");
	CHECK(t && st_read_f32(ck, t, out, &err) == 0);
	for (int i = 0; i < 12; i++)
		CHECK(out[i] == dtype_fp8_e4m3_to_f32(w2[i]) * 3.0f);
	t = st_find(ck, "d");
	CHECK(t && st_read_f32(ck, t, out, &err) == 0 && out[0] == 1.5f && out[1] == -2.25f && out[2] == 1e10f);
	t = st_find(ck, "empty");
	CHECK(t && t->nbytes == 0 && st_read_f32(ck, t, out, &err) == 0);
	t = st_find(ck, "scalar");
	CHECK(t && t->ndim == 0 && st_numel(t) == 1 && st_read_f32(ck, t, out, &err) == 0 && out[0] == 1);
	t = st_find(ck, "ints");
	int32_t ib[2];
	CHECK(t && st_read_raw(ck, t, ib, &err) == 0 && ib[0] == 5 && ib[1] == 6);
	CHECK(t && st_read_f32(ck, t, out, &err) < 0 && strstr(err.msg, "ints") && strstr(err.msg, "I32"));
	st_close(ck);
	st_close(NULL);

	/* the same file opened directly, and via a directory holding only it
	 * under another name */
	CHECK(st_open_file(tpath("single/model.safetensors"), &ck, &err) == 0 && ck->n_tensors == 11);
	st_close(ck);
	mkdir(tpath("other"), 0755);
	rename(tpath("single/model.safetensors"), tpath("other/weights.safetensors"));
	CHECK(st_open_dir(tpath("other"), &ck, &err) == 0 && ck && ck->n_tensors == 11);
	st_close(ck);
	free(w);
}

static void write_shard(const char *path, const char *n1, const char *n2, float base)
{
	struct st_builder b;
	float v[4] = { base, base + 1, base + 2, base + 3 };
	stb_init(&b);
	stb_add(&b, n1, "F32", 1, (int64_t[]){ 4 }, v, sizeof v);
	stb_add(&b, n2, "F32", 2, (int64_t[]){ 2, 2 }, v, sizeof v);
	stb_write(&b, path);
}

static void test_sharded(void)
{
	mkdir(tpath("sh"), 0755);
	write_shard(tpath("sh/model-00001-of-00002.safetensors"), "x.0", "x.1", 10);
	write_shard(tpath("sh/model-00002-of-00002.safetensors"), "y.0", "extra", 20);
	write_text(tpath("sh/model.safetensors.index.json"),
		   "{\"metadata\": {\"total_size\": 64}, \"weight_map\": {"
		   "\"x.0\": \"model-00001-of-00002.safetensors\","
		   "\"x.1\": \"model-00001-of-00002.safetensors\","
		   "\"y.0\": \"model-00002-of-00002.safetensors\"}}");
	st_checkpoint *ck = NULL;
	coli_err err = { 0 };
	int rc = st_open_dir(tpath("sh"), &ck, &err);
	CHECK(rc == 0);
	if (rc) {
		fprintf(stderr, "open sharded: %s\n", err.msg);
		return;
	}
	CHECK(ck->n_files == 2 && ck->n_tensors == 4);
	float out[4];
	const st_tensor *t = st_find(ck, "y.0");
	CHECK(t && st_read_f32(ck, t, out, &err) == 0 && out[0] == 20 && out[3] == 23);
	CHECK(t && strstr(ck->files[t->file_index], "00002"));
	t = st_find(ck, "x.1");
	CHECK(t && st_read_f32(ck, t, out, &err) == 0 && out[0] == 10 && out[3] == 13);
	CHECK(st_find(ck, "extra") != NULL);  /* in a shard, not in the map: still readable */
	st_close(ck);
}

/* Expect a refusal whose message contains each of up to two substrings. */
static void expect_fail(const char *what, const char *dir_or_file, const char *s1, const char *s2)
{
	st_checkpoint *ck = NULL;
	coli_err err = { 0 };
	int rc = st_open_dir(dir_or_file, &ck, &err);
	CHECK(!(rc >= 0 || ck || !err.msg[0] || strchr(err.msg, '\n') ||
	    (s1 && !strstr(err.msg, s1)) || (s2 && !strstr(err.msg, s2))),
		"%s: rc=%d msg='%s' (wanted '%s' and '%s')", what, rc, err.msg,
			s1 ? s1 : "", s2 ? s2 : "");
	st_close(ck);
}

static void bad_header(const char *file, const char *header, size_t dlen, const char *s1, const char *s2)
{
	char *data = calloc(1, dlen + 1);
	write_st_raw(tpath("%s", file), header, data, dlen);
	expect_fail(file, tpath("%s", file), s1, s2);
	free(data);
}

#define T(dt, sh, b, e) "{\"dtype\":\"" dt "\",\"shape\":" sh ",\"data_offsets\":[" #b "," #e "]}"

static void test_bad(void)
{
	uint8_t five[5] = { 1, 2, 3, 4, 5 };
	write_bytes(tpath("trunc.safetensors"), five, 5);
	expect_fail("truncated", tpath("trunc.safetensors"), "trunc.safetensors", "truncated");

	uint8_t big[16] = { 0xff, 0xff, 0, 0, 0, 0, 0, 0, '{', '}' };
	write_bytes(tpath("hlen.safetensors"), big, 16);
	expect_fail("header > file", tpath("hlen.safetensors"), "hlen.safetensors", "exceeds the file size");
	uint8_t huge[16] = { 0, 0, 0, 0x10, 0, 0, 0, 0, '{', '}' };
	write_bytes(tpath("huge.safetensors"), huge, 16);
	expect_fail("header > 100 MB", tpath("huge.safetensors"), "huge.safetensors", "limit");

	bad_header("beyond.safetensors", "{\"t1\":" T("F32", "[4]", 0, 16) "}", 8, "beyond.safetensors", "t1");
	bad_header("overlap.safetensors", "{\"p\":" T("F32", "[4]", 0, 16) ",\"q\":" T("F32", "[2]", 8, 16) "}",
		   16, "overlap", "overlaps");
	bad_header("mismatch.safetensors", "{\"m\":" T("F32", "[3]", 0, 16) "}", 16, "mismatch.safetensors", "tensor m");
	bad_header("dtype.safetensors", "{\"u\":" T("F4", "[2]", 0, 1) "}", 16, "unknown dtype 'F4'", "tensor u");
	bad_header("array.safetensors", "[1,2,3]", 0, "array.safetensors", "not a JSON object");
	bad_header("json.safetensors", "{\"a\": ", 0, "json.safetensors", "not valid JSON");
	bad_header("dup.safetensors", "{\"d\":" T("F32", "[1]", 0, 4) ",\"d\":" T("F32", "[1]", 4, 8) "}", 8,
		   "dup.safetensors", "duplicate");
	bad_header("order.safetensors", "{\"o\":" T("F32", "[0]", 8, 4) "}", 8, "tensor o", "begin");
	bad_header("nooff.safetensors", "{\"n\":{\"dtype\":\"F32\",\"shape\":[1]}}", 8, "tensor n", "data_offsets");
	bad_header("negshape.safetensors", "{\"s\":" T("F32", "[-1]", 0, 4) "}", 8, "tensor s", "shape[0]");
	bad_header("realoff.safetensors", "{\"r\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0.0,4.0]}}", 8,
		   "tensor r", "data_offsets");
	bad_header("dims.safetensors", "{\"k\":" T("F32", "[1,1,1,1,1]", 0, 4) "}", 8, "tensor k", "dimensions");
	bad_header("overflow.safetensors", "{\"v\":" T("F32", "[1099511627776,1099511627776]", 0, 4) "}", 8,
		   "tensor v", "overflow");
	bad_header("notobj.safetensors", "{\"e\": 3}", 8, "tensor e", "not a JSON object");
	bad_header("nodtype.safetensors", "{\"g\":{\"shape\":[1],\"data_offsets\":[0,4]}}", 8, "tensor g", "dtype");

	/* parser entry point with a header longer than the bytes given */
	st_tensor *ts = NULL;
	int n = 0;
	coli_err err = { 0 };
	uint8_t part[12] = { 100, 0, 0, 0, 0, 0, 0, 0, '{', ' ', ' ', ' ' };
	CHECK(st_parse_header(part, sizeof part, 4096, 0, "part", &ts, &n, &err) < 0 && n == 0);
	CHECK(strstr(err.msg, "truncated header") != NULL);
	free(ts);

	/* sharded index problems */
	mkdir(tpath("missing"), 0755);
	write_shard(tpath("missing/a.safetensors"), "a.0", "a.1", 0);
	write_text(tpath("missing/model.safetensors.index.json"),
		   "{\"weight_map\": {\"a.0\": \"a.safetensors\", \"b.0\": \"b.safetensors\"}}");
	expect_fail("missing shard", tpath("missing"), "b.safetensors", NULL);

	mkdir(tpath("notin"), 0755);
	write_shard(tpath("notin/a.safetensors"), "a.0", "a.1", 0);
	write_text(tpath("notin/model.safetensors.index.json"),
		   "{\"weight_map\": {\"a.0\": \"a.safetensors\", \"ghost\": \"a.safetensors\"}}");
	expect_fail("tensor not in shard", tpath("notin"), "ghost", "a.safetensors");

	mkdir(tpath("twice"), 0755);
	write_shard(tpath("twice/a.safetensors"), "a.0", "same", 0);
	write_shard(tpath("twice/b.safetensors"), "b.0", "same", 0);
	write_text(tpath("twice/model.safetensors.index.json"),
		   "{\"weight_map\": {\"a.0\": \"a.safetensors\", \"b.0\": \"b.safetensors\"}}");
	expect_fail("stored twice", tpath("twice"), "same", "stored twice");

	mkdir(tpath("wrongshard"), 0755);
	write_shard(tpath("wrongshard/a.safetensors"), "a.0", "a.1", 0);
	write_shard(tpath("wrongshard/b.safetensors"), "b.0", "b.1", 0);
	write_text(tpath("wrongshard/model.safetensors.index.json"),
		   "{\"weight_map\": {\"a.0\": \"b.safetensors\", \"a.1\": \"a.safetensors\","
		   " \"b.0\": \"b.safetensors\"}}");
	expect_fail("mapped elsewhere", tpath("wrongshard"), "a.0", "stored in a.safetensors");

	mkdir(tpath("escape"), 0755);
	write_text(tpath("escape/model.safetensors.index.json"), "{\"weight_map\": {\"a.0\": \"../x.safetensors\"}}");
	expect_fail("shard path", tpath("escape"), "weight_map[a.0]", NULL);
	mkdir(tpath("nomap"), 0755);
	write_text(tpath("nomap/model.safetensors.index.json"), "{\"metadata\": {}}");
	expect_fail("no weight_map", tpath("nomap"), "weight_map", NULL);

	mkdir(tpath("empty"), 0755);
	expect_fail("empty dir", tpath("empty"), "empty", "no model.safetensors");
	mkdir(tpath("two"), 0755);
	write_shard(tpath("two/a.safetensors"), "a.0", "a.1", 0);
	write_shard(tpath("two/b.safetensors"), "b.0", "b.1", 0);
	expect_fail("two files", tpath("two"), "2 .safetensors files", NULL);
	expect_fail("no such dir", tpath("nonexistent"), "nonexistent", NULL);

	/* FP8 scale of the wrong shape */
	struct st_builder b;
	uint8_t w[4] = { 0x38, 0x38, 0x38, 0x38 };
	float s[2] = { 1, 1 };
	stb_init(&b);
	stb_add(&b, "f", "F8_E4M3", 2, (int64_t[]){ 2, 2 }, w, 4);
	stb_add(&b, "f_scale_inv", "F32", 2, (int64_t[]){ 1, 2 }, s, sizeof s);
	stb_write(&b, tpath("scale.safetensors"));
	st_checkpoint *ck = NULL;
	float out[4];
	CHECK(st_open_file(tpath("scale.safetensors"), &ck, &err) == 0);
	if (ck) {
		CHECK(st_read_f32(ck, st_find(ck, "f"), out, &err) < 0);
		CHECK(strstr(err.msg, "f_scale_inv") && strstr(err.msg, "scale.safetensors"));
		/* the file shrinks under an open checkpoint: short read, named */
		CHECK(truncate(tpath("scale.safetensors"), 20) == 0);
		CHECK(st_read_raw(ck, st_find(ck, "f_scale_inv"), out, &err) < 0);
		CHECK(strstr(err.msg, "f_scale_inv") && strstr(err.msg, "end of file"));
		st_close(ck);
	}
}

int main(void)
{
	tmp_setup();
	test_single();
	test_sharded();
	test_bad();
	return test_summary(__FILE__);
}
