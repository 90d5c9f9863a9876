/* synth_writer.c - unit tests of the safetensors writer
 * (convert/ingest_safetensors_write.c), read back with the engine's own reader
 * (convert/ingest_safetensors.c), so the two modules are checked against each other:
 * single file and sharded with index, F32/BF16/F16/F8_E4M3 (+ block
 * scales), data handed over in odd-sized pieces across tensor boundaries,
 * and the refusals (duplicate names, overrun, incomplete tensor, more
 * shards than tensors), after which no file is left behind. */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "coli_err.h"
#include "ingest_dtype.h"
#include "ingest_safetensors.h"
#include "ingest_safetensors_write.h"
#include "test_util.h"

static int count_files(const char *dir)
{
	DIR *d = opendir(dir);
	int n = 0;
	struct dirent *e;
	while (d && (e = readdir(d)))
		if (e->d_name[0] != '.')
			n++;
	if (d)
		closedir(d);
	return n;
}

static void clean(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char p[512];
	while (d && (e = readdir(d)))
		if (e->d_name[0] != '.') {
			snprintf(p, sizeof(p), "%s/%s", dir, e->d_name);
			unlink(p);
		}
	if (d)
		closedir(d);
}

static float val(int t, int64_t i)
{
	return (float)sin(0.37 * (double)i + t) * (float)(1 + t);
}

/* Four tensors: a [300][200] F32, b [17] BF16, c [5][64] F16, w [130][260]
 * F8_E4M3 with w_scale_inv [2][3]. */
static void write_model(const char *dir, int shards, int piece)
{
	coli_err err = { 0 };
	st_writer *w = NULL;
	int64_t sa[2] = { 300, 200 }, sb[1] = { 17 }, sc[2] = { 5, 64 }, sw[2] = { 130, 260 },
		ss[2] = { 2, 3 };
	CHECK(st_writer_new(dir, shards, &w, &err) == 0);
	CHECK(st_writer_declare(w, "a", ST_F32, 2, sa, &err) == 0);
	CHECK(st_writer_declare(w, "b", ST_BF16, 1, sb, &err) == 0);
	CHECK(st_writer_declare(w, "c", ST_F16, 2, sc, &err) == 0);
	CHECK(st_writer_declare(w, "w", ST_F8_E4M3, 2, sw, &err) == 0);
	CHECK(st_writer_declare(w, "w_scale_inv", ST_F32, 2, ss, &err) == 0);
	CHECK(st_writer_declare(w, "a", ST_F32, 2, sa, &err) == -EEXIST);
	CHECK(st_writer_total_bytes(w) == 300 * 200 * 4 + 17 * 2 + 5 * 64 * 2 + 130 * 260 + 6 * 4);
	CHECK(st_writer_begin(w, &err) == 0);
	CHECK(!strcmp(st_writer_current(w), "a"));
	/* a: raw F32 bytes in odd pieces */
	float *a = malloc(300 * 200 * sizeof(float));
	for (int64_t i = 0; i < 300 * 200; i++)
		a[i] = val(0, i);
	for (size_t off = 0; off < 300 * 200 * 4; off += (size_t)piece) {
		size_t k = 300 * 200 * 4 - off < (size_t)piece ? 300 * 200 * 4 - off : (size_t)piece;
		CHECK(st_writer_write(w, (const char *)a + off, k, &err) == 0);
	}
	free(a);
	float tmp[130 * 260];
	for (int i = 0; i < 17; i++)
		tmp[i] = val(1, i);
	CHECK(st_writer_write_f32(w, tmp, 17, &err) == 0);
	for (int i = 0; i < 5 * 64; i++)
		tmp[i] = val(2, i);
	CHECK(st_writer_write_f32(w, tmp, 100, &err) == 0);
	CHECK(st_writer_write_f32(w, tmp + 100, 5 * 64 - 100, &err) == 0);
	/* w: values already divided by their block scale (scale = 0.5 * (1 + block)) */
	for (int r = 0; r < 130; r++)
		for (int c = 0; c < 260; c++) {
			float s = 0.5f * (float)(1 + (r / 128) * 3 + c / 128);
			tmp[r * 260 + c] = val(3, r * 260 + c) / s;
		}
	CHECK(!strcmp(st_writer_current(w), "w"));
	CHECK(st_writer_write_f32(w, tmp, 130 * 260 + 1, &err) == -EINVAL); /* overrun */
	CHECK(st_writer_write_f32(w, tmp, 130 * 260, &err) == 0);
	float scales[6];
	for (int i = 0; i < 6; i++)
		scales[i] = 0.5f * (float)(1 + i);
	CHECK(st_writer_write_f32(w, scales, 6, &err) == 0);
	CHECK(st_writer_current(w) == NULL);
	CHECK(st_writer_write(w, scales, 1, &err) == -EINVAL);
	coli_err_clear(&err);
	CHECK(st_writer_finish(w, &err) == 0);
	if (err.code)
		fprintf(stderr, "writer: %s\n", err.msg);
	st_writer_free(w);
}

