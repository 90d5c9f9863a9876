/* ingest_safetensors_write.c - streaming safetensors writer (single file or sharded).
 *
 * File layout written (identical to what the safetensors library writes):
 *
 *   u64 LE  N                       header length, a multiple of 8
 *   N bytes JSON header             {"__metadata__":{"format":"pt"},
 *                                    "name":{"dtype","shape","data_offsets"}}
 *                                   padded with spaces to N
 *   data                            tensors back to back, in declaration
 *                                   order; offsets relative to data start
 *
 * The JSON is produced by jansson with a fixed key order, so the same
 * declarations always give the same bytes. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ingest_dtype.h"
#include "ingest_safetensors_write.h"
#include "util_array.h"
#include "util_file.h"

struct stw_tensor {
	char *name;
	int dtype;
	int ndim;
	int64_t shape[ST_MAX_DIMS];
	uint64_t nbytes;
	uint64_t begin;            /* offset in its shard's data region */
	int shard;
};

struct stw_shard {
	char *path;                /* final name */
	char *tmp;                 /* name while being written */
	uint64_t data_bytes;
	int first, end;            /* tensor range [first, end) */
};

struct st_writer {
	char *dir;
	int n_shards;
	struct stw_tensor *t;
	int n, cap;
	int *hash;                 /* open addressing: tensor index + 1, 0 = empty */
	size_t hash_cap;           /* power of two, > 2 * n */
	struct stw_shard *sh;
	int begun, finished;
	/* write position */
	FILE *f;
	int cur_shard;
	int cur;                   /* current tensor */
	uint64_t cur_done;         /* bytes of the current tensor written */
};

static size_t stw_dtype_size(int dtype)
{
	switch (dtype) {
	case ST_F64: case ST_I64: return 8;
	case ST_F32: case ST_I32: return 4;
	case ST_F16: case ST_BF16: case ST_I16: return 2;
	case ST_F8_E4M3: case ST_F8_E5M2: case ST_I8: case ST_U8: case ST_BOOL: return 1;
	default: return 0;
	}
}

static const char *stw_dtype_name(int dtype)
{
	static const char *const names[ST_DTYPE_COUNT] = {
		[ST_F32] = "F32", [ST_F16] = "F16", [ST_BF16] = "BF16",
		[ST_F8_E4M3] = "F8_E4M3", [ST_F8_E5M2] = "F8_E5M2", [ST_F64] = "F64",
		[ST_I8] = "I8", [ST_U8] = "U8", [ST_I16] = "I16", [ST_I32] = "I32",
		[ST_I64] = "I64", [ST_BOOL] = "BOOL",
	};
	return dtype >= 0 && dtype < ST_DTYPE_COUNT ? names[dtype] : NULL;
}

static char *stw_strdup(const char *s)
{
	size_t n = strlen(s) + 1;
	char *d = malloc(n);
	if (d)
		memcpy(d, s, n);
	return d;
}

static char *stw_join(const char *dir, const char *name, const char *suffix)
{
	size_t n = strlen(dir) + strlen(name) + strlen(suffix) + 2;
	char *p = malloc(n);
	if (p)
		snprintf(p, n, "%s/%s%s", dir, name, suffix);
	return p;
}

int st_writer_new(const char *dir, int n_shards, st_writer **out, coli_err *err)
{
	*out = NULL;
	if (n_shards < 1 || n_shards > 99999)
		return coli_err_set(err, -EINVAL, "safetensors: shard count %d out of range", n_shards);
	st_writer *w = calloc(1, sizeof(*w));
	if (!w || !(w->dir = stw_strdup(dir))) {
		free(w);
		return coli_err_set(err, -ENOMEM, "safetensors: out of memory");
	}
	w->n_shards = n_shards;
	*out = w;
	return 0;
}

void st_writer_free(st_writer *w)
{
	if (!w)
		return;
	if (w->f)
		fclose(w->f);
	for (int i = 0; w->sh && i < w->n_shards; i++) {
		if (!w->finished && w->sh[i].tmp)
			unlink(w->sh[i].tmp);
		free(w->sh[i].path);
		free(w->sh[i].tmp);
	}
	for (int i = 0; i < w->n; i++)
		free(w->t[i].name);
	free(w->sh);
	free(w->t);
	free(w->hash);
	free(w->dir);
	free(w);
}

static uint64_t stw_hash(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ull;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
	return h;
}

