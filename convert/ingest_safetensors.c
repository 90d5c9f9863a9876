/* ingest_safetensors.c - header parsing, tensor lookup and reads (see
 * ingest_safetensors.h). Opening directories and sharded indexes lives in
 * ingest_safetensors_dir.c.
 *
 * The header is untrusted input: every length and offset is checked against
 * the file size before use, products are overflow-checked, and the parser
 * is the libFuzzer entry point (tests/fuzz/fuzz_ingest.c). */
#include "config.h"

#include "ingest_safetensors.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ingest_dtype.h"

static const struct {
	const char *name;
	size_t size;
} dtype_info[ST_DTYPE_COUNT] = {
	[ST_F32] = { "F32", 4 },     [ST_F16] = { "F16", 2 },
	[ST_BF16] = { "BF16", 2 },   [ST_F8_E4M3] = { "F8_E4M3", 1 },
	[ST_F8_E5M2] = { "F8_E5M2", 1 }, [ST_F64] = { "F64", 8 },
	[ST_I8] = { "I8", 1 },       [ST_U8] = { "U8", 1 },
	[ST_I16] = { "I16", 2 },     [ST_I32] = { "I32", 4 },
	[ST_I64] = { "I64", 8 },     [ST_BOOL] = { "BOOL", 1 },
};

const char *st_dtype_name(int dtype)
{
	return dtype >= 0 && dtype < ST_DTYPE_COUNT ? dtype_info[dtype].name : "?";
}

size_t st_dtype_size(int dtype)
{
	return dtype >= 0 && dtype < ST_DTYPE_COUNT ? dtype_info[dtype].size : 0;
}

/* enum st_dtype for a safetensors dtype string, or -1. */
static int st_dtype_from_name(const char *name)
{
	for (int i = 0; i < ST_DTYPE_COUNT; i++)
		if (!strcmp(dtype_info[i].name, name))
			return i;
	return -1;
}

int64_t st_numel(const st_tensor *t)
{
	int64_t n = 1;
	for (int i = 0; i < t->ndim; i++)
		n *= t->shape[i];  /* cannot overflow: checked at parse time */
	return n;
}

/* A JSON integer that is >= 0 (jansson integers are long long). */
static int get_u64(const json_t *v, uint64_t *out)
{
	if (!json_is_integer(v) || json_integer_value(v) < 0)
		return -1;
	*out = (uint64_t)json_integer_value(v);
	return 0;
}

/* Parse one header entry into *t (name not set). data_start is 8 + N. */
static int parse_entry(const char *label, const char *name, const json_t *obj,
		       uint64_t data_start, uint64_t file_size, st_tensor *t, coli_err *err)
{
	if (!json_is_object(obj))
		return coli_err_set(err, -EINVAL, "%s: tensor %s: entry is not a JSON object", label, name);
	const json_t *jd = json_object_get(obj, "dtype");
	const json_t *js = json_object_get(obj, "shape");
	const json_t *jo = json_object_get(obj, "data_offsets");
	if (!json_is_string(jd))
		return coli_err_set(err, -EINVAL, "%s: tensor %s: missing or non-string dtype", label, name);
	t->dtype = st_dtype_from_name(json_string_value(jd));
	if (t->dtype < 0)
		return coli_err_set(err, -EINVAL, "%s: tensor %s: unknown dtype '%s'", label, name,
				    json_string_value(jd));
	if (!json_is_array(js))
		return coli_err_set(err, -EINVAL, "%s: tensor %s: missing or non-array shape", label, name);
	size_t nd = json_array_size(js);
	if (nd > ST_MAX_DIMS)
		return coli_err_set(err, -EINVAL, "%s: tensor %s: %zu dimensions (at most %d supported)",
				    label, name, nd, ST_MAX_DIMS);
	t->ndim = (int)nd;
	uint64_t numel = 1;
	for (size_t i = 0; i < nd; i++) {
		uint64_t d;
		if (get_u64(json_array_get(js, i), &d) || d > INT64_MAX)
			return coli_err_set(err, -EINVAL, "%s: tensor %s: shape[%zu] is not a non-negative integer",
					    label, name, i);
		t->shape[i] = (int64_t)d;
		if (__builtin_mul_overflow(numel, d, &numel))
			return coli_err_set(err, -EOVERFLOW, "%s: tensor %s: element count overflows", label, name);
	}
	for (size_t i = nd; i < ST_MAX_DIMS; i++)
		t->shape[i] = 0;
	uint64_t nbytes;
	if (__builtin_mul_overflow(numel, (uint64_t)st_dtype_size(t->dtype), &nbytes) || nbytes > INT64_MAX)
		return coli_err_set(err, -EOVERFLOW, "%s: tensor %s: byte size overflows", label, name);
	uint64_t b, e;
	if (!json_is_array(jo) || json_array_size(jo) != 2 ||
	    get_u64(json_array_get(jo, 0), &b) || get_u64(json_array_get(jo, 1), &e))
		return coli_err_set(err, -EINVAL,
				    "%s: tensor %s: data_offsets must be [begin, end] non-negative integers",
				    label, name);
	if (b > e)
		return coli_err_set(err, -EINVAL, "%s: tensor %s: data_offsets begin %llu > end %llu", label,
				    name, (unsigned long long)b, (unsigned long long)e);
	if (e > file_size - data_start)
		return coli_err_set(err, -EINVAL,
				    "%s: tensor %s: data_offsets end %llu beyond the file (data region is %llu bytes)",
				    label, name, (unsigned long long)e,
				    (unsigned long long)(file_size - data_start));
	if (e - b != nbytes)
		return coli_err_set(err, -EINVAL,
				    "%s: tensor %s: %llu bytes in data_offsets but shape x %s needs %llu", label,
				    name, (unsigned long long)(e - b), st_dtype_name(t->dtype),
				    (unsigned long long)nbytes);
	t->offset = data_start + b;
	t->nbytes = nbytes;
	return 0;
}

