/* pull_names.c - repository ids and revisions as the hub allows them
 * (see pull_hub.h), checked before they go into a URL or a directory. */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "pull_hub.h"

/* A name from the command line for a message: control bytes (a newline
 * in a repository id) shown as '?', long ones cut. */
static const char *shown(const char *s, char *buf, size_t cap)
{
	size_t i = 0;
	for (; s[i] && i + 4 < cap; i++)
		buf[i] = (unsigned char)s[i] < 0x20 || s[i] == 0x7f ? '?' : s[i];
	if (s[i])
		buf[i++] = '.', buf[i++] = '.', buf[i++] = '.';
	buf[i] = '\0';
	return buf;
}

/* A name segment of a repository id, as the hub allows it. */
static int repo_segment_ok(const char *s, size_t n)
{
	if (n == 0 || s[0] == '-' || s[0] == '.' || s[n - 1] == '-' || s[n - 1] == '.')
		return 0;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		if (!isalnum(c) && c != '-' && c != '_' && c != '.')
			return 0;
		if (i && (c == '-' || c == '.') && s[i - 1] == c)
			return 0;   /* "--" and ".." */
	}
	return 1;
}

static int repo_name_ok(const char *repo)
{
	const char *slash = strchr(repo, '/');
	size_t n = strlen(repo);
	return slash && n <= 96 && repo_segment_ok(repo, (size_t)(slash - repo)) &&
	       repo_segment_ok(slash + 1, n - (size_t)(slash - repo) - 1);
}

int hub_check_repo(const char *repo, coli_err *err)
{
	if (repo_name_ok(repo))
		return 0;
	return coli_err_set(err, -EINVAL, "'%s': not a repository name (expected ORG/NAME: letters, "
			    "digits, '-', '_', '.', no '..' or '--', at most 96 bytes)",
			    shown(repo, (char[80]){ 0 }, 80));
}

int hub_check_revision(const char *rev, coli_err *err)
{
	size_t n = strlen(rev);
	int ok = n > 0 && n <= 200 && rev[0] != '-' && !strstr(rev, "..") && !strstr(rev, "@{");
	for (const char *seg = rev; ok && *seg;) {
		size_t len = strcspn(seg, "/");
		ok = len > 0 && seg[0] != '.' && !(len >= 5 && !strncmp(seg + len - 5, ".lock", 5));
		for (size_t i = 0; ok && i < len; i++)
			ok = isalnum((unsigned char)seg[i]) || strchr("-_.", seg[i]);
		seg += len;
		if (*seg == '/' && !*++seg)
			ok = 0;   /* a trailing '/' */
	}
	if (ok)
		return 0;
	return coli_err_set(err, -EINVAL, "revision '%s': not a branch, tag or commit (letters, digits, "
			    "'-', '_', '.', '/' between names; no '..', at most 200 bytes)",
			    shown(rev, (char[80]){ 0 }, 80));
}
