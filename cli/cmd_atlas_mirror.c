/* cmd_atlas_mirror.c - `coli atlas --plan-mirror SIZE [MODEL]`: the expert
 * records that serve the largest share of reads within SIZE bytes, their
 * shard byte ranges and the expected share; with --write DIR, the partial
 * mirror itself (format and layout: src/expert_store_mirror.c).
 *
 * Reads: the learned routing heat (CACHE_DIR/hot-experts/heat.bin, or
 * --heat FILE) or a counts file (--counts FILE: CSV lines
 * "layer,expert,count", or JSON [{"layer","expert","count"}, ...] or
 * [[layer, expert, count], ...]). A record's expected reads are its
 * weight; the plan takes the heaviest records that fit, and the expected
 * share is their weight over the total. Records the RAM tiers keep serve
 * no disk read: --pin-budget SIZE leaves out the records the pinned set
 * would hold (the hottest that fit, seen more than about once: heat >=
 * 1.5, as expert_store_heat.c chooses) and counts the share over the
 * reads left. The cache's share is not modelled: the share is that of the
 * reads of a run without a cache (the test runs with --expert-cache 0).
 *
 * --write DIR: the old plan is removed first (DIR is then no mirror at
 * all), each planned layer's sparse shard is written beside its final
 * name, fsynced and renamed, DIR/partial is fsynced, and the plan is
 * written last with util_file's crash-safe replace: a crash leaves DIR
 * either without a plan (unused) or with a complete copy. Records are
 * checked against the manifest's CRC-32C before they are copied. */
#include "config.h"

#include "cmd_atlas_mirror.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "cli_print.h"
#include "expert_store.h"
#include "expert_store_mirror.h"
#include "kv_cache_dir.h"
#include "model_container.h"
#include "model_dir.h"
#include "util_crc32c.h"
#include "util_file.h"
#include "util_size_parse.h"

#define CMD "atlas"

typedef struct rank {
	double w;
	int32_t id;
} rank;

static int rank_cmp(const void *a, const void *b)
{
	const rank *x = a, *y = b;
	if (x->w != y->w)
		return x->w < y->w ? 1 : -1;
	return (x->id > y->id) - (x->id < y->id);
}

static void usage(FILE *f)
{
	fprintf(f, "usage: coli atlas --plan-mirror SIZE [MODEL] [--heat FILE | --counts FILE]\n"
		   "                  [--cache-dir DIR] [--pin-budget SIZE] [--write DIR] [--json]\n"
		   "The expert records a mirror of SIZE bytes should hold to serve the largest\n"
		   "share of reads, their shard byte ranges and the expected share.\n"
		   "  --heat FILE      routing heat to plan from (default CACHE_DIR/hot-experts/heat.bin)\n"
		   "  --counts FILE    reads per record instead: CSV layer,expert,count or JSON\n"
		   "  --cache-dir DIR  the cache directory whose heat to use (COLI_CACHE_DIR)\n"
		   "  --pin-budget SIZE  leave out the hottest records a pinned set of SIZE holds\n"
		   "  --write DIR      copy the planned records into DIR, a partial mirror for --mirror\n"
		   "  --json           the plan as JSON\n");
}

