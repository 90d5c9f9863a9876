/* kv_store.c - see kv_store.h.
 *
 * Locking protocol. A writer opens dir/NAME.lock (creating it), takes
 * flock(LOCK_EX|LOCK_NB), then checks that the path still names the inode
 * it locked: rm unlinks the lock file while holding it, so a process that
 * opened the old file and locked it afterwards must retry on the new one.
 * Lock files are empty and cost nothing; rm removes them. */
#include "config.h"

#include "kv_store.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "coli_log.h"
#include "kv_format.h"
#include "util_array.h"
#include "util_file.h"

int kv_store_name_check(const char *name, coli_err *err)
{
	size_t len = name ? strlen(name) : 0;
	if (len == 0 || len > KV_NAME_MAX)
		return coli_err_set(err, -EINVAL, "session name '%s' must be 1..%d characters",
				    name ? name : "", KV_NAME_MAX);
	if (name[0] == '.')
		return coli_err_set(err, -EINVAL, "session name '%s' must not start with '.'", name);
	if (strstr(name, ".."))
		return coli_err_set(err, -EINVAL, "session name '%s' must not contain '..'", name);
	for (size_t i = 0; i < len; i++) {
		char c = name[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '.' || c == '_' || c == '-'))
			return coli_err_set(err, -EINVAL,
					    "session name '%s': only letters, digits, '.', '_' and '-' are allowed",
					    name);
	}
	return 0;
}

int kv_store_name_valid(const char *name)
{
	return kv_store_name_check(name, NULL) == 0;
}

int kv_store_path(const char *dir, const char *name, const char *ext, char *out, size_t cap,
		  coli_err *err)
{
	int rc = kv_store_name_check(name, err);
	if (rc < 0)
		return rc;
	int n = snprintf(out, cap, "%s/%s.%s", dir, name, ext);
	if (n < 0 || (size_t)n >= cap)
		return coli_err_set(err, -ENAMETOOLONG, "%s: path too long", dir);
	return 0;
}

int kv_store_lock(const char *dir, const char *name, int *lock_fd, coli_err *err)
{
	char path[PATH_MAX];
	int rc = kv_store_path(dir, name, "lock", path, sizeof path, err);
	*lock_fd = -1;
	if (rc < 0)
		return rc;
	for (int tries = 0; tries < 100; tries++) {
		int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
		if (fd < 0)
			return coli_err_set(err, -errno, "%s: %s", path, strerror(errno));
		/* Listing probes the lock with a momentary shared lock; a few
		 * short retries keep such a probe from failing a writer. */
		int got = -1, e = 0;
		for (int probe = 0; probe < 5; probe++) {
			if ((got = flock(fd, LOCK_EX | LOCK_NB)) == 0 || (e = errno) != EWOULDBLOCK)
				break;
			nanosleep(&(struct timespec){ 0, 2000000 }, NULL);
		}
		if (got < 0) {
			close(fd);
			if (e == EWOULDBLOCK)
				return coli_err_set(err, -EBUSY, "session %s is in use by another process (%s)",
						    name, path);
			return coli_err_set(err, -e, "%s: flock: %s", path, strerror(e));
		}
		struct stat a, b;
		if (fstat(fd, &a) == 0 && stat(path, &b) == 0 && a.st_ino == b.st_ino && a.st_dev == b.st_dev) {
			*lock_fd = fd;
			return 0;
		}
		close(fd); /* removed or replaced while we waited: lock the new one */
	}
	return coli_err_set(err, -EBUSY, "%s: lock file keeps changing", path);
}

void kv_store_unlock(int lock_fd)
{
	if (lock_fd >= 0)
		close(lock_fd);
}

static int is_locked(const char *dir, const char *name)
{
	char path[PATH_MAX];
	if (kv_store_path(dir, name, "lock", path, sizeof path, NULL) < 0)
		return 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	/* A shared lock fails while a writer holds the exclusive one and never
	 * blocks a writer for longer than this probe. */
	int locked = flock(fd, LOCK_SH | LOCK_NB) < 0 && errno == EWOULDBLOCK;
	close(fd);
	return locked;
}

static int cmp_entry_name(const void *a, const void *b)
{
	return strcmp(((const kv_store_entry *)a)->name, ((const kv_store_entry *)b)->name);
}

/* Files other modules keep beside a session under its name (colitop's
 * transcript, a stored Responses API response, the session's routing
 * profile); they follow the session through rm and rename. */
