/* util_file.c - coli_file_replace and coli_file_commit (util_file.h): the
 * new contents replace the old, a second replace over the first works, and
 * a failure (the directory missing; the target a non-empty directory, so
 * the rename fails after the data was written and fsynced) returns the
 * errno with the path in the message and leaves no temporary file. */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "test_util.h"
#include "util_file.h"

static char dir[256];

/* entries of dir whose names start with PREFIX */
static int count_prefix(const char *prefix)
{
	DIR *d = opendir(dir);
	int n = 0;
	struct dirent *e;
	while (d && (e = readdir(d)))
		n += !strncmp(e->d_name, prefix, strlen(prefix));
	if (d)
		closedir(d);
	return n;
}

static int read_all(const char *path, char *buf, size_t cap)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return -1;
	size_t n = fread(buf, 1, cap - 1, f);
	fclose(f);
	buf[n] = '\0';
	return (int)n;
}

int main(int argc, char **argv)
{
	(void)argc;
	coli_err err = { 0, "" };
	char path[512], buf[64];
	snprintf(dir, sizeof dir, "/tmp/coli-util-file-XXXXXX");
	REQUIRE(mkdtemp(dir));
	snprintf(path, sizeof path, "%s/f", dir);

	CHECK_RC(coli_file_replace(path, "first", 5, &err), 0);
	CHECK(read_all(path, buf, sizeof buf) == 5 && !strcmp(buf, "first"));
	CHECK_RC(coli_file_replace(path, "second!", 7, &err), 0);
	CHECK(read_all(path, buf, sizeof buf) == 7 && !strcmp(buf, "second!"));
	CHECK_RC(coli_file_replace(path, "", 0, &err), 0);
	CHECK(read_all(path, buf, sizeof buf) == 0);
	CHECK(count_prefix("f.tmp") == 0, "a temporary file left after success");
	CHECK_RC(coli_fsync_dir(dir, &err), 0);
	CHECK_RC(coli_fsync_dir(path, &err), 0);

	/* the directory does not exist: open fails */
	char missing[600];
	snprintf(missing, sizeof missing, "%s/no/such", dir);
	err.msg[0] = '\0';
	CHECK_RC(coli_file_replace(missing, "x", 1, &err), -ENOENT);
	CHECK(strstr(err.msg, missing) != NULL, "message: %s", err.msg);

	/* the target is a non-empty directory: rename fails after the write */
	char target[600], inside[700];
	snprintf(target, sizeof target, "%s/d", dir);
	snprintf(inside, sizeof inside, "%s/keep", target);
	REQUIRE(mkdir(target, 0755) == 0);
	REQUIRE(coli_file_replace(inside, "k", 1, &err) == 0);
	err.msg[0] = '\0';
	int rc = coli_file_replace(target, "data", 4, &err);
	CHECK(rc == -EISDIR || rc == -ENOTEMPTY || rc == -EEXIST, "rc %d", rc);
	CHECK(strstr(err.msg, "rename failed") != NULL, "message: %s", err.msg);
	CHECK(count_prefix("d.tmp") == 0, "a temporary file left after a failed rename");
	CHECK(read_all(inside, buf, sizeof buf) == 1 && !strcmp(buf, "k"));

	/* coli_file_commit: a temporary file written through its fd replaces
	 * the target and the fd stays usable; a failed rename removes it */
	char tmp[600];
	snprintf(tmp, sizeof tmp, "%s/c.part", dir);
	int fd = open(tmp, O_RDWR | O_CREAT | O_TRUNC, 0644);
	REQUIRE(fd >= 0);
	REQUIRE(write(fd, "via fd", 6) == 6);
	CHECK_RC(coli_file_commit(fd, tmp, path, &err), 0);
	CHECK(write(fd, "!", 1) == 1, "the fd is closed after commit");
	close(fd);
	CHECK(read_all(path, buf, sizeof buf) == 7 && !strcmp(buf, "via fd!"));
	CHECK(count_prefix("c.part") == 0, "the temporary file is still there");
	fd = open(tmp, O_RDWR | O_CREAT | O_TRUNC, 0644);
	REQUIRE(fd >= 0);
	err.msg[0] = '\0';
	rc = coli_file_commit(fd, tmp, target, &err);
	close(fd);
	CHECK(rc == -EISDIR || rc == -ENOTEMPTY || rc == -EEXIST, "rc %d", rc);
	CHECK(strstr(err.msg, "rename failed") != NULL, "message: %s", err.msg);
	CHECK(count_prefix("c.part") == 0, "a temporary file left after a failed commit");

	unlink(inside);
	rmdir(target);
	unlink(path);
	CHECK(rmdir(dir) == 0, "directory not empty at the end: something was left");
	return test_summary(argv[0]);
}