/* counts file -> w[l * E + e] += count */
static int load_counts(const char *path, const coli_container *c, double *w, coli_err *err)
{
	const int L = c->config.num_hidden_layers, E = c->config.n_routed_experts;
	FILE *f = fopen(path, "rb");
	if (!f)
		return coli_err_set(err, -errno, "%s: %s", path, strerror(errno));
	int ch;
	while ((ch = fgetc(f)) == ' ' || ch == '\n' || ch == '\t' || ch == '\r')
		;
	ungetc(ch, f);
	int rc = 0;
	if (ch == '[' || ch == '{') {
		json_error_t je;
		json_t *root = json_loadf(f, 0, &je);
		json_t *arr = json_is_object(root) ? json_object_get(root, "counts") : root;
		if (!json_is_array(arr)) {
			rc = coli_err_set(err, -EINVAL, "%s: %s", path, root ? "expected an array of counts" : je.text);
		} else {
			size_t i;
			json_t *it;
			json_array_foreach(arr, i, it) {
				json_t *jl = json_is_array(it) ? json_array_get(it, 0) : json_object_get(it, "layer");
				json_t *je2 = json_is_array(it) ? json_array_get(it, 1) : json_object_get(it, "expert");
				json_t *jc = json_is_array(it) ? json_array_get(it, 2) : json_object_get(it, "count");
				long l = json_is_integer(jl) ? (long)json_integer_value(jl) : -1;
				long e = json_is_integer(je2) ? (long)json_integer_value(je2) : -1;
				if (l < 0 || l >= L || e < 0 || e >= E || !json_is_number(jc) || json_number_value(jc) < 0) {
					rc = coli_err_set(err, -EINVAL, "%s: entry %zu: not a layer, expert and count of this model",
							  path, i);
					break;
				}
				w[(size_t)l * (size_t)E + (size_t)e] += json_number_value(jc);
			}
		}
		json_decref(root);
	} else {
		char line[512];
		for (int n = 1; fgets(line, sizeof line, f); n++) {
			long l, e;
			double cnt;
			char *p = line + strspn(line, " \t");
			if (*p == '#' || *p == '\n' || *p == '\r' || !*p)
				continue;
			if (sscanf(p, "%ld , %ld , %lf", &l, &e, &cnt) != 3) {
				if (n == 1)
					continue; /* a header line */
				rc = coli_err_set(err, -EINVAL, "%s:%d: expected layer,expert,count", path, n);
				break;
			}
			if (l < 0 || l >= L || e < 0 || e >= E || cnt < 0) {
				rc = coli_err_set(err, -EINVAL, "%s:%d: layer %ld expert %ld is not in this model", path, n, l, e);
				break;
			}
			w[(size_t)l * (size_t)E + (size_t)e] += cnt;
		}
	}
	fclose(f);
	return rc;
}

/* Copy the planned records of layer l into DIR/<file> (sparse). */
static int write_shard(const char *dir, const coli_container *c, const expert_mirror_plan *p, int l, coli_err *err)
{
	const size_t rs = c->expert_record_size;
	const int E = c->config.n_routed_experts;
	char dst[4096], tmp[4200];
	snprintf(dst, sizeof dst, "%s/%s", dir, p->files[l]);
	snprintf(tmp, sizeof tmp, "%s.tmp.%ld", dst, (long)getpid());
	int in = open(c->expert_shard_paths[l], O_RDONLY | O_CLOEXEC);
	int out = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	unsigned char *buf = malloc(rs);
	int rc = 0;
	if (in < 0 || out < 0 || !buf) {
		rc = coli_err_set(err, -errno, "%s: %s", in < 0 ? c->expert_shard_paths[l] : tmp,
				  buf ? strerror(errno) : "out of memory");
		goto out;
	}
	if (ftruncate(out, (off_t)c->expert_shard_sizes[l])) {
		rc = coli_err_set(err, -errno, "%s: %s", tmp, strerror(errno));
		goto out;
	}
	for (int e = 0; e < E; e++) {
		if (!p->has[(size_t)l * (size_t)E + (size_t)e])
			continue;
		off_t off = (off_t)coli_container_expert_offset(c, e);
		if (pread(in, buf, rs, off) != (ssize_t)rs) {
			rc = coli_err_set(err, -EIO, "%s: short read at offset %lld", c->expert_shard_paths[l], (long long)off);
			goto out;
		}
		if (c->expert_crc && c->expert_crc[l] && crc32c_update(0, buf, rs) != c->expert_crc[l][e]) {
			rc = coli_err_set(err, -EILSEQ, "%s: layer %d expert %d fails its CRC-32C: not copied (coli doctor --verify)",
					  c->expert_shard_paths[l], l, e);
			goto out;
		}
		if (pwrite(out, buf, rs, off) != (ssize_t)rs) {
			rc = coli_err_set(err, -errno ? -errno : -EIO, "%s: %s", tmp, strerror(errno ? errno : EIO));
			goto out;
		}
	}
	if (fsync(out)) {
		rc = coli_err_set(err, -errno, "%s: fsync: %s", tmp, strerror(errno));
		goto out;
	}
	if (rename(tmp, dst))
		rc = coli_err_set(err, -errno, "%s: rename: %s", dst, strerror(errno));
out:
	if (in >= 0)
		close(in);
	if (out >= 0)
		close(out);
	if (rc)
		unlink(tmp);
	free(buf);
	return rc;
}

