/* ingest_safetensors_dir.c - opening checkpoints: one file, a directory with
 * model.safetensors, or a sharded directory with
 * model.safetensors.index.json (see ingest_safetensors.h). */
#include "config.h"

#include "ingest_safetensors.h"
#include "util_array.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define ST_INDEX_NAME "model.safetensors.index.json"
#define ST_SINGLE_NAME "model.safetensors"

void st_close(st_checkpoint *ck)
{
	if (!ck)
		return;
	for (int i = 0; i < ck->n_files; i++) {
		if (ck->fds && ck->fds[i] >= 0)
			close(ck->fds[i]);
		if (ck->files)
			free(ck->files[i]);
	}
	for (int i = 0; i < ck->n_tensors; i++)
		free(ck->tensors[i].name);
	free(ck->tensors);
	free(ck->files);
	free(ck->fds);
	free(ck->file_sizes);
	free(ck->dir);
	free(ck);
}

static char *path_join(const char *dir, const char *name)
{
	size_t a = strlen(dir), b = strlen(name);
	char *p = malloc(a + b + 2);
	if (p) {
		memcpy(p, dir, a);
		p[a] = '/';
		memcpy(p + a + 1, name, b + 1);
	}
	return p;
}

static int pread_full(int fd, void *buf, size_t len, uint64_t off, size_t *got)
{
	size_t done = 0;
	while (done < len) {
		ssize_t r = pread(fd, (char *)buf + done, len - done, (off_t)(off + done));
		if (r < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (r == 0)
			break;
		done += (size_t)r;
	}
	*got = done;
	return 0;
}

/* Open `path`, parse its header and append its tensors as file n_files.
 * Takes ownership of `path`. */
static int add_file(st_checkpoint *ck, char *path, coli_err *err)
{
	int idx = ck->n_files, rc = 0;
	uint8_t *hdr = NULL;
	/* three parallel arrays, one capacity */
	int cap_f = ck->cap_files, cap_fd = ck->cap_files, cap_s = ck->cap_files;
	if (util_array_grow(&ck->files, &cap_f, idx + 1, 8) || util_array_grow(&ck->fds, &cap_fd, idx + 1, 8) ||
	    util_array_grow(&ck->file_sizes, &cap_s, idx + 1, 8)) {
		free(path);
		return coli_err_set(err, -ENOMEM, "out of memory opening a checkpoint");
	}
	ck->cap_files = cap_s;
	ck->files[idx] = path;
	ck->fds[idx] = open(path, O_RDONLY | O_CLOEXEC);
	ck->file_sizes[idx] = 0;
	ck->n_files++;  /* from here st_close releases path and fd */
	if (ck->fds[idx] < 0)
		return coli_err_set(err, -errno, "%s: %s", path, strerror(errno));
	struct stat st;
	if (fstat(ck->fds[idx], &st) < 0)
		return coli_err_set(err, -errno, "%s: %s", path, strerror(errno));
	if (!S_ISREG(st.st_mode))
		return coli_err_set(err, -EINVAL, "%s: not a regular file", path);
	uint64_t size = (uint64_t)st.st_size;
	ck->file_sizes[idx] = size;
	uint8_t lenbuf[8];
	size_t got;
	if ((rc = pread_full(ck->fds[idx], lenbuf, 8, 0, &got)))
		return coli_err_set(err, rc, "%s: read: %s", path, strerror(-rc));
	uint64_t hlen = 0;
	for (int i = 7; i >= 0 && got == 8; i--)
		hlen = hlen << 8 | lenbuf[i];
	if (got < 8 || hlen > ST_MAX_HEADER_BYTES || hlen > size - 8)
		/* let the parser word the refusal from the length alone */
		return st_parse_header(lenbuf, got, size, idx, path, &ck->tensors, &ck->n_tensors, err);
	hdr = malloc((size_t)hlen + 8);
	if (!hdr)
		return coli_err_set(err, -ENOMEM, "%s: out of memory for a %llu-byte header", path,
				    (unsigned long long)hlen);
	if ((rc = pread_full(ck->fds[idx], hdr, (size_t)hlen + 8, 0, &got))) {
		rc = coli_err_set(err, rc, "%s: read: %s", path, strerror(-rc));
		goto out;
	}
	rc = st_parse_header(hdr, got, size, idx, path, &ck->tensors, &ck->n_tensors, err);
out:
	free(hdr);
	return rc;
}

static int cmp_tensor_name(const void *a, const void *b)
{
	return strcmp(((const st_tensor *)a)->name, ((const st_tensor *)b)->name);
}

/* Sort by name (st_find uses bsearch) and refuse a name stored twice. */
static int finish(st_checkpoint *ck, coli_err *err)
{
	if (ck->n_tensors > 1)
		qsort(ck->tensors, (size_t)ck->n_tensors, sizeof *ck->tensors, cmp_tensor_name);
	for (int i = 1; i < ck->n_tensors; i++) {
		const st_tensor *a = &ck->tensors[i - 1], *b = &ck->tensors[i];
		if (!strcmp(a->name, b->name))
			return coli_err_set(err, -EINVAL, "tensor %s is stored twice (in %s and %s)", a->name,
					    ck->files[a->file_index], ck->files[b->file_index]);
	}
	return 0;
}

static st_checkpoint *ck_new(const char *dir)
{
	st_checkpoint *ck = calloc(1, sizeof *ck);
	if (ck && !(ck->dir = strdup(dir))) {
		free(ck);
		ck = NULL;
	}
	return ck;
}

int st_open_file(const char *path, st_checkpoint **out, coli_err *err)
{
	*out = NULL;
	char *dir = strdup(path), *slash;
	if (!dir)
		return coli_err_set(err, -ENOMEM, "out of memory");
	slash = strrchr(dir, '/');
	if (slash)
		*slash = '\0';
	st_checkpoint *ck = ck_new(slash ? (dir[0] ? dir : "/") : ".");
	free(dir);
	char *p = strdup(path);
	if (!ck || !p) {
		free(p);
		st_close(ck);
		return coli_err_set(err, -ENOMEM, "out of memory");
	}
	int rc = add_file(ck, p, err);
	if (!rc)
		rc = finish(ck, err);
	if (rc) {
		st_close(ck);
		return rc;
	}
	*out = ck;
	return 0;
}

static int cmp_str_ptr(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static int shard_name_ok(const char *s)
{
	return s[0] && !strchr(s, '/') && strcmp(s, ".") && strcmp(s, "..");
}

static int open_sharded(st_checkpoint *ck, const char *index_path, coli_err *err)
{
	int rc = 0;
	const char **shards = NULL;
	json_error_t jerr;
	json_t *root = json_load_file(index_path, JSON_REJECT_DUPLICATES, &jerr);
	if (!root)
		return coli_err_set(err, -EINVAL, "%s: %s (line %d)", index_path, jerr.text, jerr.line);
	json_t *map = json_object_get(root, "weight_map");
	if (!json_is_object(map)) {
		rc = coli_err_set(err, -EINVAL, "%s: missing or non-object weight_map", index_path);
		goto out;
	}
	size_t nmap = json_object_size(map), nsh = 0;
	shards = malloc((nmap + 1) * sizeof *shards);
	if (!shards) {
		rc = coli_err_set(err, -ENOMEM, "%s: out of memory", index_path);
		goto out;
	}
	const char *key;
	json_t *val;
	json_object_foreach(map, key, val) {
		if (!json_is_string(val) || !shard_name_ok(json_string_value(val))) {
			rc = coli_err_set(err, -EINVAL, "%s: weight_map[%s] is not a shard file name", index_path,
					  key);
			goto out;
		}
		shards[nsh++] = json_string_value(val);
	}
	if (!nsh) {
		rc = coli_err_set(err, -EINVAL, "%s: weight_map is empty", index_path);
		goto out;
	}
	/* Each shard once, in name order (the file index is the position). */
	qsort(shards, nsh, sizeof *shards, cmp_str_ptr);
	size_t u = 0;
	for (size_t i = 0; i < nsh; i++)
		if (!u || strcmp(shards[u - 1], shards[i]))
			shards[u++] = shards[i];
	for (size_t i = 0; i < u && !rc; i++) {
		char *p = path_join(ck->dir, shards[i]);
		rc = p ? add_file(ck, p, err) : coli_err_set(err, -ENOMEM, "out of memory");
	}
	if (rc || (rc = finish(ck, err)))
		goto out;
	json_object_foreach(map, key, val) {
		const char *want = json_string_value(val);
		const st_tensor *t = st_find(ck, key);
		if (!t) {
			rc = coli_err_set(err, -ENOENT, "%s: tensor %s is not in its shard %s", index_path, key,
					  want);
			goto out;
		}
		const char *have = strrchr(ck->files[t->file_index], '/') + 1;
		if (strcmp(have, want)) {
			rc = coli_err_set(err, -EINVAL, "%s: tensor %s is mapped to %s but stored in %s",
					  index_path, key, want, have);
			goto out;
		}
	}
out:
	free(shards);
	json_decref(root);
	return rc;
}

static int has_suffix(const char *s, const char *suf)
{
	size_t a = strlen(s), b = strlen(suf);
	return a > b && !strcmp(s + a - b, suf);
}

/* The directory's only *.safetensors regular file (name malloc'd). */
static int find_only_file(const char *dir, char **out, coli_err *err)
{
	*out = NULL;
	DIR *d = opendir(dir);
	if (!d)
		return coli_err_set(err, -errno, "%s: %s", dir, strerror(errno));
	int count = 0, rc = 0;
	struct dirent *de;
	while ((de = readdir(d))) {
		if (!has_suffix(de->d_name, ".safetensors"))
			continue;
		struct stat st;
		char *p = path_join(dir, de->d_name);
		if (!p) {
			rc = coli_err_set(err, -ENOMEM, "out of memory");
			break;
		}
		if (stat(p, &st) == 0 && S_ISREG(st.st_mode) && ++count == 1) {
			*out = p;
			continue;
		}
		free(p);
	}
	closedir(d);
	if (!rc && count != 1)
		rc = coli_err_set(err, -ENOENT,
				  count ? "%s: %d .safetensors files but no " ST_INDEX_NAME
					: "%s: no " ST_SINGLE_NAME ", " ST_INDEX_NAME " or other .safetensors file",
				  dir, count);
	if (rc) {
		free(*out);
		*out = NULL;
	}
	return rc;
}

int st_open_dir(const char *dir, st_checkpoint **out, coli_err *err)
{
	struct stat st;
	*out = NULL;
	if (stat(dir, &st) < 0)
		return coli_err_set(err, -errno, "%s: %s", dir, strerror(errno));
	if (S_ISREG(st.st_mode))
		return st_open_file(dir, out, err);
	st_checkpoint *ck = ck_new(dir);
	char *index = path_join(dir, ST_INDEX_NAME);
	char *single = NULL;
	int rc;
	if (!ck || !index) {
		rc = coli_err_set(err, -ENOMEM, "out of memory");
		goto out;
	}
	if (stat(index, &st) == 0) {
		rc = open_sharded(ck, index, err);
		goto out;
	}
	single = path_join(dir, ST_SINGLE_NAME);
	if (!single) {
		rc = coli_err_set(err, -ENOMEM, "out of memory");
		goto out;
	}
	if (stat(single, &st) != 0) {
		free(single);
		if ((rc = find_only_file(dir, &single, err)))
			goto out;
	}
	rc = add_file(ck, single, err);
	single = NULL;  /* owned by ck now */
	if (!rc)
		rc = finish(ck, err);
out:
	free(index);
	free(single);
	if (rc) {
		st_close(ck);
		return rc;
	}
	*out = ck;
	return 0;
}
