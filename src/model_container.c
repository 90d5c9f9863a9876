/* model_container.c - open and validate a model container (colitop-model(5)).
 *
 * The manifest is trusted for nothing it can be checked against: every
 * tensor's byte range must lie inside its file, the file sizes on disk must
 * match the manifest, nbytes must equal what the qtype and shape imply, and
 * the expert record layout must fit the record. Resident tensors are loaded
 * into one 64-byte aligned allocation per file (offsets are 64-aligned, so
 * every tensor is too). */
#include "config.h"

#include "model_container.h"
#include "model_weight_mem.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "model_hf_config.h"
#include "model_manifest.h"
#include "model_dir.h"
#include "util_crc32c.h"
#include "util_sha256.h"

typedef struct cfile {
	const char *rel;        /* points into the json */
	uint64_t size;
	const char *sha256;
	void *buf;              /* loaded bytes (resident files) */
	int needed;             /* holds a tensor we load */
} cfile;

typedef struct cpriv {
	json_t *root;
	cfile *files;
	int n_files;
	int *tfile;             /* per parsed tensor: index into files */
	uint64_t *toff;         /* per parsed tensor: offset in its file */
} cpriv;

static int find_file(const cpriv *p, const char *rel)
{
	for (int i = 0; i < p->n_files; i++)
		if (!strcmp(p->files[i].rel, rel))
			return i;
	return -1;
}

static int read_all(const char *path, void *buf, uint64_t n, int drop, coli_err *err)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return coli_err_set(err, -errno, "%s: %s", path, strerror(errno));
	uint64_t got = 0;
	int rc = 0;
	while (got < n) {
		size_t want = n - got > (1u << 30) ? (1u << 30) : (size_t)(n - got);
		ssize_t r = pread(fd, (char *)buf + got, want, (off_t)got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			rc = coli_err_set(err, r < 0 ? -errno : -EIO, "%s: read failed at %llu: %s",
					  path, (unsigned long long)got,
					  r < 0 ? strerror(errno) : "unexpected end of file");
			break;
		}
		got += (uint64_t)r;
	}
	/* the copy in RAM is what the engine uses: the page cache of the file
	 * would only hold the same bytes a second time, charged to a memory
	 * cgroup (coli_container_opts.drop_cache) */
	if (rc == 0 && drop)
		(void)posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
	close(fd);
	return rc;
}

static int parse_files(coli_container *c, cpriv *p, const char *where, coli_err *err)
{
	json_t *arr, *v;
	size_t i;
	char w[256];
	int rc = manifest_get_arr(p->root, "files", &arr, where, err);
	if (rc < 0)
		return rc;
	p->files = calloc(json_array_size(arr) + 1, sizeof *p->files);
	if (!p->files)
		return coli_err_set(err, -ENOMEM, "out of memory");
	json_array_foreach(arr, i, v) {
		cfile *f = &p->files[p->n_files];
		int64_t size;
		snprintf(w, sizeof w, "%s: files[%zu]", where, i);
		if ((rc = manifest_get_str(v, "path", &f->rel, w, err)) < 0 ||
		    (rc = manifest_get_int(v, "size", 0, INT64_MAX, &size, w, err)) < 0 ||
		    (rc = manifest_get_str(v, "sha256", &f->sha256, w, err)) < 0)
			return rc;
		if (!manifest_path_safe(f->rel))
			return coli_err_set(err, -EINVAL, "%s: unsafe path \"%s\"", w, f->rel);
		if (!manifest_is_sha256_hex(f->sha256))
			return coli_err_set(err, -EINVAL, "%s: sha256 is not 64 hex digits", w);
		if (find_file(p, f->rel) >= 0)
			return coli_err_set(err, -EINVAL, "%s: \"%s\" listed twice", w, f->rel);
		f->size = (uint64_t)size;
		char *path = manifest_join(c->dir, f->rel);
		struct stat st;
		if (!path)
			return coli_err_set(err, -ENOMEM, "out of memory");
		if (stat(path, &st) < 0)
			rc = coli_err_set(err, -errno, "%s: %s", path, strerror(errno));
		else if ((uint64_t)st.st_size != f->size)
			rc = coli_err_set(err, -EINVAL, "%s: size %lld, manifest.json says %llu", path,
					  (long long)st.st_size, (unsigned long long)f->size);
		free(path);
		if (rc < 0)
			return rc;
		p->n_files++;
	}
	return 0;
}

