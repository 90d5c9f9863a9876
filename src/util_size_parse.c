/* util_size_parse.c - see util_size_parse.h. */
#include "config.h"

#include "util_size_parse.h"

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

int size_cgroup_path(const char *text, int v2, char *out, size_t outsz)
{
	/* v2: "0::/path"; v1: "N:ctrl,ctrl:/path" with "memory" among ctrls */
	const char *line = text;
	while (line && *line) {
		const char *nl = strchr(line, '\n');
		size_t len = nl ? (size_t)(nl - line) : strlen(line);
		const char *c1 = memchr(line, ':', len);
		const char *c2 = c1 ? memchr(c1 + 1, ':', len - (size_t)(c1 + 1 - line)) : NULL;
		if (c1 && c2) {
			size_t clen = (size_t)(c2 - c1 - 1);
			int match = 0;
			if (v2)
				match = clen == 0 && c1 - line == 1 && line[0] == '0';
			else
				for (const char *p = c1 + 1; p < c2;) {
					const char *comma = memchr(p, ',', (size_t)(c2 - p));
					size_t n = comma ? (size_t)(comma - p) : (size_t)(c2 - p);
					match |= n == 6 && !memcmp(p, "memory", 6);
					p += n + 1;
				}
			if (match) {
				size_t plen = len - (size_t)(c2 + 1 - line);
				if (plen + 1 > outsz)
					return -ENAMETOOLONG;
				memcpy(out, c2 + 1, plen);
				out[plen] = '\0';
				return 0;
			}
		}
		line = nl ? nl + 1 : NULL;
	}
	return -ENOENT;
}

int64_t size_cgroup_stat(const char *text, const char *key)
{
	size_t kl = strlen(key);
	for (const char *p = text; p && *p;) {
		if (!strncmp(p, key, kl) && p[kl] == ' ')
			return (int64_t)strtoll(p + kl + 1, NULL, 10);
		p = strchr(p, '\n');
		if (p)
			p++;
	}
	return -1;
}

/* Walk the cgroup at rel and its ancestors under base, keeping the level
 * with the least room. */
static void cgroup_walk(const char *base, const char *rel, int v2, size_cgroup_mem *best)
{
	const char *lim_name = v2 ? "memory.max" : "memory.limit_in_bytes";
	const char *use_name = v2 ? "memory.current" : "memory.usage_in_bytes";
	const char *stat_key = v2 ? "inactive_file" : "total_inactive_file";
	char path[1024], dir[768], buf[8192];
	snprintf(dir, sizeof dir, "%s", rel);
	for (;;) {
		size_t n = strlen(dir);
		while (n > 1 && dir[n - 1] == '/')
			dir[--n] = '\0';
		const char *d = strcmp(dir, "/") ? dir : "";
		snprintf(path, sizeof path, "%s%s/%s", base, d, lim_name);
		int64_t lim = read_small_file(path, buf, sizeof buf) == 0 ? size_cgroup_limit(buf) : -1;
		if (lim >= 0) {
			int64_t used = 0, rec = 0;
			snprintf(path, sizeof path, "%s%s/%s", base, d, use_name);
			if (read_small_file(path, buf, sizeof buf) == 0 && size_cgroup_limit(buf) > 0)
				used = size_cgroup_limit(buf);
			snprintf(path, sizeof path, "%s%s/memory.stat", base, d);
			if (read_small_file(path, buf, sizeof buf) == 0 && (rec = size_cgroup_stat(buf, stat_key)) < 0)
				rec = 0;
			int64_t room = lim - (used > rec ? used - rec : 0);
			int64_t best_room = best->limit < 0 ? 0
					    : best->limit - (best->usage > best->reclaimable ? best->usage - best->reclaimable : 0);
			if (best->limit < 0 || room < best_room)
				*best = (size_cgroup_mem){ lim, used, rec, v2 ? 2 : 1 };
		}
		char *slash = strrchr(dir, '/');
		if (!slash || !strcmp(dir, "/"))
			break;
		if (slash == dir)
			dir[1] = '\0';
		else
			*slash = '\0';
	}
}

int size_cgroup_memory(const char *root, const char *text, size_cgroup_mem *out)
{
	char rel[768], base[1024];
	*out = (size_cgroup_mem){ -1, 0, 0, 0 };
	if (size_cgroup_path(text, 1, rel, sizeof rel) == 0)
		cgroup_walk(root, rel, 1, out);
	if (out->limit < 0 && size_cgroup_path(text, 0, rel, sizeof rel) == 0) {
		snprintf(base, sizeof base, "%s/memory", root);
		cgroup_walk(base, rel, 0, out);
	}
	if (out->limit < 0) /* no /proc/self/cgroup entry: a namespaced root */
		cgroup_walk(root, "/", 1, out);
	return out->limit >= 0 ? 0 : -ENOENT;
}

int size_cgroup_self(size_cgroup_mem *out)
{
	char buf[4096];
	if (read_small_file("/proc/self/cgroup", buf, sizeof buf) != 0)
		buf[0] = '\0';
	return size_cgroup_memory("/sys/fs/cgroup", buf, out);
}

int64_t size_mem_available(void)
{
	char buf[4096];
	int64_t avail = -1;
	if (read_small_file("/proc/meminfo", buf, sizeof buf) == 0)
		avail = size_meminfo_available(buf);
	if (read_small_file("/proc/self/cgroup", buf, sizeof buf) != 0)
		buf[0] = '\0';
	size_cgroup_mem m;
	if (size_cgroup_memory("/sys/fs/cgroup", buf, &m) == 0) {
		int64_t used = m.usage > m.reclaimable ? m.usage - m.reclaimable : 0;
		int64_t room = m.limit > used ? m.limit - used : 0;
		if (avail < 0 || room < avail)
			avail = room;
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