static int cmp_by_offset(const void *a, const void *b)
{
	const st_tensor *x = *(const st_tensor *const *)a, *y = *(const st_tensor *const *)b;
	if (x->offset != y->offset)
		return x->offset < y->offset ? -1 : 1;
	return x->nbytes < y->nbytes ? -1 : x->nbytes > y->nbytes;
}

/* Refuse two tensors of one file sharing bytes. Empty tensors own no bytes. */
static int check_overlap(const char *label, st_tensor *ts, int n, coli_err *err)
{
	int rc = 0;
	if (n < 2)
		return 0;
	st_tensor **order = malloc((size_t)n * sizeof *order);
	if (!order)
		return coli_err_set(err, -ENOMEM, "%s: out of memory", label);
	for (int i = 0; i < n; i++)
		order[i] = &ts[i];
	qsort(order, (size_t)n, sizeof *order, cmp_by_offset);
	const st_tensor *last = NULL;  /* the tensor reaching furthest so far */
	for (int i = 0; i < n; i++) {
		const st_tensor *t = order[i];
		if (!t->nbytes)
			continue;
		if (last && last->offset + last->nbytes > t->offset) {
			rc = coli_err_set(err, -EINVAL, "%s: tensor %s overlaps tensor %s", label, t->name,
					  last->name);
			break;
		}
		if (!last || t->offset + t->nbytes > last->offset + last->nbytes)
			last = t;
	}
	free(order);
	return rc;
}

int st_parse_header(const uint8_t *buf, size_t len, uint64_t file_size, int file_index,
		    const char *file_label, st_tensor **tensors, int *n, coli_err *err)
{
	const char *label = file_label ? file_label : "safetensors";
	if (len < 8 || file_size < 8)
		return coli_err_set(err, -EINVAL, "%s: truncated file (no header length)", label);
	uint64_t hlen = 0;
	for (int i = 7; i >= 0; i--)
		hlen = hlen << 8 | buf[i];
	if (hlen > ST_MAX_HEADER_BYTES)
		return coli_err_set(err, -EINVAL, "%s: header length %llu exceeds the %llu-byte limit",
				    label, (unsigned long long)hlen, ST_MAX_HEADER_BYTES);
	if (hlen > file_size - 8)
		return coli_err_set(err, -EINVAL, "%s: header length %llu exceeds the file size %llu",
				    label, (unsigned long long)hlen, (unsigned long long)file_size);
	if (hlen > len - 8)
		return coli_err_set(err, -EINVAL, "%s: truncated header (%zu of %llu bytes)", label,
				    len - 8, (unsigned long long)hlen);
	json_error_t jerr;
	json_t *root = json_loadb((const char *)buf + 8, (size_t)hlen,
				  JSON_REJECT_DUPLICATES | JSON_DECODE_ANY, &jerr);
	if (!root) {
		if (json_error_code(&jerr) == json_error_duplicate_key)
			return coli_err_set(err, -EINVAL, "%s: duplicate tensor name in header (%s)", label,
					    jerr.text);
		return coli_err_set(err, -EINVAL, "%s: header is not valid JSON: %s at byte %d", label,
				    jerr.text, jerr.position);
	}
	int rc = 0;
	int n0 = *n, added = 0;
	if (!json_is_object(root)) {
		rc = coli_err_set(err, -EINVAL, "%s: header is not a JSON object", label);
		goto out;
	}
	size_t want = json_object_size(root);
	if (want > (size_t)(INT32_MAX - n0)) {
		rc = coli_err_set(err, -E2BIG, "%s: too many tensors", label);
		goto out;
	}
	st_tensor *grown = realloc(*tensors, ((size_t)n0 + want + 1) * sizeof *grown);
	if (!grown) {
		rc = coli_err_set(err, -ENOMEM, "%s: out of memory for %zu tensors", label, want);
		goto out;
	}
	*tensors = grown;
	const char *key;
	json_t *val;
	json_object_foreach(root, key, val) {
		if (!strcmp(key, "__metadata__"))
			continue;
		st_tensor *t = &grown[n0 + added];
		memset(t, 0, sizeof *t);
		if (!key[0]) {
			rc = coli_err_set(err, -EINVAL, "%s: tensor with an empty name", label);
			goto out;
		}
		rc = parse_entry(label, key, val, 8 + hlen, file_size, t, err);
		if (rc)
			goto out;
		t->name = strdup(key);
		if (!t->name) {
			rc = coli_err_set(err, -ENOMEM, "%s: out of memory", label);
			goto out;
		}
		t->file_index = file_index;
		added++;
	}
	rc = check_overlap(label, grown + n0, added, err);
out:
	if (rc) {
		for (int i = 0; i < added; i++)
			free((*tensors)[n0 + i].name);
		added = 0;
	}
	*n = n0 + added;
	json_decref(root);
	return rc;
}

