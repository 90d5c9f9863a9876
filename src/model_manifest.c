/* model_manifest.c - see model_manifest.h. */
#include "config.h"

#include "model_manifest.h"
#include "util_file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int manifest_read_file(const char *path, char **data, size_t *len, coli_err *err)
{
	int rc = 0;
	char *buf = NULL;
	struct stat st;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return coli_err_set(err, -errno, "%s: %s", path, strerror(errno));
	if (fstat(fd, &st) < 0) {
		rc = coli_err_set(err, -errno, "%s: %s", path, strerror(errno));
		goto out;
	}
	size_t n = (size_t)st.st_size;
	buf = malloc(n + 1);
	if (!buf) {
		rc = coli_err_set(err, -ENOMEM, "%s: out of memory (%zu bytes)", path, n);
		goto out;
	}
	size_t got = 0;
	while (got < n) {
		ssize_t r = pread(fd, buf + got, n - got, (off_t)got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			rc = coli_err_set(err, r < 0 ? -errno : -EIO, "%s: read failed: %s", path,
					  r < 0 ? strerror(errno) : "file shrank while reading");
			goto out;
		}
		got += (size_t)r;
	}
	buf[n] = '\0';
	*data = buf;
	if (len)
		*len = n;
	buf = NULL;
out:
	free(buf);
	close(fd);
	return rc;
}

int manifest_load(const char *path, json_t **root, coli_err *err)
{
	char *data = NULL;
	size_t len = 0;
	int rc = manifest_read_file(path, &data, &len, err);
	if (rc < 0)
		return rc;
	json_error_t je;
	json_t *j = json_loadb(data, len, JSON_REJECT_DUPLICATES, &je);
	free(data);
	if (!j)
		return coli_err_set(err, -EINVAL, "%s: line %d column %d: %s", path, je.line,
				    je.column, je.text);
	*root = j;
	return 0;
}

int manifest_fsync_dir(const char *path, coli_err *err)
{
	return coli_fsync_dir(path, err);
}

int manifest_write_atomic(const char *path, const void *data, size_t len, coli_err *err)
{
	return coli_file_replace(path, data, len, err);
}

int manifest_save(const char *path, const json_t *root, coli_err *err)
{
	char *s = json_dumps(root, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(17));
	if (!s)
		return coli_err_set(err, -ENOMEM, "%s: cannot serialize JSON", path);
	size_t n = strlen(s);
	char *t = realloc(s, n + 2);
	if (!t) {
		free(s);
		return coli_err_set(err, -ENOMEM, "out of memory");
	}
	t[n] = '\n';
	t[n + 1] = '\0';
	int rc = manifest_write_atomic(path, t, n + 1, err);
	free(t);
	return rc;
}

int manifest_get_int(const json_t *obj, const char *key, int64_t min, int64_t max,
		     int64_t *out, const char *where, coli_err *err)
{
	json_t *v = json_object_get(obj, key);
	if (!v)
		return coli_err_set(err, -EINVAL, "%s: missing key \"%s\"", where, key);
	if (!json_is_integer(v))
		return coli_err_set(err, -EINVAL, "%s: \"%s\" must be an integer", where, key);
	json_int_t x = json_integer_value(v);
	if (x < min || x > max)
		return coli_err_set(err, -EINVAL, "%s: \"%s\" = %lld out of range [%lld, %lld]",
				    where, key, (long long)x, (long long)min, (long long)max);
	*out = x;
	return 0;
}

int manifest_get_str(const json_t *obj, const char *key, const char **out,
		     const char *where, coli_err *err)
{
	json_t *v = json_object_get(obj, key);
	if (!v)
		return coli_err_set(err, -EINVAL, "%s: missing key \"%s\"", where, key);
	if (!json_is_string(v))
		return coli_err_set(err, -EINVAL, "%s: \"%s\" must be a string", where, key);
	*out = json_string_value(v);
	return 0;
}

int manifest_get_obj(const json_t *obj, const char *key, json_t **out,
		     const char *where, coli_err *err)
{
	json_t *v = json_object_get(obj, key);
	if (!v)
		return coli_err_set(err, -EINVAL, "%s: missing key \"%s\"", where, key);
	if (!json_is_object(v))
		return coli_err_set(err, -EINVAL, "%s: \"%s\" must be an object", where, key);
	*out = v;
	return 0;
}

int manifest_get_arr(const json_t *obj, const char *key, json_t **out,
		     const char *where, coli_err *err)
{
	json_t *v = json_object_get(obj, key);
	if (!v)
		return coli_err_set(err, -EINVAL, "%s: missing key \"%s\"", where, key);
	if (!json_is_array(v))
		return coli_err_set(err, -EINVAL, "%s: \"%s\" must be an array", where, key);
	*out = v;
	return 0;
}

int manifest_path_safe(const char *rel)
{
	if (!rel || !*rel || rel[0] == '/')
		return 0;
	const char *p = rel;
	while (*p) {
		const char *e = strchr(p, '/');
		size_t n = e ? (size_t)(e - p) : strlen(p);
		if (n == 0 || (n == 1 && p[0] == '.') || (n == 2 && p[0] == '.' && p[1] == '.'))
			return 0;
		if (!e)
			break;
		p = e + 1;
		if (!*p)
			return 0;
	}
	return 1;
}

char *manifest_join(const char *dir, const char *rel)
{
	size_t a = strlen(dir), b = strlen(rel);
	char *s = malloc(a + b + 2);
	if (!s)
		return NULL;
	memcpy(s, dir, a);
	s[a] = '/';
	memcpy(s + a + 1, rel, b + 1);
	return s;
}

int manifest_is_sha256_hex(const char *s)
{
	if (!s || strlen(s) != 64)
		return 0;
	for (int i = 0; i < 64; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return 0;
	return 1;
}

void manifest_crc_hex(uint32_t crc, char *hex)
{
	snprintf(hex, 9, "%08x", (unsigned)crc);
}

int manifest_crc_parse(const char *s, uint32_t *out, size_t n)
{
	if (!s || strlen(s) != 8 * n)
		return -EINVAL;
	for (size_t i = 0; i < n; i++) {
		uint32_t v = 0;
		for (int k = 0; k < 8; k++) {
			char ch = s[8 * i + (size_t)k];
			int d = ch >= '0' && ch <= '9' ? ch - '0' : ch >= 'a' && ch <= 'f' ? ch - 'a' + 10 : -1;
			if (d < 0)
				return -EINVAL;
			v = v << 4 | (uint32_t)d;
		}
		out[i] = v;
	}
	return 0;
}