static int write_mirror(const char *dir, const coli_container *c, const expert_mirror_plan *p,
			int64_t *allocated, coli_err *err)
{
	char path[4096];
	int rc;
	*allocated = 0;
	if (mkdir(dir, 0755) && errno != EEXIST)
		return coli_err_set(err, -errno, "%s: %s", dir, strerror(errno));
	snprintf(path, sizeof path, "%s/%s", dir, EXPERT_MIRROR_PLAN_FILE);
	if (unlink(path) == 0 && (rc = coli_fsync_dir(dir, err)))
		return rc;
	snprintf(path, sizeof path, "%s/%s", dir, EXPERT_MIRROR_PART_DIR);
	if (mkdir(path, 0755) && errno != EEXIST)
		return coli_err_set(err, -errno, "%s: %s", path, strerror(errno));
	for (int l = 0; l < p->n_layers; l++) {
		if (!p->files[l])
			continue;
		if ((rc = write_shard(dir, c, p, l, err)))
			return rc;
		char f[4096];
		struct stat st;
		snprintf(f, sizeof f, "%s/%s", dir, p->files[l]);
		if (!stat(f, &st))
			*allocated += (int64_t)st.st_blocks * 512;
	}
	if ((rc = coli_fsync_dir(path, err)))
		return rc;
	return expert_mirror_plan_save(dir, c, p, err);
}

/* The next run of consecutive planned experts of layer l from *e on:
 * experts [*first, *e) and 1 (*e is then past it), or 0 when none is left. */
static int next_run(const expert_mirror_plan *p, int l, int *e, int *first)
{
	const uint8_t *has = p->has + (size_t)l * (size_t)p->n_experts;
	while (*e < p->n_experts && !has[*e])
		(*e)++;
	if (*e >= p->n_experts)
		return 0;
	*first = *e;
	while (*e < p->n_experts && has[*e])
		(*e)++;
	return 1;
}

static void print_ranges(FILE *o, const coli_container *c, const expert_mirror_plan *p, int l)
{
	for (int e = 0, f; next_run(p, l, &e, &f);)
		fprintf(o, " [%llu, %llu)", (unsigned long long)coli_container_expert_offset(c, f),
			(unsigned long long)coli_container_expert_offset(c, e));
}

static json_t *plan_json(const coli_container *c, const expert_mirror_plan *p, const double *w, double total,
			 int64_t size, int64_t all)
{
	const int E = p->n_experts;
	json_t *o = json_object(), *layers = json_array();
	json_object_set_new(o, "size", json_integer(size));
	json_object_set_new(o, "records", json_integer(p->n_records));
	json_object_set_new(o, "bytes", json_integer((json_int_t)p->bytes));
	json_object_set_new(o, "total_records", json_integer(all));
	json_object_set_new(o, "record_size", json_integer((json_int_t)p->record_size));
	json_object_set_new(o, "expected_share", json_real(p->share));
	json_object_set_new(o, "source", json_string(p->source));
	for (int l = 0; l < p->n_layers; l++) {
		if (!p->files[l])
			continue;
		json_t *ly = json_object(), *ex = json_array(), *rg = json_array();
		double lw = 0;
		for (int e = 0; e < E; e++) {
			size_t id = (size_t)l * (size_t)E + (size_t)e;
			if (!p->has[id])
				continue;
			lw += w[id];
			json_array_append_new(ex, json_integer(e));
		}
		for (int e = 0, f; next_run(p, l, &e, &f);)
			json_array_append_new(rg, json_pack("[II]", (json_int_t)coli_container_expert_offset(c, f),
							    (json_int_t)coli_container_expert_offset(c, e)));
		json_object_set_new(ly, "layer", json_integer(l));
		json_object_set_new(ly, "shard", json_string(c->expert_shard_paths[l]));
		json_object_set_new(ly, "file", json_string(p->files[l]));
		json_object_set_new(ly, "experts", ex);
		json_object_set_new(ly, "ranges", rg);
		json_object_set_new(ly, "share", json_real(total > 0 ? lw / total : 0));
		json_array_append_new(layers, ly);
	}
	json_object_set_new(o, "layers", layers);
	return o;
}