static int cmp_name_key(const void *key, const void *elem)
{
	return strcmp(key, ((const st_tensor *)elem)->name);
}

const st_tensor *st_find(const st_checkpoint *ck, const char *name)
{
	if (!ck || !ck->n_tensors)
		return NULL;
	return bsearch(name, ck->tensors, (size_t)ck->n_tensors, sizeof *ck->tensors, cmp_name_key);
}

const st_tensor *st_find_fp8_scale(const st_checkpoint *ck, const st_tensor *t)
{
	static const char *const suffix[2] = { "_scale_inv", "_scale" };
	char name[1024];
	if (t->dtype != ST_F8_E4M3)
		return NULL;
	for (int k = 0; k < 2; k++) {
		const st_tensor *s = NULL;
		if ((size_t)snprintf(name, sizeof name, "%s%s", t->name, suffix[k]) < sizeof name &&
		    (s = st_find(ck, name)))
			return s;
	}
	return NULL;
}

int st_is_fp8_scale(const st_checkpoint *ck, const st_tensor *t)
{
	static const char *const suffix[2] = { "_scale_inv", "_scale" };
	char base[1024];
	size_t n = strlen(t->name);
	for (int k = 0; k < 2; k++) {
		size_t m = strlen(suffix[k]);
		if (n <= m || n - m >= sizeof base || strcmp(t->name + n - m, suffix[k]))
			continue;
		memcpy(base, t->name, n - m);
		base[n - m] = '\0';
		const st_tensor *w = st_find(ck, base);
		if (w && st_find_fp8_scale(ck, w) == t)
			return 1;
	}
	return 0;
}

int st_read_raw(const st_checkpoint *ck, const st_tensor *t, void *buf, coli_err *err)
{
	if (t->file_index < 0 || t->file_index >= ck->n_files)
		return coli_err_set(err, -EINVAL, "tensor %s: bad file index %d", t->name, t->file_index);
	const char *path = ck->files[t->file_index];
	int fd = ck->fds[t->file_index];
	uint8_t *p = buf;
	uint64_t done = 0;
	while (done < t->nbytes) {
		uint64_t want = t->nbytes - done;
		if (want > (1u << 30))
			want = 1u << 30;  /* keep single reads well below SSIZE_MAX limits */
		ssize_t r = pread(fd, p + done, (size_t)want, (off_t)(t->offset + done));
		if (r < 0) {
			if (errno == EINTR)
				continue;
			return coli_err_set(err, -errno, "%s: tensor %s: read: %s", path, t->name,
					    strerror(errno));
		}
		if (r == 0)
			return coli_err_set(err, -EIO, "%s: tensor %s: unexpected end of file at byte %llu",
					    path, t->name, (unsigned long long)(t->offset + done));
		done += (uint64_t)r;
	}
	return 0;
}