static const char *const companions[] = { "chat.json", "resp.json", "prof" };

/* A stored response is part of what its session costs (the transcript,
 * colitop's own, is not counted). */
static uint64_t companions_bytes(const char *dir, const char *name)
{
	char path[PATH_MAX];
	struct stat st;
	if (kv_store_path(dir, name, "resp.json", path, sizeof path, NULL) < 0 || stat(path, &st) < 0)
		return 0;
	return (uint64_t)st.st_size;
}

int kv_store_list(const char *dir, kv_store_entry **out, int *n, coli_err *err)
{
	kv_store_entry *v = NULL;
	int cnt = 0, cap = 0, rc = 0;
	*out = NULL;
	*n = 0;
	DIR *d = opendir(dir);
	if (!d)
		return errno == ENOENT ? 0 : coli_err_set(err, -errno, "%s: %s", dir, strerror(errno));
	struct dirent *de;
	while ((de = readdir(d))) {
		size_t len = strlen(de->d_name);
		if (len <= 3 || strcmp(de->d_name + len - 3, ".kv"))
			continue;
		char name[KV_NAME_MAX + 1], path[PATH_MAX];
		if (len - 3 > KV_NAME_MAX)
			continue;
		memcpy(name, de->d_name, len - 3);
		name[len - 3] = '\0';
		if (!kv_store_name_valid(name) || kv_store_path(dir, name, "kv", path, sizeof path, NULL) < 0)
			continue;
		struct stat st;
		if (stat(path, &st) < 0 || !S_ISREG(st.st_mode))
			continue; /* removed meanwhile */
		if (util_array_grow(&v, &cap, cnt + 1, 16)) {
			rc = coli_err_set(err, -ENOMEM, "out of memory");
			goto out;
		}
		kv_store_entry *e = &v[cnt++];
		memset(e, 0, sizeof *e);
		snprintf(e->name, sizeof e->name, "%s", name);
		e->bytes = (uint64_t)st.st_size + companions_bytes(dir, name);
		e->mtime = st.st_mtime;
		e->locked = is_locked(dir, name);
		kv_file_report rep;
		if (kv_file_inspect(path, 0, &rep, NULL) < 0) {
			e->status = -1;
			continue;
		}
		e->n_tokens = rep.n_tokens;
		e->status = rep.status;
		e->n_layers = rep.hdr.n_layers;
		e->width = rep.hdr.width;
		memcpy(e->fingerprint, rep.hdr.fingerprint, sizeof e->fingerprint);
		kv_file_report_free(&rep);
	}
	if (cnt > 1)
		qsort(v, (size_t)cnt, sizeof *v, cmp_entry_name);
	*out = v;
	*n = cnt;
	v = NULL;
out:
	closedir(d);
	free(v);
	return rc;
}


static void companions_move(const char *dir, const char *from, const char *to)
{
	for (size_t i = 0; i < sizeof companions / sizeof *companions; i++) {
		char a[PATH_MAX], b[PATH_MAX];
		if (kv_store_path(dir, from, companions[i], a, sizeof a, NULL) < 0)
			continue;
		if (!to) {
			unlink(a);
		} else if (kv_store_path(dir, to, companions[i], b, sizeof b, NULL) == 0 &&
			   rename(a, b) < 0 && errno != ENOENT) {
			coli_warn("%s: rename to %s: %s", a, b, strerror(errno));
		}
	}
}

void kv_store_rm_companions(const char *dir, const char *name)
{
	companions_move(dir, name, NULL);
}

int kv_store_rm(const char *dir, const char *name, coli_err *err)
{
	char kv[PATH_MAX], lk[PATH_MAX];
	int fd, rc;
	if ((rc = kv_store_path(dir, name, "kv", kv, sizeof kv, err)) < 0 ||
	    (rc = kv_store_path(dir, name, "lock", lk, sizeof lk, err)) < 0)
		return rc;
	if (access(kv, F_OK) < 0)
		return coli_err_set(err, -errno, "session %s: %s", name,
				    errno == ENOENT ? "no such session" : strerror(errno));
	if ((rc = kv_store_lock(dir, name, &fd, err)) < 0)
		return rc;
	if (unlink(kv) < 0)
		rc = coli_err_set(err, -errno, "%s: %s", kv, strerror(errno));
	else
		companions_move(dir, name, NULL);
	/* Unlink the lock while holding it; see the protocol at the top. */
	unlink(lk);
	kv_store_unlock(fd);
	return rc;
}