static int is_mtp(const char *rel)
{
	return !strncmp(rel, "mtp/", 4);
}

static int parse_tensors(coli_container *c, cpriv *p, const coli_container_opts *o,
			 const char *where, coli_err *err)
{
	json_t *arr, *v;
	size_t i;
	char w[512];
	int rc = manifest_get_arr(p->root, "tensors", &arr, where, err);
	if (rc < 0)
		return rc;
	size_t n = json_array_size(arr) + 1;
	c->tensors = calloc(n, sizeof *c->tensors);
	p->tfile = calloc(n, sizeof *p->tfile);
	p->toff = calloc(n, sizeof *p->toff);
	if (!c->tensors || !p->tfile || !p->toff)
		return coli_err_set(err, -ENOMEM, "out of memory");
	json_array_foreach(arr, i, v) {
		const char *name, *file, *qt;
		int64_t off, nbytes;
		json_t *shape;
		snprintf(w, sizeof w, "%s: tensors[%zu]", where, i);
		if ((rc = manifest_get_str(v, "name", &name, w, err)) < 0)
			return rc;
		snprintf(w, sizeof w, "%s: tensor %s", where, name);
		if ((rc = manifest_get_str(v, "file", &file, w, err)) < 0 ||
		    (rc = manifest_get_int(v, "offset", 0, INT64_MAX, &off, w, err)) < 0 ||
		    (rc = manifest_get_int(v, "nbytes", 0, INT64_MAX, &nbytes, w, err)) < 0 ||
		    (rc = manifest_get_str(v, "qtype", &qt, w, err)) < 0 ||
		    (rc = manifest_get_arr(v, "shape", &shape, w, err)) < 0)
			return rc;
		int fi = find_file(p, file);
		if (fi < 0)
			return coli_err_set(err, -EINVAL, "%s: file \"%s\" is not in \"files\"", w, file);
		int q = coli_qtype_parse(qt);
		if (q < 0)
			return coli_err_set(err, -EINVAL, "%s: unknown qtype \"%s\"", w, qt);
		if (json_array_size(shape) != 2 || !json_is_integer(json_array_get(shape, 0)) ||
		    !json_is_integer(json_array_get(shape, 1)))
			return coli_err_set(err, -EINVAL, "%s: shape must be [rows, cols]", w);
		json_int_t rows = json_integer_value(json_array_get(shape, 0));
		json_int_t cols = json_integer_value(json_array_get(shape, 1));
		if (rows <= 0 || cols <= 0 || rows > INT32_MAX || cols > INT32_MAX)
			return coli_err_set(err, -EINVAL, "%s: bad shape [%lld, %lld]", w,
					    (long long)rows, (long long)cols);
		if ((uint64_t)nbytes != coli_qtype_bytes(q, (int)rows, (int)cols))
			return coli_err_set(err, -EINVAL, "%s: nbytes %lld, %s [%lld, %lld] needs %zu",
					    w, (long long)nbytes, qt, (long long)rows, (long long)cols,
					    coli_qtype_bytes(q, (int)rows, (int)cols));
		if (off % 64)
			return coli_err_set(err, -EINVAL, "%s: offset %lld not 64-byte aligned", w,
					    (long long)off);
		if ((uint64_t)off > p->files[fi].size || (uint64_t)nbytes > p->files[fi].size - (uint64_t)off)
			return coli_err_set(err, -EINVAL, "%s: bytes [%lld, %lld) beyond %s (%llu bytes)",
					    w, (long long)off, (long long)(off + nbytes), file,
					    (unsigned long long)p->files[fi].size);
		uint32_t crc = 0;
		if (c->version >= 2) {
			const char *hex;
			if ((rc = manifest_get_str(v, "crc32c", &hex, w, err)) < 0)
				return rc;
			if (manifest_crc_parse(hex, &crc, 1) < 0)
				return coli_err_set(err, -EINVAL, "%s: crc32c is not 8 lowercase hex digits", w);
		}
		if (is_mtp(file) && !o->load_mtp)
			continue;
		coli_container_tensor *t = &c->tensors[c->n_tensors];
		t->crc32c = crc;
		if (!(t->name = strdup(name)))
			return coli_err_set(err, -ENOMEM, "out of memory");
		p->tfile[c->n_tensors] = fi;
		p->toff[c->n_tensors] = (uint64_t)off;
		c->n_tensors++;
		t->qtype = q;
		t->rows = (int)rows;
		t->cols = (int)cols;
		t->nbytes = (size_t)nbytes;
		p->files[fi].needed = 1;
		c->dense_bytes += (size_t)nbytes;
	}
	return 0;
}

