/* fuzz_util.h - helpers of the file-based fuzz targets: the parsers under
 * test read files, so each input is written to a fresh temporary
 * directory (under /dev/shm when there is one: no disk I/O) that is
 * removed afterwards. */
#ifndef COLI_FUZZ_UTIL_H
#define COLI_FUZZ_UTIL_H

#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "coli_log.h"

static inline void fuzz_quiet(void)
{
	static int done;
	if (!done) {
		coli_log_set_level(COLI_LOG_ERROR + 1);  /* warnings are expected here */
		done = 1;
	}
}

static inline int fuzz_tmpdir(char *dir, size_t cap)
{
	struct stat st;
	const char *base = stat("/dev/shm", &st) == 0 && access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
	snprintf(dir, cap, "%s/colifuzz.XXXXXX", base);
	return mkdtemp(dir) ? 0 : -1;
}

static inline void fuzz_write(const char *path, const void *data, size_t size)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0 || (size && write(fd, data, size) != (ssize_t)size))
		abort();
	close(fd);
}

/* mkdir -p of the directories above PATH */
static inline void fuzz_mkparents(const char *path)
{
	char p[512];
	snprintf(p, sizeof p, "%s", path);
	for (char *s = strchr(p + 1, '/'); s; s = strchr(s + 1, '/')) {
		*s = '\0';
		mkdir(p, 0700);
		*s = '/';
	}
}

static inline int fuzz_rm_one(const char *p, const struct stat *st, int flag, struct FTW *f)
{
	(void)st; (void)flag; (void)f;
	return remove(p);
}

static inline void fuzz_rmtree(const char *dir)
{
	nftw(dir, fuzz_rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

#endif
