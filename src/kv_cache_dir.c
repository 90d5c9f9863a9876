/* kv_cache_dir.c - see kv_cache_dir.h. */
#include "config.h"

#include "kv_cache_dir.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "model_manifest.h"
#include "util_sha256.h"

/* Hex digits of the container fingerprint kept in the directory name: 48
 * bits tell apart any models one user has side by side, and the name
 * stays short enough to read in a listing. */
#define CACHE_FP_CHARS 12

/* Last path component of model_dir (resolved, so "." and "x/.." name the
 * real directory). Falls back to the literal path if it does not exist. */
static void container_name(const char *model_dir, char *out, size_t cap)
{
	char real[PATH_MAX];
	const char *p = model_dir;
	if (realpath(model_dir, real))
		p = real;
	size_t len = strlen(p);
	while (len > 1 && p[len - 1] == '/')
		len--;
	size_t start = len;
	while (start > 0 && p[start - 1] != '/')
		start--;
	size_t n = len - start;
	if (n == 0 || (n == 1 && p[start] == '/')) {
		snprintf(out, cap, "root");
		return;
	}
	if (n >= cap)
		n = cap - 1;
	memcpy(out, p + start, n);
	out[n] = '\0';
}

/* The container fingerprint (sha256 of manifest.json's bytes, as
 * model_container.c computes it) of model_dir, or "" when it has no readable
 * manifest (not a converted model: the name alone then). */
static void container_fingerprint(const char *model_dir, char fp[65])
{
	char path[PATH_MAX], *bytes = NULL;
	size_t len = 0;
	coli_err e = { 0 };
	fp[0] = '\0';
	if (snprintf(path, sizeof path, "%s/manifest.json", model_dir) >= (int)sizeof path)
		return;
	if (manifest_read_file(path, &bytes, &len, &e) < 0)
		return;
	coli_sha256_hex(bytes, len, fp);
	free(bytes);
}

/* The default cache directory's last component for model_dir (rule 2
 * above); snprintf's return. */
static int kv_cache_dir_name(const char *model_dir, char *out, size_t cap)
{
	char name[256], fp[65];
	if (!model_dir || !*model_dir)
		return snprintf(out, cap, "default");
	container_name(model_dir, name, sizeof name);
	container_fingerprint(model_dir, fp);
	if (!fp[0])
		return snprintf(out, cap, "%s", name);
	return snprintf(out, cap, "%s-%.*s", name, CACHE_FP_CHARS, fp);
}

int kv_cache_dir(const char *model_dir, char *out, size_t cap, coli_err *err)
{
	const char *env = getenv("COLI_CACHE_DIR");
	int n;
	if (env && *env) {
		n = snprintf(out, cap, "%s", env);
	} else {
		char name[300], root[PATH_MAX];
		const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
		kv_cache_dir_name(model_dir, name, sizeof name);
		if (xdg && xdg[0] == '/')
			snprintf(root, sizeof root, "%s/colitop", xdg);
		else if (home && *home)
			snprintf(root, sizeof root, "%s/.cache/colitop", home);
		else
			return coli_err_set(err, -ENOENT,
					    "no cache directory: set COLI_CACHE_DIR, XDG_CACHE_HOME or HOME");
		n = snprintf(out, cap, "%s/%s", root, name);
		/* Before the fingerprint was part of the name the directory was
		 * ROOT/NAME: keep using such a directory (its sessions and heat
		 * are checked against the model's fingerprint when read) rather
		 * than leave a user's saved sessions behind. */
		char legacy[256];
		struct stat st;
		if (model_dir && *model_dir && n > 0 && (size_t)n < cap && stat(out, &st) < 0) {
			container_name(model_dir, legacy, sizeof legacy);
			char old[PATH_MAX + 300];
			snprintf(old, sizeof old, "%s/%s", root, legacy);
			if (strcmp(legacy, name) && stat(old, &st) == 0 && S_ISDIR(st.st_mode))
				n = snprintf(out, cap, "%s", old);
		}
	}
	if (n < 0 || (size_t)n >= cap)
		return coli_err_set(err, -ENAMETOOLONG, "cache directory path too long");
	return 0;
}

int kv_mkdirs(const char *path, coli_err *err)
{
	char buf[PATH_MAX];
	size_t len = strlen(path);
	if (len == 0 || len >= sizeof buf)
		return coli_err_set(err, -ENAMETOOLONG, "%s: bad directory path", path);
	memcpy(buf, path, len + 1);
	for (size_t i = 1; i <= len; i++) {
		if (buf[i] != '/' && buf[i] != '\0')
			continue;
		char c = buf[i];
		buf[i] = '\0';
		if (mkdir(buf, 0700) < 0 && errno != EEXIST)
			return coli_err_set(err, -errno, "%s: mkdir: %s", buf, strerror(errno));
		buf[i] = c;
	}
	struct stat st;
	if (stat(path, &st) < 0 || !S_ISDIR(st.st_mode))
		return coli_err_set(err, -ENOTDIR, "%s: not a directory", path);
	return 0;
}
