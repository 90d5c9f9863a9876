/* util_size_parse.h - human byte sizes for flags and environment variables.
 *
 * Accepted forms (case-insensitive, optional spaces between number and unit):
 *   "0"                       zero (e.g. --expert-cache 0 = no cache)
 *   "4096", "512K", "512KB", "512KiB", "8G", "8GB", "1.5GiB", "2T"
 *                             K/M/G/T are powers of 1024 (KB = KiB: memory
 *                             budgets are counted in pages, not in SI units)
 *   "25%"                     percent of available memory (MemAvailable,
 *                             capped by the cgroup limit when one is set)
 *   "auto"                    -1: the caller picks (see size_mem_available)
 * Pure parsing is split from the /proc reading so tests can pass a fixed
 * "available" figure. */
#ifndef COLI_SIZE_PARSE_H
#define COLI_SIZE_PARSE_H

#include <stddef.h>
#include <stdint.h>

#include "coli_err.h"

/* Parse `s` into *out (bytes, or -1 for "auto"). Percentages use
 * avail_bytes. Returns 0 or -EINVAL/-ERANGE with err naming `what`
 * (a flag or variable name, may be NULL). */
int size_parse_with(const char *s, int64_t avail_bytes, const char *what,
		    int64_t *out, coli_err *err);

/* Same, with percentages of size_mem_available(). */
int size_parse(const char *s, const char *what, int64_t *out, coli_err *err);

/* Memory the process can still use: MemAvailable from /proc/meminfo, capped
 * by the room left in this process's memory cgroup and its ancestors (v2
 * memory.max - memory.current, or v1 limit_in_bytes - usage_in_bytes, each
 * plus the inactive page cache the kernel reclaims first).
 * Returns bytes, or a negative errno when nothing could be read. */
int64_t size_mem_available(void);

/* Testable cores of size_mem_available: parse a /proc/meminfo text and a
 * cgroup limit file's text ("max" or a number). Return -1 when absent. */
int64_t size_meminfo_available(const char *meminfo_text);
int64_t size_cgroup_limit(const char *limit_text);
/* The memory cgroup of this process from /proc/self/cgroup text: the
 * v2 ("0::/path", v2 = 1) or v1 ("N:...memory...:/path") entry. Limits of
 * that cgroup and of every ancestor apply. 0, or -ENOENT when absent. */
int size_cgroup_path(const char *proc_cgroup_text, int v2, char *out, size_t outsz);

/* The value of KEY in a memory.stat text ("KEY N" lines), -1 if absent. */
int64_t size_cgroup_stat(const char *stat_text, const char *key);

/* This process's memory cgroup, read under ROOT (normally /sys/fs/cgroup;
 * v1 under ROOT/memory) for the cgroup named in PROC_CGROUP_TEXT (the
 * text of /proc/self/cgroup): of that cgroup and its ancestors, the level
 * with the least room (limit - usage + inactive page cache) gives limit,
 * usage and reclaimable (memory.stat inactive_file, v1
 * total_inactive_file). 0, or -ENOENT (limit -1) when no level has a
 * limit. */
typedef struct size_cgroup_mem {
	int64_t limit, usage, reclaimable;
	int version; /* 1 or 2 */
} size_cgroup_mem;
int size_cgroup_memory(const char *root, const char *proc_cgroup_text, size_cgroup_mem *out);
/* The same for this process (/proc/self/cgroup under /sys/fs/cgroup). */
int size_cgroup_self(size_cgroup_mem *out);

/* Format bytes as "512 MiB", "19.0 MiB", "8.00 GiB" into buf. */
const char *size_format(int64_t bytes, char *buf, int bufsize);

#endif
