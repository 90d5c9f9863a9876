/* cmd_sessions.c - `coli sessions`: list, inspect and manage KV sessions.
 *
 * Needs no model: the fingerprint is the sha256 of DIR/manifest.json, and
 * everything else comes from the .kv files (see colitop-kv(5)). */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "kv_cache_dir.h"
#include "cli.h"
#include "cli_print.h"
#include "kv_file.h"
#include "kv_store.h"
#include "util_size_parse.h"
#include "model_dir.h"
#include "util_sha256.h"

#define CMD "sessions"
#define DEFAULT_BUDGET "32G"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: coli sessions [DIR] [--cache-dir PATH] [--json] [--] COMMAND\n"
		"  list                 sessions with tokens, size, model and last use (default)\n"
		"  show NAME            header, per-record summary and checks of one session\n"
		"  rm NAME              remove a session\n"
		"  rename OLD NEW       rename (refuses to overwrite)\n"
		"  gc [--budget SIZE]   evict least recently used sessions until the total\n"
		"                       is at most SIZE (default $COLI_KV_BUDGET, else " DEFAULT_BUDGET ")\n"
		"DIR defaults to $COLI_MODEL, then the default model. Sessions live in\n"
		"CACHE_DIR/kv; CACHE_DIR is --cache-dir, else $COLI_CACHE_DIR, else\n"
		"${XDG_CACHE_HOME:-~/.cache}/colitop/NAME (NAME: the model directory's name).\n"
		"After --, every argument is a name: coli sessions rm -- -rf\n");
}

static void human(uint64_t b, char *out, size_t cap)
{
	const char *u[] = { "B", "KiB", "MiB", "GiB", "TiB" };
	double v = (double)b;
	int i = 0;
	while (v >= 1024 && i < 4) {
		v /= 1024;
		i++;
	}
	if (i == 0)
		snprintf(out, cap, "%" PRIu64 " B", b);
	else
		snprintf(out, cap, "%.1f %s", v, u[i]);
}

static const char *status_name(int st)
{
	switch (st) {
	case KV_FILE_OK: return "ok";
	case KV_FILE_TORN: return "torn-tail";
	case KV_FILE_CORRUPT: return "corrupt";
	default: return "unreadable";
	}
}