/* Bytes mapped for a loaded file (at least one page, so an empty file
 * still has a buffer). */
static size_t file_buf_bytes(const cfile *f)
{
	return f->size > 0 ? (size_t)f->size : 1;
}

static int load_files(coli_container *c, cpriv *p, const coli_container_opts *o, coli_err *err)
{
	int rc = 0;
	for (int i = 0; i < p->n_files && rc == 0; i++) {
		cfile *f = &p->files[i];
		char *path = manifest_join(c->dir, f->rel);
		if (!path)
			return coli_err_set(err, -ENOMEM, "out of memory");
		if (o->verify && strncmp(f->rel, "experts/", 8) && (!is_mtp(f->rel) || o->load_mtp)) {
			char hex[65];
			rc = coli_sha256_file(path, hex, err);
			if (rc == 0 && strcmp(hex, f->sha256))
				rc = coli_err_set(err, -EINVAL, "%s: sha256 %s, manifest.json says %s",
						  path, hex, f->sha256);
		}
		if (rc == 0 && f->needed && !o->skip_load) {
			/* huge pages: every decode step streams these */
			f->buf = coli_weight_mem_alloc(file_buf_bytes(f));
			if (!f->buf)
				rc = coli_err_set(err, -ENOMEM, "%s: cannot allocate %zu bytes", path, file_buf_bytes(f));
			else
				rc = read_all(path, f->buf, f->size, o->drop_cache, err);
			if (rc == 0 && o->drop_cache)
				c->dense_cache_dropped += (size_t)f->size;
		}
		free(path);
	}
	for (int t = 0; t < c->n_tensors && rc == 0; t++) {
		const cfile *f = &p->files[p->tfile[t]];
		coli_container_tensor *ct = &c->tensors[t];
		ct->data = f->buf ? (const char *)f->buf + p->toff[t] : NULL;
		/* one pass over the scales of what was just read: damaged bytes
		 * stop here instead of turning every logit into NaN */
		int row = ct->data ? coli_quant_check_rows(ct->qtype, ct->data, ct->rows, ct->cols) : -1;
		if (row >= 0)
			rc = coli_err_set(err, -EBADMSG, "%s/%s: tensor %s, %s %d: %s", c->dir, f->rel,
					  ct->name, ct->cols == 1 ? "element" : "row", row,
					  ct->qtype == COLI_Q_F32 ? "a value is NaN or Inf (damaged file; coli "
					  "doctor --verify compares the sha256)" : "a scale is NaN, Inf or "
					  "negative (damaged file; coli doctor --verify compares the sha256)");
		/* then the checksum, which also sees damage that leaves every
		 * scale plausible (a flipped exponent or quant bit) */
		uint32_t got;
		if (rc == 0 && ct->data && c->version >= 2 && !o->no_checksums &&
		    (got = crc32c_update(0, ct->data, ct->nbytes)) != ct->crc32c)
			rc = coli_err_set(err, -EBADMSG, "%s/%s: tensor %s at offset %llu: CRC-32C %08x, "
					  "manifest.json says %08x (damaged file; coli doctor --verify "
					  "compares the sha256)", c->dir, f->rel, ct->name,
					  (unsigned long long)p->toff[t], (unsigned)got, (unsigned)ct->crc32c);
	}
	return rc;
}