int cmd_atlas_plan_mirror(int argc, char **argv)
{
	const char *size_arg = NULL, *model_arg = NULL, *heat_arg = NULL, *counts_arg = NULL;
	const char *cache_arg = NULL, *write_arg = NULL, *pin_arg = NULL;
	int as_json = 0, status = COLI_EXIT_FAIL;
	for (int i = 1; i < argc; i++) /* anywhere, even where a SIZE would go */
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			usage(stdout);
			return COLI_EXIT_OK;
		}
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		int has = i + 1 < argc;
		if (!strcmp(a, "--plan-mirror") && !has) {
			break; /* no SIZE: said below */
		} else if (!strcmp(a, "--plan-mirror")) {
			size_arg = argv[++i];
		} else if (!strcmp(a, "--heat") && has) {
			heat_arg = argv[++i];
		} else if (!strcmp(a, "--counts") && has) {
			counts_arg = argv[++i];
		} else if (!strcmp(a, "--cache-dir") && has) {
			cache_arg = argv[++i];
		} else if (!strcmp(a, "--pin-budget") && has) {
			pin_arg = argv[++i];
		} else if (!strcmp(a, "--write") && has) {
			write_arg = argv[++i];
		} else if (!strcmp(a, "--json")) {
			as_json = 1;
		} else if (a[0] != '-' && !model_arg) {
			model_arg = a;
		} else {
			cli_errorf(CMD, "unexpected argument '%s' (see --help)", a);
			return COLI_EXIT_USAGE;
		}
	}
	coli_err err = { 0 };
	int64_t size = 0;
	if (!size_arg) {
		cli_errorf(CMD, "--plan-mirror SIZE is required (see --help)");
		return COLI_EXIT_USAGE;
	}
	if (heat_arg && counts_arg) {
		cli_errorf(CMD, "--heat and --counts exclude each other");
		return COLI_EXIT_USAGE;
	}
	if (size_parse(size_arg, "--plan-mirror", &size, &err) || size < 0) {
		cli_errorf(CMD, "%s", size < 0 && !err.msg[0] ? "--plan-mirror: give a size, not auto" : err.msg);
		return COLI_EXIT_USAGE;
	}
	int64_t pin = 0;
	if (pin_arg && (size_parse(pin_arg, "--pin-budget", &pin, &err) || pin < 0)) {
		cli_errorf(CMD, "%s", pin < 0 && !err.msg[0] ? "--pin-budget: give a size, not auto" : err.msg);
		return COLI_EXIT_USAGE;
	}
	char dir[4096], heat_path[4300];
	coli_container *c = NULL;
	coli_container_opts co = { .skip_load = 1 };
	double *w = NULL;
	rank *r = NULL;
	expert_mirror_plan *p = NULL;
	float *heat = NULL;
	if (coli_model_dir_resolve(model_arg, dir, sizeof dir, &err) || coli_container_open(dir, &co, &c, &err))
		goto fail;
	const int L = c->config.num_hidden_layers, E = c->config.n_routed_experts;
	const size_t n = (size_t)L * (size_t)E;
	w = calloc(n + 1, sizeof *w);
	r = malloc((n + 1) * sizeof *r);
	heat = calloc(n + 1, sizeof *heat);
	p = expert_mirror_plan_new(c);
	if (!w || !r || !heat || !p) {
		coli_err_set(&err, -ENOMEM, "out of memory");
		goto fail;
	}
	if (counts_arg) {
		if (load_counts(counts_arg, c, w, &err))
			goto fail;
		snprintf(p->source, sizeof p->source, "counts %.200s", counts_arg);
	} else {
		uint64_t tokens = 0;
		if (heat_arg) {
			snprintf(heat_path, sizeof heat_path, "%s", heat_arg);
		} else {
			char cd[4096];
			const char *env = getenv("COLI_CACHE_DIR");
			if (cache_arg || (env && *env))
				snprintf(cd, sizeof cd, "%s", cache_arg ? cache_arg : env);
			else if (kv_cache_dir(dir, cd, sizeof cd, &err))
				goto fail;
			snprintf(heat_path, sizeof heat_path, "%s/hot-experts/heat.bin", cd);
		}
		if (expert_heat_read(heat_path, c, heat, &tokens, &err))
			goto fail;
		for (size_t i = 0; i < n; i++)
			w[i] = heat[i];
		snprintf(p->source, sizeof p->source, "heat %.200s (%llu tokens)", heat_path, (unsigned long long)tokens);
	}
	size_t m = 0;
	int64_t all = 0;
	double total = 0;
	for (int l = 0; l < L; l++) {
		if (!c->expert_shard_paths[l])
			continue;
		all += E;
		for (int e = 0; e < E; e++) {
			size_t id = (size_t)l * (size_t)E + (size_t)e;
			total += w[id];
			if (w[id] > 0)
				r[m++] = (rank){ w[id], (int32_t)id };
		}
	}
	if (total <= 0) {
		coli_err_set(&err, -ENODATA, "%s records no reads: run a workload first", p->source);
		goto fail;
	}
	if ((uint64_t)size < c->expert_record_size) {
		char b[32];
		cli_errorf(CMD, "--plan-mirror %s is smaller than one expert record (%s)", size_arg,
			   size_format((int64_t)c->expert_record_size, b, sizeof b));
		status = COLI_EXIT_USAGE;
		goto out;
	}
	qsort(r, m, sizeof *r, rank_cmp);
	/* the pinned set: never read from disk */
	size_t k0 = 0;
	for (; k0 < m && k0 < (uint64_t)pin / c->expert_record_size && r[k0].w >= 1.5; k0++)
		total -= r[k0].w;
	if (k0)
		snprintf(p->source + strlen(p->source), sizeof p->source - strlen(p->source),
			 ", %zu pinned records left out", k0);
	if (total <= 0) {
		coli_err_set(&err, -ENODATA, "every read recorded is of a pinned record (--pin-budget %s)", pin_arg);
		goto fail;
	}
	double got = 0;
	for (size_t k = k0; k < m && p->bytes + c->expert_record_size <= (uint64_t)size; k++) {
		if (expert_mirror_plan_add(p, c, r[k].id / E, r[k].id % E)) {
			coli_err_set(&err, -ENOMEM, "out of memory");
			goto fail;
		}
		got += r[k].w;
	}
	p->share = got / total;
	int64_t allocated = -1;
	if (write_arg && write_mirror(write_arg, c, p, &allocated, &err))
		goto fail;
	char b1[32], b2[32], b3[32];
	if (as_json) {
		json_t *o = plan_json(c, p, w, total, size, all);
		if (write_arg) {
			json_object_set_new(o, "written", json_string(write_arg));
			json_object_set_new(o, "allocated_bytes", json_integer(allocated));
		}
		cli_print_json(o, JSON_INDENT(2));
	} else {
		printf("mirror plan: %lld of %lld records (%s of %s), expected share %.1f%% of reads (%s)\n",
		       (long long)p->n_records, (long long)all, size_format((int64_t)p->bytes, b1, sizeof b1),
		       size_format(all * (int64_t)c->expert_record_size, b2, sizeof b2), 100.0 * p->share, p->source);
		for (int l = 0; l < L; l++) {
			if (!p->files[l])
				continue;
			double lw = 0;
			int k = 0;
			for (int e = 0; e < E; e++)
				if (p->has[(size_t)l * (size_t)E + (size_t)e]) {
					lw += w[(size_t)l * (size_t)E + (size_t)e];
					k++;
				}
			printf("layer %d %s: %d records, %.1f%% of reads; experts", l, c->expert_shard_paths[l], k,
			       100.0 * lw / total);
			for (int e = 0, first = 1; e < E; e++)
				if (p->has[(size_t)l * (size_t)E + (size_t)e]) {
					printf("%c%d", first ? ' ' : ',', e);
					first = 0;
				}
			printf("; bytes");
			print_ranges(stdout, c, p, l);
			putchar('\n');
		}
		if (write_arg)
			printf("wrote %s: %s of records, %s allocated on disk; use it with --mirror %s\n", write_arg,
			       size_format((int64_t)p->bytes, b1, sizeof b1), size_format(allocated, b3, sizeof b3),
			       write_arg);
	}
	status = COLI_EXIT_OK;
	goto out;
fail:
	cli_errorf(CMD, "%s", err.msg);
	status = COLI_EXIT_FAIL;
out:
	expert_mirror_plan_free(p);
	free(heat);
	free(r);
	free(w);
	coli_container_free(c);
	return status;
}