/* Read a float-convertible tensor into out[numel]. The raw bytes are placed
 * at the tail of `out` and widened in place (see dtype_to_f32), so even a
 * multi-GB embedding needs no second buffer. */
static int read_widen(const st_checkpoint *ck, const st_tensor *t, float *out, coli_err *err)
{
	size_t n = (size_t)st_numel(t);
	size_t es = st_dtype_size(t->dtype);
	int rc;
	if (es <= sizeof(float)) {
		unsigned char *tail = (unsigned char *)out + n * sizeof(float) - n * es;
		rc = st_read_raw(ck, t, tail, err);
		if (!rc)
			dtype_to_f32(t->dtype, tail, out, n);
		return rc;
	}
	void *tmp = malloc(t->nbytes ? t->nbytes : 1);
	if (!tmp)
		return coli_err_set(err, -ENOMEM, "%s: tensor %s: out of memory", ck->files[t->file_index],
				    t->name);
	rc = st_read_raw(ck, t, tmp, err);
	if (!rc)
		dtype_to_f32(t->dtype, tmp, out, n);
	free(tmp);
	return rc;
}

/* The scales of an FP8 weight, multiplied in (DeepSeek's scale_inv and
 * compressed-tensors' weight_scale are both the factor back to the real
 * value). The scale's shape says the strategy: 128x128 blocks
 * [ceil(rows/128), ceil(cols/128)], one per output channel [rows, 1] or
 * [rows], or one for the tensor (a single element); anything else is
 * refused, never guessed. */
static int apply_fp8_scale(const st_checkpoint *ck, const st_tensor *t, const st_tensor *s,
			   float *out, coli_err *err)
{
	const char *path = ck->files[t->file_index];
	if (t->ndim != 2)
		return coli_err_set(err, -EINVAL, "%s: tensor %s: FP8 scales need a 2-D weight, not %d-D",
				    path, t->name, t->ndim);
	const int64_t rows = t->shape[0], cols = t->shape[1];
	int64_t br = (rows + ST_FP8_BLOCK - 1) / ST_FP8_BLOCK;
	int64_t bc = (cols + ST_FP8_BLOCK - 1) / ST_FP8_BLOCK;
	if (s->dtype != ST_F32 && s->dtype != ST_BF16 && s->dtype != ST_F16)
		return coli_err_set(err, -EINVAL, "%s: tensor %s: scale dtype %s (F32, BF16 or F16 expected)",
				    ck->files[s->file_index], s->name, st_dtype_name(s->dtype));
	int64_t ns = st_numel(s);
	int block = s->ndim == 2 && s->shape[0] == br && s->shape[1] == bc;
	int channel = !block && ns == rows && (s->ndim == 1 || (s->ndim == 2 && s->shape[1] == 1));
	int whole = !block && !channel && ns == 1;
	if (!block && !channel && !whole)
		return coli_err_set(err, -EINVAL, "%s: tensor %s: shape %lld elements in %d dims fits neither "
				    "128x128 blocks [%lld, %lld], one per channel [%lld, 1] nor one per "
				    "tensor, for weight %s [%lld, %lld]", ck->files[s->file_index], s->name,
				    (long long)ns, s->ndim, (long long)br, (long long)bc, (long long)rows,
				    t->name, (long long)rows, (long long)cols);
	float *scales = malloc((size_t)(ns + 1) * sizeof *scales);
	if (!scales)
		return coli_err_set(err, -ENOMEM, "%s: tensor %s: out of memory", path, s->name);
	int rc = read_widen(ck, s, scales, err);
	if (!rc && block) {
		dtype_apply_block_scales(out, rows, cols, scales, ST_FP8_BLOCK);
	} else if (!rc) {
		for (int64_t r = 0; r < rows; r++) {
			const float f = scales[channel ? r : 0];
			for (int64_t c = 0; c < cols; c++)
				out[r * cols + c] *= f;
		}
	}
	free(scales);
	return rc;
}

int st_read_f32(const st_checkpoint *ck, const st_tensor *t, float *out, coli_err *err)
{
	switch (t->dtype) {
	case ST_F32: case ST_F16: case ST_BF16: case ST_F8_E4M3: case ST_F8_E5M2: case ST_F64:
		break;
	default:
		return coli_err_set(err, -ENOTSUP, "%s: tensor %s: dtype %s has no float conversion",
				    ck->files[t->file_index], t->name, st_dtype_name(t->dtype));
	}
	int rc = read_widen(ck, t, out, err);
	if (rc)
		return rc;
	const st_tensor *s = st_find_fp8_scale(ck, t);
	return s ? apply_fp8_scale(ck, t, s, out, err) : 0;
}
