/* util_file.c - see util_file.h. */
#include "config.h"

#include "util_file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int coli_fsync_dir(const char *path, coli_err *err)
{
	struct stat st;
	char *dir = NULL;
	if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
		dir = strdup(path);
	} else {
		const char *slash = strrchr(path, '/');
		dir = slash ? strndup(path, (size_t)(slash - path) + (slash == path)) : strdup(".");
	}
	if (!dir)
		return coli_err_set(err, -ENOMEM, "out of memory");
	int rc = 0;
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0 || fsync(fd) < 0)
		rc = coli_err_set(err, -errno, "%s: fsync of directory failed: %s", dir,
				  strerror(errno));
	if (fd >= 0)
		close(fd);
	free(dir);
	return rc;
}

int coli_file_commit(int fd, const char *tmp, const char *path, coli_err *err)
{
	int rc = 0;
	if (fsync(fd) < 0)
		rc = coli_err_set(err, -errno, "%s: fsync failed: %s", tmp, strerror(errno));
	else if (rename(tmp, path) < 0)
		rc = coli_err_set(err, -errno, "%s: rename failed: %s", path, strerror(errno));
	if (rc < 0) {
		unlink(tmp);
		return rc;
	}
	return coli_fsync_dir(path, err);
}

int coli_file_replace(const char *path, const void *data, size_t len, coli_err *err)
{
	static _Atomic unsigned calls; /* relaxed: only uniqueness matters */
	size_t n = strlen(path) + 48;
	char *tmp = malloc(n);
	if (!tmp)
		return coli_err_set(err, -ENOMEM, "out of memory");
	snprintf(tmp, n, "%s.tmp.%ld.%u", path, (long)getpid(),
		 atomic_fetch_add_explicit(&calls, 1, memory_order_relaxed));
	int rc = 0;
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0) {
		rc = coli_err_set(err, -errno, "%s: %s", tmp, strerror(errno));
		free(tmp);
		return rc;
	}
	const char *p = data;
	size_t left = len;
	while (left) {
		ssize_t w = write(fd, p, left);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			rc = coli_err_set(err, w < 0 ? -errno : -EIO, "%s: write failed: %s", tmp,
					  strerror(w < 0 ? errno : EIO));
			break;
		}
		p += w;
		left -= (size_t)w;
	}
	if (rc == 0)
		rc = coli_file_commit(fd, tmp, path, err);
	else
		unlink(tmp);
	if (close(fd) < 0 && rc == 0)
		rc = coli_err_set(err, -errno, "%s: close failed: %s", path, strerror(errno));
	free(tmp);
	return rc;
}