/* Slot holding `name`, or the empty slot where it would go. */
static size_t stw_hash_find(const st_writer *w, const char *name)
{
	size_t m = w->hash_cap - 1, i = (size_t)stw_hash(name) & m;
	while (w->hash[i] && strcmp(w->t[w->hash[i] - 1].name, name))
		i = (i + 1) & m;
	return i;
}

/* Duplicate names are refused at declaration; a hash keeps that linear
 * for the ~100k tensors of a full-size checkpoint. */
static int stw_hash_grow(st_writer *w)
{
	size_t cap = w->hash_cap ? 2 * w->hash_cap : 1024;
	int *old = w->hash;
	size_t old_cap = w->hash_cap;
	if (!(w->hash = calloc(cap, sizeof(int)))) {
		w->hash = old;
		return -ENOMEM;
	}
	w->hash_cap = cap;
	for (size_t i = 0; i < old_cap; i++)
		if (old[i])
			w->hash[stw_hash_find(w, w->t[old[i] - 1].name)] = old[i];
	free(old);
	return 0;
}

int st_writer_declare(st_writer *w, const char *name, int dtype, int ndim,
		      const int64_t *shape, coli_err *err)
{
	if (w->begun)
		return coli_err_set(err, -EINVAL, "safetensors: %s declared after begin", name);
	size_t es = stw_dtype_size(dtype);
	if (!es || ndim < 1 || ndim > ST_MAX_DIMS || !name[0])
		return coli_err_set(err, -EINVAL, "safetensors: bad declaration of '%s'", name);
	if ((size_t)w->n * 2 + 2 > w->hash_cap && stw_hash_grow(w))
		return coli_err_set(err, -ENOMEM, "safetensors: out of memory");
	size_t slot = stw_hash_find(w, name);
	if (w->hash[slot])
		return coli_err_set(err, -EEXIST, "safetensors: tensor '%s' declared twice", name);
	if (util_array_grow(&w->t, &w->cap, w->n + 1, 256))
		return coli_err_set(err, -ENOMEM, "safetensors: out of memory");
	struct stw_tensor *t = &w->t[w->n];
	memset(t, 0, sizeof(*t));
	uint64_t numel = 1;
	for (int d = 0; d < ndim; d++) {
		if (shape[d] < 0)
			return coli_err_set(err, -EINVAL, "safetensors: negative dim in '%s'", name);
		t->shape[d] = shape[d];
		numel *= (uint64_t)shape[d];
	}
	if (!(t->name = stw_strdup(name)))
		return coli_err_set(err, -ENOMEM, "safetensors: out of memory");
	t->dtype = dtype;
	t->ndim = ndim;
	t->nbytes = numel * es;
	w->hash[slot] = ++w->n;
	return 0;
}

uint64_t st_writer_total_bytes(const st_writer *w)
{
	uint64_t s = 0;
	for (int i = 0; i < w->n; i++)
		s += w->t[i].nbytes;
	return s;
}

int st_writer_n_tensors(const st_writer *w)
{
	return w->n;
}

/* Split tensors in order into n_shards runs of roughly total/n bytes, each
 * run non-empty. */
static void stw_plan_shards(st_writer *w)
{
	uint64_t total = st_writer_total_bytes(w), acc = 0;
	int s = 0;
	for (int i = 0; i < w->n; i++) {
		int shards_left = w->n_shards - 1 - s;
		int tensors_left = w->n - i;
		if (i > w->sh[s].first && shards_left > 0 &&
		    (acc >= total / (uint64_t)w->n_shards * (uint64_t)(s + 1) ||
		     tensors_left == shards_left)) {
			w->sh[s].end = i;
			w->sh[++s].first = i;
		}
		w->t[i].shard = s;
		w->t[i].begin = w->sh[s].data_bytes;
		w->sh[s].data_bytes += w->t[i].nbytes;
		acc += w->t[i].nbytes;
	}
	w->sh[s].end = w->n;
}

static char *stw_header_json(const st_writer *w, int s, size_t *len)
{
	json_t *root = json_object();
	json_t *meta = json_object();
	json_object_set_new(meta, "format", json_string("pt"));
	json_object_set_new(root, "__metadata__", meta);
	for (int i = w->sh[s].first; i < w->sh[s].end; i++) {
		const struct stw_tensor *t = &w->t[i];
		json_t *o = json_object(), *shape = json_array(), *offs = json_array();
		for (int d = 0; d < t->ndim; d++)
			json_array_append_new(shape, json_integer(t->shape[d]));
		json_array_append_new(offs, json_integer((json_int_t)t->begin));
		json_array_append_new(offs, json_integer((json_int_t)(t->begin + t->nbytes)));
		json_object_set_new(o, "dtype", json_string(stw_dtype_name(t->dtype)));
		json_object_set_new(o, "shape", shape);
		json_object_set_new(o, "data_offsets", offs);
		json_object_set_new(root, t->name, o);
	}
	char *s_json = json_dumps(root, JSON_COMPACT);
	json_decref(root);
	if (s_json)
		*len = strlen(s_json);
	return s_json;
}

