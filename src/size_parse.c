/* size_parse.c - see size_parse.h. */
#include "config.h"

#include "size_parse.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

int size_parse_with(const char *s, int64_t avail_bytes, const char *what,
		    int64_t *out, coli_err *err)
{
	const char *name = what ? what : "size";
	if (!s)
		return coli_err_set(err, -EINVAL, "%s: missing value", name);
	while (isspace((unsigned char)*s))
		s++;
	if (!strcasecmp(s, "auto") || !strcmp(s, "-1")) {
		*out = -1;
		return 0;
	}
	if (!isdigit((unsigned char)*s) && *s != '.')
		return coli_err_set(err, -EINVAL, "%s: '%s' is not a size (e.g. 512MB, 8GB, 25%%, 0)", name, s);
	char *end;
	errno = 0;
	double v = strtod(s, &end);
	if (errno || !isfinite(v) || v < 0)
		return coli_err_set(err, -ERANGE, "%s: '%s' is out of range", name, s);
	while (isspace((unsigned char)*end))
		end++;
	double mult = 1;
	if (*end == '%') {
		if (end[1] != '\0')
			return coli_err_set(err, -EINVAL, "%s: trailing text after '%%' in '%s'", name, s);
		if (v > 100)
			return coli_err_set(err, -ERANGE, "%s: '%s' is more than 100%%", name, s);
		if (avail_bytes < 0)
			return coli_err_set(err, -ENOENT, "%s: cannot read available memory for '%s'", name, s);
		*out = (int64_t)((double)avail_bytes * v / 100.0);
		return 0;
	}
	switch (toupper((unsigned char)*end)) {
	case '\0': break;
	case 'B': end--; break; /* plain "B" suffix: bytes */
	case 'K': mult = 1024.0; break;
	case 'M': mult = 1024.0 * 1024; break;
	case 'G': mult = 1024.0 * 1024 * 1024; break;
	case 'T': mult = 1024.0 * 1024 * 1024 * 1024; break;
	default:
		return coli_err_set(err, -EINVAL, "%s: unknown unit in '%s' (use K, M, G, T or %%)", name, s);
	}
	if (*end) {
		end++;
		/* optional "B" or "iB" after the multiplier letter */
		if ((end[0] == 'i' || end[0] == 'I') && (end[1] == 'B' || end[1] == 'b'))
			end += 2;
		else if (end[0] == 'B' || end[0] == 'b')
			end++;
		if (*end)
			return coli_err_set(err, -EINVAL, "%s: trailing text in '%s'", name, s);
	}
	double bytes = v * mult;
	if (bytes > 9.0e18)
		return coli_err_set(err, -ERANGE, "%s: '%s' is too large", name, s);
	*out = (int64_t)bytes;
	return 0;
}

int size_parse(const char *s, const char *what, int64_t *out, coli_err *err)
{
	int64_t avail = -1;
	/* Only look at /proc when a percentage needs it. */
	if (s && strchr(s, '%'))
		avail = size_mem_available();
	return size_parse_with(s, avail, what, out, err);
}

int64_t size_meminfo_available(const char *text)
{
	const char *p = text ? strstr(text, "MemAvailable:") : NULL;
	if (!p)
		return -1;
	long long kb;
	if (sscanf(p + strlen("MemAvailable:"), "%lld", &kb) != 1 || kb < 0)
		return -1;
	return (int64_t)kb * 1024;
}

int64_t size_cgroup_limit(const char *text)
{
	if (!text)
		return -1;
	while (isspace((unsigned char)*text))
		text++;
	if (!strncmp(text, "max", 3) || !isdigit((unsigned char)*text))
		return -1;
	unsigned long long v = strtoull(text, NULL, 10);
	/* cgroup v1 reports "no limit" as a huge page-rounded number. */
	if (v >= (1ULL << 62))
		return -1;
	return (int64_t)v;
}

static int read_small_file(const char *path, char *buf, size_t size)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return -errno;
	size_t n = fread(buf, 1, size - 1, f);
	buf[n] = '\0';
	fclose(f);
	return 0;
}

int64_t size_mem_available(void)
{
	char buf[4096];
	int64_t avail = -1;
	if (read_small_file("/proc/meminfo", buf, sizeof buf) == 0)
		avail = size_meminfo_available(buf);
	/* cgroup v2 first, then v1; the room left is limit - usage. */
	static const char *const limits[][2] = {
		{ "/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory.current" },
		{ "/sys/fs/cgroup/memory/memory.limit_in_bytes", "/sys/fs/cgroup/memory/memory.usage_in_bytes" },
	};
	for (size_t i = 0; i < sizeof limits / sizeof limits[0]; i++) {
		char lb[64], ub[64];
		if (read_small_file(limits[i][0], lb, sizeof lb))
			continue;
		int64_t lim = size_cgroup_limit(lb);
		if (lim < 0)
			break;
		int64_t used = 0;
		if (read_small_file(limits[i][1], ub, sizeof ub) == 0)
			used = size_cgroup_limit(ub) > 0 ? size_cgroup_limit(ub) : 0;
		int64_t room = lim > used ? lim - used : 0;
		if (avail < 0 || room < avail)
			avail = room;
		break;
	}
	return avail >= 0 ? avail : -ENOENT;
}

const char *size_format(int64_t bytes, char *buf, int bufsize)
{
	static const char *const units[] = { "B", "KiB", "MiB", "GiB", "TiB" };
	double v = (double)bytes;
	int u = 0;
	if (bytes < 0) {
		snprintf(buf, (size_t)bufsize, "auto");
		return buf;
	}
	while (v >= 1024 && u < 4) {
		v /= 1024;
		u++;
	}
	if (u == 0)
		snprintf(buf, (size_t)bufsize, "%lld B", (long long)bytes);
	else
		snprintf(buf, (size_t)bufsize, v < 10 ? "%.2f %s" : "%.1f %s", v, units[u]);
	return buf;
}