int coli_container_check_expert(const coli_container *c, const void *record)
{
	for (int k = 0; k < 3; k++)
		if (coli_quant_check_rows(c->expert_qtype, (const char *)record + c->expert_part_offset[k],
					  c->expert_part_rows[k], c->expert_part_cols[k]) >= 0)
			return k;
	return -1;
}

static int parse_experts(coli_container *c, cpriv *p, const char *where, coli_err *err)
{
	const coli_config *g = &c->config;
	const int L = g->num_hidden_layers;
	json_t *ex, *parts, *shards, *v;
	const char *qt;
	int64_t rs;
	char w[512];
	size_t i;
	int rc;
	snprintf(w, sizeof w, "%s: experts", where);
	if ((rc = manifest_get_obj(p->root, "experts", &ex, where, err)) < 0 ||
	    (rc = manifest_get_str(ex, "qtype", &qt, w, err)) < 0 ||
	    (rc = manifest_get_int(ex, "record_size", 0, INT64_MAX, &rs, w, err)) < 0 ||
	    (rc = manifest_get_arr(ex, "parts", &parts, w, err)) < 0 ||
	    (rc = manifest_get_arr(ex, "shards", &shards, w, err)) < 0)
		return rc;
	if ((c->expert_qtype = coli_qtype_parse(qt)) < 0)
		return coli_err_set(err, -EINVAL, "%s: unknown qtype \"%s\"", w, qt);
	if (rs <= 0 || rs % 4096)
		return coli_err_set(err, -EINVAL, "%s: record_size %lld is not a positive multiple of 4096",
				    w, (long long)rs);
	c->expert_record_size = (size_t)rs;
	static const char *const names[3] = { "gate", "up", "down" };
	const int want_rows[3] = { g->moe_intermediate_size, g->moe_intermediate_size, g->hidden_size };
	const int want_cols[3] = { g->hidden_size, g->hidden_size, g->moe_intermediate_size };
	if (json_array_size(parts) != 3)
		return coli_err_set(err, -EINVAL, "%s: parts must list gate, up, down", w);
	uint64_t end = 0;
	for (int k = 0; k < 3; k++) {
		json_t *pt = json_array_get(parts, (size_t)k);
		const char *nm;
		int64_t off, rows, cols;
		char wp[600];
		snprintf(wp, sizeof wp, "%s.parts[%d]", w, k);
		if ((rc = manifest_get_str(pt, "name", &nm, wp, err)) < 0 ||
		    (rc = manifest_get_int(pt, "offset", 0, rs, &off, wp, err)) < 0 ||
		    (rc = manifest_get_int(pt, "rows", 1, INT32_MAX, &rows, wp, err)) < 0 ||
		    (rc = manifest_get_int(pt, "cols", 1, INT32_MAX, &cols, wp, err)) < 0)
			return rc;
		if (strcmp(nm, names[k]) || rows != want_rows[k] || cols != want_cols[k] || off % 64 ||
		    (uint64_t)off < end)
			return coli_err_set(err, -EINVAL,
					    "%s: expected %s [%d, %d] at a 64-aligned offset after the "
					    "previous part, found %s [%lld, %lld] at %lld", wp, names[k],
					    want_rows[k], want_cols[k], nm, (long long)rows,
					    (long long)cols, (long long)off);
		end = (uint64_t)off + coli_qtype_bytes(c->expert_qtype, (int)rows, (int)cols);
		if (end > (uint64_t)rs)
			return coli_err_set(err, -EINVAL, "%s: part ends at %llu, beyond record_size %lld",
					    wp, (unsigned long long)end, (long long)rs);
		c->expert_part_offset[k] = (size_t)off;
		c->expert_part_rows[k] = (int)rows;
		c->expert_part_cols[k] = (int)cols;
	}
	c->expert_shard_paths = calloc((size_t)L + 1, sizeof *c->expert_shard_paths);
	c->expert_shard_sizes = calloc((size_t)L + 1, sizeof *c->expert_shard_sizes);
	c->expert_shard_sha256 = calloc((size_t)L + 1, sizeof *c->expert_shard_sha256);
	if (c->version >= 2)
		c->expert_crc = calloc((size_t)L + 1, sizeof *c->expert_crc);
	if (!c->expert_shard_paths || !c->expert_shard_sizes || !c->expert_shard_sha256 ||
	    (c->version >= 2 && !c->expert_crc))
		return coli_err_set(err, -ENOMEM, "out of memory");
	json_array_foreach(shards, i, v) {
		int64_t layer, count, size;
		const char *file, *sha;
		char ws[600];
		snprintf(ws, sizeof ws, "%s.shards[%zu]", w, i);
		if ((rc = manifest_get_int(v, "layer", 0, L - 1, &layer, ws, err)) < 0 ||
		    (rc = manifest_get_str(v, "file", &file, ws, err)) < 0 ||
		    (rc = manifest_get_int(v, "count", 0, INT32_MAX, &count, ws, err)) < 0 ||
		    (rc = manifest_get_int(v, "size", 0, INT64_MAX, &size, ws, err)) < 0 ||
		    (rc = manifest_get_str(v, "sha256", &sha, ws, err)) < 0)
			return rc;
		int fi = find_file(p, file);
		if (!coli_config_layer_is_moe(g, (int)layer) || c->expert_shard_paths[layer])
			return coli_err_set(err, -EINVAL, "%s: layer %lld is not a MoE layer or has two shards",
					    ws, (long long)layer);
		if (count != g->n_routed_experts || (uint64_t)size != (uint64_t)count * (uint64_t)rs)
			return coli_err_set(err, -EINVAL, "%s: %lld experts in %lld bytes, config needs %d x %lld",
					    ws, (long long)count, (long long)size, g->n_routed_experts,
					    (long long)rs);
		if (fi < 0 || p->files[fi].size != (uint64_t)size || strcmp(p->files[fi].sha256, sha))
			return coli_err_set(err, -EINVAL, "%s: %s does not match its entry in \"files\"",
					    ws, file);
		if (c->version >= 2) {
			/* one CRC-32C per record, record 0 first */
			const char *hex;
			if ((rc = manifest_get_str(v, "record_crc32c", &hex, ws, err)) < 0)
				return rc;
			if (!(c->expert_crc[layer] = malloc(((size_t)count + 1) * sizeof(uint32_t))))
				return coli_err_set(err, -ENOMEM, "out of memory");
			if (manifest_crc_parse(hex, c->expert_crc[layer], (size_t)count) < 0)
				return coli_err_set(err, -EINVAL, "%s: record_crc32c must be %lld x 8 lowercase "
						    "hex digits (one CRC-32C per record)", ws, (long long)count);
		}
		if (!(c->expert_shard_paths[layer] = manifest_join(c->dir, file)) ||
		    !(c->expert_shard_sha256[layer] = strdup(sha)))
			return coli_err_set(err, -ENOMEM, "out of memory");
		c->expert_shard_sizes[layer] = (uint64_t)size;
	}
	for (int l = 0; l < L; l++)
		if (coli_config_layer_is_moe(g, l) && !c->expert_shard_paths[l])
			return coli_err_set(err, -EINVAL, "%s: no shard for MoE layer %d", w, l);
	return 0;
}