static int stw_open_shard(st_writer *w, int s, coli_err *err)
{
	size_t jlen = 0;
	char *js = stw_header_json(w, s, &jlen);
	if (!js)
		return coli_err_set(err, -ENOMEM, "safetensors: out of memory");
	uint64_t padded = (jlen + 7) & ~(uint64_t)7;
	int rc = 0;
	w->f = fopen(w->sh[s].tmp, "wb");
	if (!w->f) {
		rc = coli_err_set(err, -errno, "%s: %s", w->sh[s].tmp, strerror(errno));
		goto out;
	}
	uint8_t le[8];
	for (int i = 0; i < 8; i++)
		le[i] = (uint8_t)(padded >> (8 * i));
	if (fwrite(le, 1, 8, w->f) != 8 || fwrite(js, 1, jlen, w->f) != jlen) {
		rc = coli_err_set(err, -EIO, "%s: write failed", w->sh[s].tmp);
		goto out;
	}
	for (uint64_t i = jlen; i < padded; i++)
		if (fputc(' ', w->f) == EOF) {
			rc = coli_err_set(err, -EIO, "%s: write failed", w->sh[s].tmp);
			goto out;
		}
	w->cur_shard = s;
out:
	free(js);
	return rc;
}

int st_writer_begin(st_writer *w, coli_err *err)
{
	if (w->begun)
		return coli_err_set(err, -EINVAL, "safetensors: begin called twice");
	if (w->n < w->n_shards)
		return coli_err_set(err, -EINVAL, "safetensors: %d shards for %d tensors",
				    w->n_shards, w->n);
	w->sh = calloc((size_t)w->n_shards, sizeof(*w->sh));
	if (!w->sh)
		return coli_err_set(err, -ENOMEM, "safetensors: out of memory");
	for (int s = 0; s < w->n_shards; s++) {
		char name[64];
		if (w->n_shards == 1)
			snprintf(name, sizeof(name), "model.safetensors");
		else
			snprintf(name, sizeof(name), "model-%05d-of-%05d.safetensors", s + 1, w->n_shards);
		w->sh[s].path = stw_join(w->dir, name, "");
		w->sh[s].tmp = stw_join(w->dir, name, ".tmp");
		if (!w->sh[s].path || !w->sh[s].tmp)
			return coli_err_set(err, -ENOMEM, "safetensors: out of memory");
	}
	stw_plan_shards(w);
	w->begun = 1;
	w->cur = 0;
	w->cur_done = 0;
	return stw_open_shard(w, 0, err);
}

static int stw_close_file(st_writer *w, coli_err *err)
{
	const char *p = w->sh[w->cur_shard].tmp;
	int rc = 0;
	if (fflush(w->f) != 0 || fsync(fileno(w->f)) != 0)
		rc = coli_err_set(err, -errno, "%s: %s", p, strerror(errno));
	if (fclose(w->f) != 0 && !rc)
		rc = coli_err_set(err, -errno, "%s: %s", p, strerror(errno));
	w->f = NULL;
	return rc;
}

/* Move past finished tensors, switching to the next shard file as needed. */
static int stw_advance(st_writer *w, coli_err *err)
{
	while (w->cur < w->n && w->cur_done == w->t[w->cur].nbytes) {
		w->cur++;
		w->cur_done = 0;
		if (w->cur < w->n && w->t[w->cur].shard != w->cur_shard) {
			int rc = stw_close_file(w, err);
			if (rc)
				return rc;
			if ((rc = stw_open_shard(w, w->t[w->cur].shard, err)))
				return rc;
		}
	}
	return 0;
}