static void read_back(const char *dir, int shards)
{
	coli_err err = { 0 };
	st_checkpoint *ck = NULL;
	CHECK(st_open_dir(dir, &ck, &err) == 0);
	if (!ck) {
		fprintf(stderr, "reader: %s\n", err.msg);
		return;
	}
	CHECK(ck->n_files == shards);
	static float out[300 * 200];
	const st_tensor *t = st_find(ck, "a");
	CHECK(t && t->dtype == ST_F32 && t->shape[0] == 300 && t->shape[1] == 200);
	if (t && st_read_f32(ck, t, out, &err) == 0)
		for (int64_t i = 0; i < 300 * 200; i++)
			CHECK(out[i] == val(0, i));
	t = st_find(ck, "b");
	CHECK(t && t->dtype == ST_BF16 && t->ndim == 1 && t->shape[0] == 17);
	if (t && st_read_f32(ck, t, out, &err) == 0)
		for (int i = 0; i < 17; i++)
			CHECK(out[i] == dtype_bf16_to_f32(dtype_f32_to_bf16(val(1, i))));
	t = st_find(ck, "c");
	CHECK(t && t->dtype == ST_F16);
	if (t && st_read_f32(ck, t, out, &err) == 0)
		for (int i = 0; i < 5 * 64; i++)
			CHECK(out[i] == dtype_f16_to_f32(dtype_f32_to_f16(val(2, i))));
	t = st_find(ck, "w");
	CHECK(t && t->dtype == ST_F8_E4M3);
	if (t && st_read_f32(ck, t, out, &err) == 0) {
		double worst = 0;
		for (int r = 0; r < 130; r++)
			for (int c = 0; c < 260; c++) {
				float want = val(3, r * 260 + c);
				double e = fabs(out[r * 260 + c] - want) / (1.0 + fabs(want));
				worst = e > worst ? e : worst;
			}
		/* e4m3 keeps 3 mantissa bits: relative error <= 2^-4 */
		CHECK(worst < 0.0625);
	}
	st_close(ck);
}

static void refusals(const char *dir)
{
	coli_err err = { 0 };
	st_writer *w = NULL;
	int64_t s[1] = { 8 };
	float v[8] = { 0 };
	CHECK(st_writer_new(dir, 0, &w, &err) < 0 && !w);
	CHECK(st_writer_new(dir, 3, &w, &err) == 0);
	CHECK(st_writer_declare(w, "x", ST_F32, 1, s, &err) == 0);
	CHECK(st_writer_declare(w, "y", ST_F32, 1, s, &err) == 0);
	CHECK(st_writer_begin(w, &err) == -EINVAL); /* 3 shards, 2 tensors */
	st_writer_free(w);
	CHECK(st_writer_new(dir, 1, &w, &err) == 0);
	CHECK(st_writer_declare(w, "x", ST_F32, 0, s, &err) == -EINVAL);
	CHECK(st_writer_declare(w, "x", ST_DTYPE_COUNT, 1, s, &err) == -EINVAL);
	CHECK(st_writer_declare(w, "x", ST_F32, 1, s, &err) == 0);
	CHECK(st_writer_begin(w, &err) == 0);
	CHECK(st_writer_declare(w, "z", ST_F32, 1, s, &err) == -EINVAL);
	CHECK(st_writer_write_f32(w, v, 3, &err) == 0);
	CHECK(st_writer_finish(w, &err) == -EINVAL); /* x incomplete */
	CHECK(strstr(err.msg, "'x'") != NULL);
	st_writer_free(w); /* removes the temporary file */
	CHECK(count_files(dir) == 0);
}

int main(void)
{
	char dir[] = "/tmp/synth_writer.XXXXXX";
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	write_model(dir, 1, 4096);
	CHECK(count_files(dir) == 1);
	read_back(dir, 1);
	clean(dir);
	write_model(dir, 3, 777);
	CHECK(count_files(dir) == 4); /* 3 shards + index */
	read_back(dir, 3);
	clean(dir);
	write_model(dir, 5, 1 << 20);
	read_back(dir, 5);
	clean(dir);
	refusals(dir);
	clean(dir);
	rmdir(dir);
	return test_summary(__FILE__);
}