static void copy_name(char *dst, size_t n, const json_t *obj, const char *key)
{
	const char *s = json_string_value(json_object_get(obj, key));
	snprintf(dst, n, "%s", s ? s : "");
}

static int cmp_tensor(const void *a, const void *b)
{
	return strcmp(((const coli_container_tensor *)a)->name,
		      ((const coli_container_tensor *)b)->name);
}

int coli_container_open(const char *dir, const coli_container_opts *opts,
			coli_container **out, coli_err *err)
{
	coli_container_opts dflt = { 0 };
	const coli_container_opts *o = opts ? opts : &dflt;
	char *bytes = NULL, *mpath = NULL;
	size_t len = 0;
	int rc;
	json_error_t je;
	json_t *cfg, *quant;
	const char *fmt;
	int64_t version;
	coli_container *c = calloc(1, sizeof *c);
	cpriv *p = calloc(1, sizeof *p);
	*out = NULL;
	if (!c || !p || !(c->dir = strdup(dir)) || !(mpath = manifest_join(dir, "manifest.json"))) {
		free(p);
		coli_container_free(c);
		return coli_err_set(err, -ENOMEM, "out of memory");
	}
	c->priv = p;
	c->check_experts = 1;
	if ((rc = manifest_read_file(mpath, &bytes, &len, err)) < 0) {
		if (rc == -ENOENT)
			rc = coli_model_dir_explain(dir, err);
		goto fail;
	}
	coli_sha256_hex(bytes, len, c->fingerprint);
	if (!(p->root = json_loadb(bytes, len, JSON_REJECT_DUPLICATES, &je))) {
		rc = coli_err_set(err, -EINVAL, "%s: line %d column %d: %s", mpath, je.line, je.column,
				  je.text);
		goto fail;
	}
	if (!json_is_object(p->root)) {
		rc = coli_err_set(err, -EINVAL, "%s: not a JSON object", mpath);
		goto fail;
	}
	if ((rc = manifest_get_str(p->root, "format", &fmt, mpath, err)) < 0)
		goto fail;
	if (strcmp(fmt, MANIFEST_FORMAT)) {
		rc = coli_err_set(err, -EINVAL, "%s: format \"%s\" is not \"%s\"", mpath, fmt,
				  MANIFEST_FORMAT);
		goto fail;
	}
	if ((rc = manifest_get_int(p->root, "version", INT64_MIN, INT64_MAX, &version, mpath, err)) < 0)
		goto fail;
	if (version < MANIFEST_VERSION_MIN || version > MANIFEST_VERSION) {
		rc = coli_err_set(err, -EPROTONOSUPPORT,
				  "%s: container version %lld is not supported (this build reads %d to %d)",
				  mpath, (long long)version, MANIFEST_VERSION_MIN, MANIFEST_VERSION);
		goto fail;
	}
	c->version = (int)version;
	if ((rc = manifest_get_obj(p->root, "config", &cfg, mpath, err)) < 0)
		goto fail;
	if ((rc = hf_config_from_json(cfg, &c->config, err)) < 0 ||
	    (rc = hf_config_validate(&c->config, err)) < 0) {
		coli_err_wrap(err, "%s: config", mpath);
		goto fail;
	}
	/* a DSA container converted before the indexer ran stored neither
	 * its schedule nor its rope pairing (and kept its weights f32) */
	if (c->config.index_topk > 0 && !json_object_get(cfg, "indexer_types")) {
		rc = coli_err_set(err, -EPROTONOSUPPORT, "%s: converted before the DSA indexer was supported "
				  "(no indexer_types in its config): convert the checkpoint again", mpath);
		goto fail;
	}
	if ((rc = manifest_get_obj(p->root, "quant", &quant, mpath, err)) < 0)
		goto fail;
	copy_name(c->quant_dense, sizeof c->quant_dense, quant, "dense");
	copy_name(c->quant_experts, sizeof c->quant_experts, quant, "experts");
	copy_name(c->quant_mtp, sizeof c->quant_mtp, quant, "mtp");
	copy_name(c->quant_embed, sizeof c->quant_embed, quant, "embed");
	copy_name(c->quant_lm_head, sizeof c->quant_lm_head, quant, "lm_head");
	if ((rc = parse_files(c, p, mpath, err)) < 0 || (rc = parse_tensors(c, p, o, mpath, err)) < 0 ||
	    (rc = parse_experts(c, p, mpath, err)) < 0 || (rc = load_files(c, p, o, err)) < 0)
		goto fail;
	qsort(c->tensors, (size_t)c->n_tensors, sizeof *c->tensors, cmp_tensor);
	for (int i = 1; i < c->n_tensors; i++)
		if (!strcmp(c->tensors[i - 1].name, c->tensors[i].name)) {
			rc = coli_err_set(err, -EINVAL, "%s: tensor %s listed twice", mpath,
					  c->tensors[i].name);
			goto fail;
		}
	free(p->tfile);
	free(p->toff);
	p->tfile = NULL;
	p->toff = NULL;
	free(bytes);
	free(mpath);
	*out = c;
	return 0;
fail:
	free(bytes);
	free(mpath);
	coli_container_free(c);
	return rc;
}