int st_writer_write(st_writer *w, const void *data, size_t nbytes, coli_err *err)
{
	const uint8_t *p = data;
	if (!w->begun || w->finished)
		return coli_err_set(err, -EINVAL, "safetensors: write outside begin/finish");
	while (nbytes) {
		int rc = stw_advance(w, err);
		if (rc)
			return rc;
		if (w->cur >= w->n)
			return coli_err_set(err, -EINVAL, "safetensors: %zu bytes beyond the last tensor", nbytes);
		struct stw_tensor *t = &w->t[w->cur];
		uint64_t room = t->nbytes - w->cur_done;
		size_t k = nbytes < room ? nbytes : (size_t)room;
		if (fwrite(p, 1, k, w->f) != k)
			return coli_err_set(err, -EIO, "%s: write failed (%s)", w->sh[w->cur_shard].tmp, t->name);
		w->cur_done += k;
		p += k;
		nbytes -= k;
	}
	return stw_advance(w, err);
}

int st_writer_write_f32(st_writer *w, const float *src, size_t n, coli_err *err)
{
	if (!w->begun || w->cur >= w->n)
		return coli_err_set(err, -EINVAL, "safetensors: no tensor left to write");
	const struct stw_tensor *t = &w->t[w->cur];
	size_t es = stw_dtype_size(t->dtype);
	if ((uint64_t)n * es > t->nbytes - w->cur_done)
		return coli_err_set(err, -EINVAL, "safetensors: %zu values overrun tensor '%s'", n, t->name);
	if (t->dtype == ST_F32)
		return st_writer_write(w, src, n * sizeof(float), err);
	/* Convert through a small bounce buffer; little-endian host assumed,
	 * as everywhere else in the engine. */
	uint8_t buf[8192];
	size_t per = sizeof(buf) / es;
	while (n) {
		size_t k = n < per ? n : per;
		for (size_t i = 0; i < k; i++) {
			switch (t->dtype) {
			case ST_BF16: {
				uint16_t v = dtype_f32_to_bf16(src[i]);
				memcpy(buf + 2 * i, &v, 2);
				break;
			}
			case ST_F16: {
				uint16_t v = dtype_f32_to_f16(src[i]);
				memcpy(buf + 2 * i, &v, 2);
				break;
			}
			case ST_F8_E4M3:
				buf[i] = dtype_f32_to_fp8_e4m3(src[i]);
				break;
			default:
				return coli_err_set(err, -EINVAL, "safetensors: cannot convert f32 to %s for '%s'",
						    stw_dtype_name(t->dtype), t->name);
			}
		}
		int rc = st_writer_write(w, buf, k * es, err);
		if (rc)
			return rc;
		src += k;
		n -= k;
	}
	return 0;
}

const char *st_writer_current(const st_writer *w)
{
	return w->begun && w->cur < w->n ? w->t[w->cur].name : NULL;
}

static int stw_write_index(st_writer *w, coli_err *err)
{
	json_t *root = json_object(), *meta = json_object(), *map = json_object();
	json_object_set_new(meta, "total_size", json_integer((json_int_t)st_writer_total_bytes(w)));
	json_object_set_new(root, "metadata", meta);
	for (int i = 0; i < w->n; i++) {
		const char *path = w->sh[w->t[i].shard].path;
		const char *base = strrchr(path, '/');
		json_object_set_new(map, w->t[i].name, json_string(base ? base + 1 : path));
	}
	json_object_set_new(root, "weight_map", map);
	char *final = stw_join(w->dir, "model.safetensors.index.json", "");
	char *text = json_dumps(root, JSON_INDENT(2));
	int rc = 0;
	if (!final || !text)
		rc = coli_err_set(err, -ENOMEM, "safetensors: out of memory");
	else
		rc = coli_file_replace(final, text, strlen(text), err);
	json_decref(root);
	free(final);
	free(text);
	return rc;
}

int st_writer_finish(st_writer *w, coli_err *err)
{
	if (!w->begun || w->finished)
		return coli_err_set(err, -EINVAL, "safetensors: finish without begin");
	int rc = stw_advance(w, err);
	if (rc)
		return rc;
	if (w->cur < w->n)
		return coli_err_set(err, -EINVAL, "safetensors: tensor '%s' incomplete (%" PRIu64 " of %" PRIu64 " bytes)",
				    w->t[w->cur].name, w->cur_done, w->t[w->cur].nbytes);
	if ((rc = stw_close_file(w, err)))
		return rc;
	for (int s = 0; s < w->n_shards; s++)
		if (rename(w->sh[s].tmp, w->sh[s].path) != 0)
			return coli_err_set(err, -errno, "%s: %s", w->sh[s].path, strerror(errno));
	w->finished = 1;
	if (w->n_shards > 1 && (rc = stw_write_index(w, err)))
		return rc;
	/* Make the renames durable. */
	return coli_fsync_dir(w->dir, err);
}