static void print_json(json_t *j)
{
	cli_print_json(j, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
}

static void fmt_time(time_t t, char *out, size_t cap)
{
	struct tm tm;
	if (!localtime_r(&t, &tm) || !strftime(out, cap, "%Y-%m-%d %H:%M", &tm))
		snprintf(out, cap, "%lld", (long long)t);
}

static int do_list(const char *kvdir, const char *fp, int json)
{
	kv_store_entry *v;
	int n;
	coli_err err = { 0 };
	if (kv_store_list(kvdir, &v, &n, &err) < 0) {
		cli_errorf(CMD, "%s", err.msg);
		return COLI_EXIT_FAIL;
	}
	uint64_t total = 0;
	for (int i = 0; i < n; i++)
		total += v[i].bytes;
	if (json) {
		json_t *arr = json_array();
		for (int i = 0; i < n; i++) {
			const kv_store_entry *e = &v[i];
			json_array_append_new(arr, json_pack("{s:s, s:i, s:I, s:I, s:s, s:s, s:o, s:i, s:i, s:b}",
				"name", e->name, "tokens", e->n_tokens, "bytes", (json_int_t)e->bytes,
				"mtime", (json_int_t)e->mtime, "status", status_name(e->status),
				"fingerprint", e->fingerprint,
				"model_match", fp && e->status >= 0 ? json_boolean(!strcmp(fp, e->fingerprint)) : json_null(),
				"layers", (int)e->n_layers, "width", (int)e->width, "in_use", e->locked));
		}
		print_json(json_pack("{s:s, s:o, s:I, s:o}", "kv_dir", kvdir,
				     "model_fingerprint", fp ? json_string(fp) : json_null(),
				     "total_bytes", (json_int_t)total, "sessions", arr));
	} else if (n == 0) {
		printf("no sessions in %s\n", kvdir);
	} else {
		printf("%-24s %9s %10s  %-12s  %-16s %s\n", "NAME", "TOKENS", "SIZE", "MODEL", "LAST USED", "STATE");
		for (int i = 0; i < n; i++) {
			const kv_store_entry *e = &v[i];
			char sz[32], tm[32], model[16];
			human(e->bytes, sz, sizeof sz);
			fmt_time(e->mtime, tm, sizeof tm);
			snprintf(model, sizeof model, "%.12s", e->status >= 0 ? e->fingerprint : "?");
			printf("%-24s %9d %10s  %-12s  %-16s %s%s%s\n", e->name, e->n_tokens, sz, model, tm,
			       status_name(e->status), e->locked ? ",in-use" : "",
			       fp && e->status >= 0 && strcmp(fp, e->fingerprint) ? ",other-model" : "");
		}
		char t[32];
		human(total, t, sizeof t);
		printf("%d session%s, %s in %s\n", n, n == 1 ? "" : "s", t, kvdir);
	}
	free(v);
	return COLI_EXIT_OK;
}

static int do_show(const char *kvdir, const char *name, const char *fp, int json)
{
	char path[PATH_MAX];
	coli_err err = { 0 };
	kv_file_report rep;
	struct stat st;
	if (kv_store_path(kvdir, name, "kv", path, sizeof path, &err) < 0) {
		cli_errorf(CMD, "%s", err.msg);
		return COLI_EXIT_USAGE;
	}
	if (kv_file_inspect(path, KV_INSPECT_VERIFY | KV_INSPECT_RECORDS, &rep, &err) < 0) {
		cli_errorf(CMD, "%s", err.code == -ENOENT ? "no such session" : err.msg);
		if (err.code == -ENOENT)
			fprintf(stderr, "  (looked for %s)\n", path);
		return COLI_EXIT_FAIL;
	}
	time_t mtime = stat(path, &st) == 0 ? st.st_mtime : 0;
	/* version 3: index keys of the full indexer layers besides the rows */
	uint64_t cfg_bpt = ((uint64_t)rep.hdr.n_layers * rep.hdr.width +
			    (uint64_t)rep.hdr.index_layers * rep.hdr.index_width) * 4u, dead = 0;
	for (int i = 0; i < rep.n_recs; i++) /* what compaction would reclaim */
		dead += rep.recs[i].type == KV_REC_TRUNCATE ? rep.recs[i].bytes :
			rep.recs[i].live == 0 ? rep.recs[i].bytes :
			(uint64_t)(rep.recs[i].n - rep.recs[i].live) * (cfg_bpt + 4u);
	double disk_bpt = rep.n_tokens ? (double)rep.file_bytes / rep.n_tokens : 0;
	if (json) {
		json_t *recs = json_array();
		for (int i = 0; i < rep.n_recs; i++) {
			const kv_record_info *r = &rep.recs[i];
			json_array_append_new(recs, json_pack("{s:I, s:I, s:s, s:i, s:i, s:i}",
				"offset", (json_int_t)r->offset, "bytes", (json_int_t)r->bytes,
				"type", r->type == KV_REC_DATA ? "data" : "truncate",
				"first", (int)r->first, "n", (int)r->n, "live", (int)r->live));
		}
		print_json(json_pack("{s:s, s:s, s:i, s:s, s:o, s:I, s:I, s:i, s:i, s:i, s:i, s:s, s:i, s:I, s:I, s:I, s:s, s:s, s:I, s:f, s:o}",
			"name", name, "path", path, "version", (int)rep.hdr.version,
			"fingerprint", rep.hdr.fingerprint,
			"model_match", fp ? json_boolean(!strcmp(fp, rep.hdr.fingerprint)) : json_null(),
			"created", (json_int_t)rep.hdr.created, "mtime", (json_int_t)mtime,
			"layers", (int)rep.hdr.n_layers, "width", (int)rep.hdr.width,
			"index_width", (int)rep.hdr.index_width, "index_layers", (int)rep.hdr.index_layers,
			"elem", "f32",
			"tokens", rep.n_tokens, "bytes", (json_int_t)rep.file_bytes,
			"valid_bytes", (json_int_t)rep.valid_bytes, "dead_bytes", (json_int_t)dead,
			"status", status_name(rep.status),
			"problem", rep.problem, "bytes_per_token_config", (json_int_t)cfg_bpt,
			"bytes_per_token_on_disk", disk_bpt, "records", recs));
	} else {
		char sz[32], tc[32], tm[32];
		human(rep.file_bytes, sz, sizeof sz);
		fmt_time((time_t)rep.hdr.created, tc, sizeof tc);
		fmt_time(mtime, tm, sizeof tm);
		printf("session      %s\nfile         %s\nformat       version %u, f32\n", name, path, rep.hdr.version);
		printf("model        %s%s\n", rep.hdr.fingerprint,
		       fp ? (strcmp(fp, rep.hdr.fingerprint) ? " (another model)" : " (this model)") : "");
		printf("shape        %u layers x %u numbers per token", rep.hdr.n_layers, rep.hdr.width);
		if (rep.hdr.index_layers)
			printf(" + %u layers' DSA indexer keys x %u", rep.hdr.index_layers, rep.hdr.index_width);
		else if (rep.hdr.index_width)
			printf(" (the last %u: DSA indexer key)", rep.hdr.index_width);
		printf("\n");
		printf("tokens       %d\nsize         %s (%" PRIu64 " bytes, %" PRIu64 " no longer in the history)\n",
		       rep.n_tokens, sz, rep.file_bytes, dead);
		printf("per token    %" PRIu64 " bytes of KV by the config; %.0f bytes on disk\n", cfg_bpt, disk_bpt);
		printf("created      %s\nlast used    %s\n", tc, tm);
		printf("state        %s%s%s\n", status_name(rep.status), rep.problem[0] ? ": " : "", rep.problem);
		printf("records      %d\n", rep.n_recs);
		for (int i = 0; i < rep.n_recs; i++) {
			const kv_record_info *r = &rep.recs[i];
			if (rep.n_recs > 40 && i == 20) {
				printf("  ... %d more ...\n", rep.n_recs - 40);
				i = rep.n_recs - 20;
				r = &rep.recs[i];
			}
			if (r->type == KV_REC_DATA)
				printf("  @%-12" PRIu64 " data      tokens %u..%u (%u live) %" PRIu64 " bytes\n",
				       r->offset, r->first, r->first + r->n - 1, r->live, r->bytes);
			else
				printf("  @%-12" PRIu64 " truncate  keep %u tokens\n", r->offset, r->first);
		}
	}
	int rc = rep.status == KV_FILE_CORRUPT ? COLI_EXIT_FAIL : COLI_EXIT_OK;
	if (rc)
		cli_errorf(CMD, "%s: %s", path, rep.problem);
	kv_file_report_free(&rep);
	return rc;
}

static int do_rm(const char *kvdir, const char *name, int json)
{
	coli_err err = { 0 };
	if (kv_store_rm(kvdir, name, &err) < 0) {
		cli_errorf(CMD, "%s", err.msg);
		return err.code == -EINVAL ? COLI_EXIT_USAGE : COLI_EXIT_FAIL;
	}
	if (json)
		print_json(json_pack("{s:s}", "removed", name));
	return COLI_EXIT_OK;
}

static int do_rename(const char *kvdir, const char *a, const char *b, int json)
{
	coli_err err = { 0 };
	if (kv_store_rename(kvdir, a, b, &err) < 0) {
		cli_errorf(CMD, "%s", err.msg);
		return err.code == -EINVAL ? COLI_EXIT_USAGE : COLI_EXIT_FAIL;
	}
	if (json)
		print_json(json_pack("{s:s, s:s}", "renamed", a, "to", b));
	return COLI_EXIT_OK;
}

static int do_gc(const char *kvdir, const char *budget_s, int json)
{
	uint64_t budget, freed, left;
	int64_t v = -1;
	int removed;
	coli_err err = { 0 };
	if (!budget_s)
		budget_s = getenv("COLI_KV_BUDGET") && *getenv("COLI_KV_BUDGET") ? getenv("COLI_KV_BUDGET") : DEFAULT_BUDGET;
	/* a disk budget: sizes only (a percentage would be of RAM) */
	if (strchr(budget_s, '%') || size_parse(budget_s, "--budget", &v, &err) < 0 || v < 0) {
		cli_errorf(CMD, "--budget: bad size '%s' (e.g. 500M, 20G)", budget_s);
		return COLI_EXIT_USAGE;
	}
	budget = (uint64_t)v;
	if (kv_store_gc(kvdir, budget, &removed, &freed, &left, &err) < 0) {
		cli_errorf(CMD, "%s", err.msg);
		return COLI_EXIT_FAIL;
	}
	if (json) {
		print_json(json_pack("{s:I, s:i, s:I, s:I}", "budget", (json_int_t)budget, "removed", removed,
				     "bytes_freed", (json_int_t)freed, "bytes_left", (json_int_t)left));
	} else {
		char a[32], b[32], c[32];
		human(freed, a, sizeof a);
		human(left, b, sizeof b);
		human(budget, c, sizeof c);
		printf("removed %d session%s (%s); %s left, budget %s%s\n", removed, removed == 1 ? "" : "s",
		       a, b, c, left > budget ? " (sessions in use were kept)" : "");
	}
	return COLI_EXIT_OK;
}

static int is_subcommand(const char *s)
{
	return !strcmp(s, "list") || !strcmp(s, "show") || !strcmp(s, "rm") ||
	       !strcmp(s, "rename") || !strcmp(s, "gc");
}

int cmd_sessions(int argc, char **argv)
{
	const char *cache_opt = NULL, *budget = NULL, *pos[4];
	int npos = 0, json = 0, only_names = 0;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (only_names) {
			/* after "--": names, even one like "-rf" */
			if (npos >= 4) {
				cli_errorf(CMD, "too many arguments");
				return COLI_EXIT_USAGE;
			}
			pos[npos++] = a;
		} else if (!strcmp(a, "--")) {
			only_names = 1;
		} else if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			usage(stdout);
			return COLI_EXIT_OK;
		} else if (!strcmp(a, "--json")) {
			json = 1;
		} else if (!strcmp(a, "--cache-dir") || !strcmp(a, "--budget")) {
			if (i + 1 >= argc) {
				cli_errorf(CMD, "%s needs a value", a);
				return COLI_EXIT_USAGE;
			}
			*(a[2] == 'c' ? &cache_opt : &budget) = argv[++i];
		} else if (!strncmp(a, "--cache-dir=", 12)) {
			cache_opt = a + 12;
		} else if (!strncmp(a, "--budget=", 9)) {
			budget = a + 9;
		} else if (a[0] == '-' && a[1]) {
			cli_errorf(CMD, "unknown option '%s' (a session of that name: put -- before it, "
				   "as in 'coli sessions rm -- %s')", a, a);
			return COLI_EXIT_USAGE;
		} else if (npos < 4) {
			pos[npos++] = a;
		} else {
			cli_errorf(CMD, "too many arguments");
			return COLI_EXIT_USAGE;
		}
	}
	const char *model_arg = NULL;
	int p = 0;
	if (npos > 0 && !is_subcommand(pos[0]))
		model_arg = pos[p++];
	const char *sub = p < npos ? pos[p++] : "list";
	int nargs = npos - p;
	int need = !strcmp(sub, "show") || !strcmp(sub, "rm") ? 1 : !strcmp(sub, "rename") ? 2 : 0;
	if (!is_subcommand(sub) || nargs != need || (budget && strcmp(sub, "gc"))) {
		if (!is_subcommand(sub))
			cli_errorf(CMD, "unknown subcommand '%s'", sub);
		else if (budget && strcmp(sub, "gc"))
			cli_errorf(CMD, "--budget applies to gc only");
		else
			cli_errorf(CMD, "%s takes %d argument%s", sub, need, need == 1 ? "" : "s");
		usage(stderr);
		return COLI_EXIT_USAGE;
	}

	char cache[PATH_MAX], kvdir[PATH_MAX + 4], fp[65], *fpp = NULL, model_buf[PATH_MAX];
	const char *model = NULL;
	coli_err err = { 0 };
	/* The same model the engine would run (DIR, $COLI_MODEL, the default
	 * model), so both agree on the cache dir. With an explicit cache dir a
	 * model is optional: it only adds the fingerprint comparison. */
	int explicit_cache = cache_opt || (getenv("COLI_CACHE_DIR") && *getenv("COLI_CACHE_DIR"));
	if (coli_model_dir_resolve(model_arg, model_buf, sizeof model_buf, &err) == 0) {
		model = model_buf;
	} else if (!explicit_cache) {
		cli_errorf(CMD, "%s", err.msg);
		return COLI_EXIT_FAIL;
	}
	if (cache_opt) {
		if (!*cache_opt || strlen(cache_opt) >= sizeof cache) {
			cli_errorf(CMD, "--cache-dir: bad path");
			return COLI_EXIT_USAGE;
		}
		snprintf(cache, sizeof cache, "%s", cache_opt);
	} else if (kv_cache_dir(model, cache, sizeof cache, &err) < 0) {
		cli_errorf(CMD, "%s", err.msg);
		return COLI_EXIT_FAIL;
	}
	snprintf(kvdir, sizeof kvdir, "%s/kv", cache);
	if (model) {
		struct stat st;
		if (stat(model, &st) < 0 || !S_ISDIR(st.st_mode)) {
			if (model_arg || !explicit_cache) {
				cli_errorf(CMD, "%s: not a model directory", model);
				return COLI_EXIT_FAIL;
			}
			model = NULL; /* a stale $COLI_MODEL does not matter here */
		}
	}
	if (model) {
		char manifest[PATH_MAX];
		if ((size_t)snprintf(manifest, sizeof manifest, "%s/manifest.json", model) < sizeof manifest &&
		    access(manifest, R_OK) == 0) {
			if (coli_sha256_file(manifest, fp, &err) < 0) {
				cli_errorf(CMD, "%s", err.msg);
				return COLI_EXIT_FAIL;
			}
			fpp = fp;
		}
	}
	if (!strcmp(sub, "list"))
		return do_list(kvdir, fpp, json);
	if (!strcmp(sub, "show"))
		return do_show(kvdir, pos[p], fpp, json);
	if (!strcmp(sub, "rm"))
		return do_rm(kvdir, pos[p], json);
	if (!strcmp(sub, "rename"))
		return do_rename(kvdir, pos[p], pos[p + 1], json);
	return do_gc(kvdir, budget, json);
}