void coli_container_free(coli_container *c)
{
	if (!c)
		return;
	cpriv *p = c->priv;
	for (int i = 0; i < c->n_tensors; i++)
		free(c->tensors[i].name);
	free(c->tensors);
	if (p) {
		for (int i = 0; i < p->n_files; i++)
			coli_weight_mem_free(p->files[i].buf, file_buf_bytes(&p->files[i]));
		free(p->files);
		free(p->tfile);
		free(p->toff);
		json_decref(p->root);
		free(p);
	}
	for (int l = 0; c->expert_shard_paths && l < c->config.num_hidden_layers; l++) {
		free(c->expert_shard_paths[l]);
		free(c->expert_shard_sha256[l]);
		if (c->expert_crc)
			free(c->expert_crc[l]);
	}
	free(c->expert_crc);
	free(c->expert_shard_paths);
	free(c->expert_shard_sizes);
	free(c->expert_shard_sha256);
	free(c->dir);
	free(c);
}

const coli_container_tensor *coli_container_find(const coli_container *c, const char *name)
{
	coli_container_tensor key = { .name = (char *)name };
	if (!c || !c->n_tensors)
		return NULL;
	return bsearch(&key, c->tensors, (size_t)c->n_tensors, sizeof *c->tensors, cmp_tensor);
}

int coli_container_qmat(const coli_container *c, const char *name, int rows, int cols,
			coli_qmat *out, coli_err *err)
{
	const coli_container_tensor *t = coli_container_find(c, name);
	if (!t)
		return coli_err_set(err, -ENOENT, "%s/manifest.json: tensor %s is missing", c->dir, name);
	if (t->rows != rows || t->cols != cols)
		return coli_err_set(err, -ENOENT, "%s/manifest.json: tensor %s is [%d, %d], the config implies [%d, %d]",
				    c->dir, name, t->rows, t->cols, rows, cols);
	out->qtype = t->qtype;
	out->rows = t->rows;
	out->cols = t->cols;
	out->data = t->data;
	return 0;
}

coli_qmat coli_container_expert_part(const coli_container *c, const void *record, int part)
{
	coli_qmat m = { c->expert_qtype, c->expert_part_rows[part], c->expert_part_cols[part],
			(const char *)record + c->expert_part_offset[part] };
	return m;
}