int kv_store_rename(const char *dir, const char *old_name, const char *new_name, coli_err *err)
{
	char src[PATH_MAX], dst[PATH_MAX];
	int fa = -1, fb = -1, rc;
	if ((rc = kv_store_path(dir, old_name, "kv", src, sizeof src, err)) < 0 ||
	    (rc = kv_store_path(dir, new_name, "kv", dst, sizeof dst, err)) < 0)
		return rc;
	if (!strcmp(old_name, new_name))
		return coli_err_set(err, -EINVAL, "session %s: old and new names are the same", old_name);
	if (access(src, F_OK) < 0)
		return coli_err_set(err, -errno, "session %s: %s", old_name,
				    errno == ENOENT ? "no such session" : strerror(errno));
	if ((rc = kv_store_lock(dir, old_name, &fa, err)) < 0)
		goto out;
	if ((rc = kv_store_lock(dir, new_name, &fb, err)) < 0)
		goto out;
	/* link() refuses an existing target atomically; then drop the old name. */
	if (link(src, dst) < 0) {
		rc = coli_err_set(err, -errno, "%s: %s", dst,
				  errno == EEXIST ? "a session with that name already exists" : strerror(errno));
		goto out;
	}
	if (unlink(src) < 0) {
		rc = coli_err_set(err, -errno, "%s: %s", src, strerror(errno));
		unlink(dst);
		goto out;
	}
	char lk[PATH_MAX];
	if (kv_store_path(dir, old_name, "lock", lk, sizeof lk, NULL) == 0)
		unlink(lk);
	companions_move(dir, old_name, new_name);
	coli_err de = { 0 };
	if (coli_fsync_dir(dir, &de) < 0)
		coli_warn("%s", de.msg);
out:
	kv_store_unlock(fa);
	kv_store_unlock(fb);
	return rc;
}

static int cmp_mtime(const void *a, const void *b)
{
	const kv_store_entry *x = a, *y = b;
	if (x->mtime != y->mtime)
		return x->mtime < y->mtime ? -1 : 1;
	return strcmp(x->name, y->name);
}

/* Temporary files (.NAME.kv.tmp.PID) are written under NAME's lock; one
 * whose lock is free was left by a crash during create or compaction. */
static uint64_t gc_temp_files(const char *dir)
{
	uint64_t freed = 0;
	DIR *d = opendir(dir);
	if (!d)
		return 0;
	struct dirent *de;
	while ((de = readdir(d))) {
		const char *p = de->d_name, *t = strstr(p, ".kv.tmp.");
		char name[KV_NAME_MAX + 1], path[PATH_MAX];
		size_t len = t ? (size_t)(t - p) : 0;
		if (p[0] != '.' || !t || len < 2 || len - 1 > KV_NAME_MAX)
			continue;
		memcpy(name, p + 1, len - 1);
		name[len - 1] = '\0';
		int fd;
		struct stat st;
		if (snprintf(path, sizeof path, "%s/%s", dir, p) >= (int)sizeof path ||
		    kv_store_lock(dir, name, &fd, NULL) < 0)
			continue;
		if (stat(path, &st) == 0 && unlink(path) == 0) {
			freed += (uint64_t)st.st_size;
			coli_info("gc: removed %s, left by an interrupted write", path);
		}
		kv_store_unlock(fd);
	}
	closedir(d);
	return freed;
}

int kv_store_gc(const char *dir, uint64_t budget, int *n_removed, uint64_t *bytes_freed,
		uint64_t *bytes_left, coli_err *err)
{
	kv_store_entry *v;
	int n, rc;
	uint64_t total = 0, freed = gc_temp_files(dir);
	int removed = 0;
	if ((rc = kv_store_list(dir, &v, &n, err)) < 0)
		return rc;
	for (int i = 0; i < n; i++)
		total += v[i].bytes;
	if (n > 1)
		qsort(v, (size_t)n, sizeof *v, cmp_mtime);
	for (int i = 0; i < n && total > budget; i++) {
		coli_err e = { 0 };
		if (kv_store_rm(dir, v[i].name, &e) < 0) {
			coli_info("gc: keeping %s: %s", v[i].name, e.msg);
			continue;
		}
		total -= v[i].bytes;
		freed += v[i].bytes;
		removed++;
	}
	free(v);
	if (n_removed)
		*n_removed = removed;
	if (bytes_freed)
		*bytes_freed = freed;
	if (bytes_left)
		*bytes_left = total;
	return 0;
}
