/* cmd_doctor.c - `coli doctor [DIR]`: read-only readiness checks of a
 * model container and the machine it runs on. Nothing is written (the
 * cache directory is only looked at). Exit 0 when no check failed, 1 when
 * one did; warnings explain what costs speed. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <liburing.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statfs.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <jansson.h>

#include "kv_cache_dir.h"
#include "chat_template.h"
#include "cli.h"
#include "cli_print.h"
#include "model_container.h"
#include "expert_store.h"
#include "expert_store_budget.h"
#include "expert_store_mirror.h"
#include "store_iobench.h"
#include "kv_store.h"
#include "model.h"
#include "model_dir.h"
#include "util_crc32c.h"
#include "util_sha256.h"
#include "util_size_parse.h"
#include "tokenizer.h"

enum { DOC_OK = 0, DOC_WARN, DOC_FAIL };

typedef struct doctor {
	json_t *checks;   /* array of {name, status, detail} */
	int json;
	int fails, warns;
} doctor;

static void report(doctor *d, int status, const char *name, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static void report(doctor *d, int status, const char *name, const char *fmt, ...)
{
	static const char *const label[] = { "ok", "warning", "FAIL" };
	char detail[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(detail, sizeof detail, fmt, ap);
	va_end(ap);
	if (status == DOC_FAIL)
		d->fails++;
	else if (status == DOC_WARN)
		d->warns++;
	if (d->json) {
		json_t *o = json_object();
		json_object_set_new(o, "check", json_string(name));
		json_object_set_new(o, "status", json_string(label[status]));
		json_object_set_new(o, "detail", json_string(detail));
		json_array_append_new(d->checks, o);
	} else {
		printf("%-8s %-14s %s\n", label[status], name, detail);
	}
}

static const char *first_shard(const coli_container *c)
{
	for (int l = 0; l < c->config.num_hidden_layers; l++)
		if (c->expert_shard_paths[l])
			return c->expert_shard_paths[l];
	return NULL;
}

/* The directory name carries quant tags by convention; the manifest is the
 * truth. A name that claims another quantization misleads operators. */
static void check_name_tags(doctor *d, const coli_container *c)
{
	const char *base = strrchr(c->dir, '/');
	base = base && base[1] ? base + 1 : c->dir;
	const char *tags[] = { "int4-g64", "int8", "f32" };
	int claimed = 0, ok = 1;
	for (size_t i = 0; i < sizeof tags / sizeof tags[0]; i++) {
		const char *hit = strstr(base, tags[i]);
		if (!hit)
			continue;
		/* "int8mtp" describes the MTP head, not the dense part */
		int about_mtp = !strncmp(hit + strlen(tags[i]), "mtp", 3) || !strncmp(hit + strlen(tags[i]), "-mtp", 4);
		const char *truth = about_mtp ? c->quant_mtp : c->quant_dense;
		claimed = 1;
		if (strcmp(truth, tags[i]) && !(i == 0 && !strcmp(truth, "int4")))
			ok = 0;
	}
	if (!claimed)
		report(d, DOC_OK, "name-tags", "directory name carries no quant tag; manifest: dense %s, experts %s, mtp %s",
		       c->quant_dense, c->quant_experts, c->quant_mtp[0] ? c->quant_mtp : "none");
	else if (ok)
		report(d, DOC_OK, "name-tags", "directory name agrees with the manifest (dense %s, mtp %s)",
		       c->quant_dense, c->quant_mtp[0] ? c->quant_mtp : "none");
	else
		report(d, DOC_WARN, "name-tags", "directory name '%s' disagrees with the manifest (dense %s, experts %s, mtp %s)",
		       base, c->quant_dense, c->quant_experts, c->quant_mtp[0] ? c->quant_mtp : "none");
}

static void check_storage(doctor *d, const coli_container *c)
{
	const char *shard = first_shard(c);
	if (!shard) {
		report(d, DOC_OK, "storage", "no routed experts (dense model)");
		return;
	}
	struct statfs sf;
	int network = 0;
	if (statfs(shard, &sf) == 0) {
		const char *fs = store_iobench_fs_name((long)sf.f_type, &network);
		report(d, network ? DOC_WARN : DOC_OK, "filesystem", "experts on %s%s", fs ? fs : "unknown filesystem",
		       network ? ": network filesystems are far below NVMe bandwidth; decode will be I/O bound" : "");
	}
	int fd = open(shard, O_RDONLY | O_DIRECT);
	if (fd < 0) {
		report(d, DOC_WARN, "o-direct", "%s cannot be opened with O_DIRECT (%s): buffered reads, the page cache "
		       "competes with the expert cache", shard, strerror(errno));
	} else {
		void *buf = NULL;
		ssize_t n = -1;
		if (!posix_memalign(&buf, 4096, 4096))
			n = pread(fd, buf, 4096, 0);
		report(d, n == 4096 ? DOC_OK : DOC_WARN, "o-direct", n == 4096 ? "O_DIRECT reads work on the expert shards"
		       : "O_DIRECT read failed: buffered reads will be used");
		free(buf);
		close(fd);
	}
	struct io_uring ring;
	int rc = io_uring_queue_init(4, &ring, 0);
	if (rc < 0) {
		report(d, DOC_FAIL, "io_uring", "io_uring is not available (%s): the expert store cannot read", strerror(-rc));
	} else {
		io_uring_queue_exit(&ring);
		report(d, DOC_OK, "io_uring", "io_uring available");
	}
}

static void check_memory(doctor *d, const coli_container *c)
{
	char a[32], b[32], e[32];
	int64_t avail = size_mem_available();
	int64_t experts = 0;
	for (int l = 0; l < c->config.num_hidden_layers; l++)
		if (c->expert_shard_paths[l])
			experts += (int64_t)c->expert_shard_sizes[l];
	if (avail < 0) {
		report(d, DOC_WARN, "memory", "available memory unknown (/proc/meminfo unreadable)");
		return;
	}
	size_format((int64_t)c->dense_bytes, b, sizeof b);
	size_format(avail, a, sizeof a);
	size_format(experts, e, sizeof e);
	if ((int64_t)c->dense_bytes > avail)
		report(d, DOC_FAIL, "memory", "the resident part needs %s but only %s is available", b, a);
	else if ((int64_t)c->dense_bytes + experts / 10 > avail)
		report(d, DOC_WARN, "memory", "resident %s of %s available leaves less than 10%% of the %s of experts "
		       "for the cache: expect most experts from disk", b, a, e);
	else
		report(d, DOC_OK, "memory", "resident %s; %s available for the expert cache (experts: %s)", b, a, e);
	/* what `--expert-cache auto` would get now, with the engine defaults
	 * (--ctx 4096, automatic slots), term by term */
	expert_store_opts o;
	store_budget_terms t;
	char line[1024];
	expert_store_opts_default(&o);
	if (c->config.n_routed_experts > 0 && store_budget_measure(c, &o, &t) == 0) {
		store_budget_explain(&t, line, sizeof line);
		report(d, DOC_OK, "expert-budget", "automatic expert cache %s", line);
	}
}

/* Transparent huge pages: the engine advises its weight buffers for them
 * (model_weight_mem.c); with THP off a decode step streams the same weights
 * from 4 KiB pages, ~15-20% slower on the reference machine. */
static void check_huge_pages(doctor *d)
{
	static const char path[] = "/sys/kernel/mm/transparent_hugepage/enabled";
	char buf[128] = "";
	FILE *f = fopen(path, "r");
	if (!f || !fgets(buf, sizeof buf, f)) {
		if (f)
			fclose(f);
		report(d, DOC_WARN, "huge-pages", "%s unreadable: weights may be on 4 KiB pages "
		       "(decode streams them ~15%% slower)", path);
		return;
	}
	fclose(f);
	/* the mode in use is the bracketed one: "always [madvise] never" */
	char *mode = strchr(buf, '['), *end = mode ? strchr(mode, ']') : NULL;
	if (mode && end) {
		mode++;
		*end = '\0';
	} else {
		buf[strcspn(buf, "\n")] = '\0';
		mode = buf;
	}
	if (!strcmp(mode, "always") || !strcmp(mode, "madvise"))
		report(d, DOC_OK, "huge-pages", "transparent huge pages: %s (the weights use 2 MiB pages)", mode);
	else
		report(d, DOC_WARN, "huge-pages", "transparent huge pages: %s: weights on 4 KiB pages, decode "
		       "~15%% slower; as root: echo madvise > %s", mode, path);
}

static void check_cache_dir(doctor *d, const char *model_dir)
{
	char dir[4096], kv[4200];
	coli_err err = { 0 };
	const char *env = getenv("COLI_CACHE_DIR");
	if (env && *env)
		snprintf(dir, sizeof dir, "%s", env);
	else if (kv_cache_dir(model_dir, dir, sizeof dir, &err)) {
		report(d, DOC_WARN, "cache-dir", "%s", err.msg);
		return;
	}
	struct statvfs sv;
	char probe[4096];
	snprintf(probe, sizeof probe, "%s", dir);
	/* the cache dir may not exist yet: look at its nearest existing parent */
	while (statvfs(probe, &sv) != 0) {
		char *slash = strrchr(probe, '/');
		if (!slash || slash == probe) {
			snprintf(probe, sizeof probe, "/");
			if (statvfs(probe, &sv) != 0) {
				report(d, DOC_WARN, "cache-dir", "%s: %s", dir, strerror(errno));
				return;
			}
			break;
		}
		*slash = '\0';
	}
	char fr[32];
	int64_t free_bytes = (int64_t)sv.f_bavail * (int64_t)sv.f_frsize;
	size_format(free_bytes, fr, sizeof fr);
	int writable = access(probe, W_OK) == 0;
	report(d, !writable ? DOC_FAIL : free_bytes < (1LL << 30) ? DOC_WARN : DOC_OK, "cache-dir",
	       "%s (%s free%s)", dir, fr, !writable ? ", NOT writable: sessions and heat cannot be saved" : "");
	snprintf(kv, sizeof kv, "%s/kv", dir);
	kv_store_entry *ents = NULL;
	int n = 0, bad = 0;
	if (kv_store_list(kv, &ents, &n, &err) == 0) {
		for (int i = 0; i < n; i++)
			bad += ents[i].status != 0;
		report(d, bad ? DOC_WARN : DOC_OK, "sessions", "%d KV session(s) in %s%s", n, kv,
		       bad ? "; some are torn or corrupt (see coli sessions list)" : "");
		free(ents);
	}
}

/* --verify: the expert shards against the manifest's sha256 (the dense and
 * MTP files are verified by coli_container_open). Reads every byte: the
 * slow part of --verify on a large model. */
/* sha256 of a shard and, for format 2, the CRC-32C of each record in the
 * same pass: the first record that fails and how many do, or -1 / 0. */
static int shard_digest(const coli_container *c, int l, char hex[65], int *first_bad, int *n_bad,
			coli_err *err)
{
	const size_t rs = c->expert_record_size;
	unsigned char *buf = malloc(rs);
	FILE *f = fopen(c->expert_shard_paths[l], "rb");
	coli_sha256 sha;
	int rc = 0;
	*first_bad = -1;
	*n_bad = 0;
	if (!buf || !f) {
		rc = coli_err_set(err, -errno, "%s: %s", c->expert_shard_paths[l], strerror(errno));
		goto out;
	}
	coli_sha256_init(&sha);
	for (int e = 0;; e++) {
		size_t got = fread(buf, 1, rs, f);
		if (got == 0)
			break;
		coli_sha256_update(&sha, buf, got);
		if (c->expert_crc && c->expert_crc[l] && e < c->config.n_routed_experts &&
		    (got != rs || crc32c_update(0, buf, rs) != c->expert_crc[l][e])) {
			if (*first_bad < 0)
				*first_bad = e;
			(*n_bad)++;
		}
	}
	if (ferror(f)) {
		rc = coli_err_set(err, -EIO, "%s: read failed", c->expert_shard_paths[l]);
		goto out;
	}
	uint8_t dg[COLI_SHA256_DIGEST];
	coli_sha256_final(&sha, dg);
	coli_sha256_to_hex(dg, hex);
out:
	if (f)
		fclose(f);
	free(buf);
	return rc;
}

static void check_expert_sha256(doctor *d, const coli_container *c)
{
	int n = 0, bad = 0;
	for (int l = 0; l < c->config.num_hidden_layers; l++) {
		const char *path = c->expert_shard_paths[l];
		char hex[65];
		coli_err err = { 0 };
		int first_bad, n_bad;
		if (!path)
			continue;
		n++;
		if (shard_digest(c, l, hex, &first_bad, &n_bad, &err)) {
			report(d, DOC_FAIL, "expert-sha256", "%s", err.msg);
			bad++;
		} else if (strcmp(hex, c->expert_shard_sha256[l])) {
			report(d, DOC_FAIL, "expert-sha256", "%s: sha256 %s, manifest.json says %s", path, hex,
			       c->expert_shard_sha256[l]);
			bad++;
		}
		if (first_bad >= 0)
			report(d, DOC_FAIL, "expert-crc32c", "%s: %d of %d records fail their CRC-32C, the first "
			       "expert %d of layer %d at offset %llu", path, n_bad, c->config.n_routed_experts,
			       first_bad, l, (unsigned long long)coli_container_expert_offset(c, first_bad));
	}
	if (!bad)
		report(d, DOC_OK, "expert-sha256", "%d expert shard(s) match the manifest's sha256", n);
}

/* --mirror DIR: a full copy's shards (present, sized as the manifest
 * says), or a partial copy's plan against its contents: every planned
 * record read back and checked against the manifest's CRC-32C. */
static void check_mirror(doctor *d, const coli_container *c, const char *mdir)
{
	expert_mirror_plan *p = NULL;
	coli_err err = { 0 };
	int rc = expert_mirror_plan_load(mdir, c, &p, &err);
	char b1[32], b2[32];
	if (rc == -ENOENT) {
		int n = 0, ok = 0;
		for (int l = 0; l < c->config.num_hidden_layers; l++) {
			const char *sp = c->expert_shard_paths[l], *base = sp ? strrchr(sp, '/') : NULL;
			char path[4096];
			struct stat st;
			if (!sp)
				continue;
			n++;
			snprintf(path, sizeof path, "%s/experts/%s", mdir, base ? base + 1 : sp);
			ok += !stat(path, &st) && (uint64_t)st.st_size == c->expert_shard_sizes[l];
		}
		report(d, ok ? DOC_OK : DOC_FAIL, "mirror", "%s: full copy, %d of %d expert shard(s) present with the "
		       "manifest's size%s", mdir, ok, n, ok ? "" : ": nothing would be read from it");
		return;
	}
	if (rc < 0) {
		report(d, DOC_FAIL, "mirror", "%s: %s (the mirror is not used)", mdir, err.msg);
		return;
	}
	const size_t rs = c->expert_record_size;
	const int E = p->n_experts;
	unsigned char *buf = malloc(rs);
	int64_t bad = 0, checked = 0, allocated = 0;
	int bad_l = -1, bad_e = -1;
	const char *why = "";
	for (int l = 0; buf && l < p->n_layers; l++) {
		if (!p->files[l])
			continue;
		char path[4096];
		struct stat st;
		snprintf(path, sizeof path, "%s/%s", mdir, p->files[l]);
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		int sized = fd >= 0 && !fstat(fd, &st) && (uint64_t)st.st_size == c->expert_shard_sizes[l];
		if (fd >= 0 && sized)
			allocated += (int64_t)st.st_blocks * 512;
		for (int e = 0; e < E; e++) {
			if (!p->has[(size_t)l * (size_t)E + (size_t)e])
				continue;
			int fine = sized && pread(fd, buf, rs, (off_t)coli_container_expert_offset(c, e)) == (ssize_t)rs;
			if (fine && c->expert_crc && c->expert_crc[l]) {
				fine = crc32c_update(0, buf, rs) == c->expert_crc[l][e];
				checked++;
			}
			if (!fine && !bad++) {
				bad_l = l;
				bad_e = e;
				why = fd < 0 ? "its file is missing" : !sized ? "its file has the wrong size" : "fails its CRC-32C";
			}
		}
		if (fd >= 0)
			close(fd);
	}
	free(buf);
	if (bad)
		report(d, DOC_FAIL, "mirror", "%s: %lld of %lld planned records unusable, the first layer %d expert %d "
		       "(%s): those are read from the primary; write the mirror again", mdir, (long long)bad,
		       (long long)p->n_records, bad_l, bad_e, why);
	else
		report(d, DOC_OK, "mirror", "%s: partial copy, %lld records (%s), planned share %.1f%% of reads (%s); %s",
		       mdir, (long long)p->n_records, size_format((int64_t)p->bytes, b1, sizeof b1), 100.0 * p->share,
		       p->source, checked ? "every record matches its CRC-32C" : "no checksums to verify (format 1)");
	if (!bad && allocated > (int64_t)p->bytes * 2 + (1 << 20))
		report(d, DOC_WARN, "mirror-space", "%s: the partial shards take %s on disk for %s of records: this "
		       "filesystem does not keep holes", mdir, size_format(allocated, b2, sizeof b2),
		       size_format((int64_t)p->bytes, b1, sizeof b1));
	expert_mirror_plan_free(p);
}

static void check_model(doctor *d, const char *dir, int verify, const char *const *mirrors, int n_mirrors)
{
	coli_container *c = NULL;
	coli_err err = { 0 };
	coli_container_opts o = { .load_mtp = 1, .verify = verify, .skip_load = !verify };
	if (coli_container_open(dir, &o, &c, &err)) {
		report(d, DOC_FAIL, "container", "%s", err.msg);
		return;
	}
	const coli_config *cfg = &c->config;
	report(d, DOC_OK, "container", "%s: %s, %d layers (%d dense), %d routed experts top-%d%s", dir, cfg->model_type,
	       cfg->num_hidden_layers, cfg->first_k_dense_replace, cfg->n_routed_experts, cfg->num_experts_per_tok,
	       verify ? ", dense and MTP checksums and scales verified" : "");
	/* the binding `generate` and `serve` do at open, on the same code */
	if (coli_model_check(c, 1, &err))
		report(d, DOC_FAIL, "tensors", "%s", err.msg);
	else
		report(d, DOC_OK, "tensors", "%d resident tensors match the config's shapes%s", c->n_tensors,
		       cfg->num_nextn_predict_layers > 0 ? " (MTP module included)" : "");
	if (coli_container_has_checksums(c))
		report(d, DOC_OK, "checksums", "CRC-32C of every expert record and resident tensor (format v%d), "
		       "verified when read%s", c->version, verify ? "; resident tensors verified" : "");
	else
		report(d, DOC_WARN, "checksums", "no checksums (format v%d, converted before them): damage that "
		       "passes the scale checks is served; convert again to add them", c->version);
	if (verify)
		check_expert_sha256(d, c);
	check_name_tags(d, c);
	if (cfg->num_nextn_predict_layers > 0) {
		int int4 = !strncmp(c->quant_mtp, "int4", 4);
		report(d, int4 ? DOC_WARN : DOC_OK, "mtp", int4 ? "the MTP head is int4: int4 heads are known to collapse "
		       "draft acceptance; reconvert with --mtp-quant int8" : "MTP head at %s", c->quant_mtp);
	}
	if (cfg->index_topk > 0) {
		int full = 0;
		for (int l = 0; l < cfg->num_hidden_layers; l++)
			full += coli_config_layer_index_full(cfg, l);
		report(d, DOC_OK, "dsa-indexer", "DSA indexer supported: each query attends to the index_topk = %d best keys "
		       "(%d of %d layers run their own indexer), contexts up to %d tokens", cfg->index_topk, full,
		       cfg->num_hidden_layers, cfg->max_position_embeddings);
	}
	coli_tokenizer *tok = NULL;
	if (coli_tokenizer_load_dir(dir, &tok, &err)) {
		report(d, DOC_FAIL, "tokenizer", "%s", err.msg);
	} else {
		coli_chat_template tpl;
		if (coli_tokenizer_check_vocab(tok, cfg->vocab_size, &err))
			report(d, DOC_FAIL, "tokenizer", "%s", err.msg);
		else if (coli_chat_template_detect(tok, cfg->model_type, &tpl, &err))
			report(d, DOC_WARN, "chat-template", "%s (raw prompts still work)", err.msg);
		else
			report(d, DOC_OK, "tokenizer", "%d tokens, chat template %s", coli_tokenizer_vocab_size(tok),
			       tpl.family == COLI_CHAT_JINJA ? "the checkpoint's own (parses)" : "built in for the model type");
		coli_tokenizer_free(tok);
	}
	check_memory(d, c);
	check_storage(d, c);
	for (int m = 0; m < n_mirrors; m++)
		check_mirror(d, c, mirrors[m]);
	coli_container_free(c);
}

int cmd_doctor(int argc, char **argv)
{
	const char *dir_arg = NULL;
	int verify = 0, n_mirrors = 0;
	const char *mirrors[8];
	doctor d = { 0 };
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			printf("usage: coli doctor [DIR] [--verify] [--mirror MDIR]... [--json]\n"
			       "Read-only readiness checks of a model container and this machine.\n"
			       "  --verify   also check the sha256 of every file (experts too) and the\n"
			       "             scales of every resident tensor\n"
			       "  --mirror MDIR  check a mirror directory: a full copy's shards, or a\n"
			       "             partial copy's plan against every record it lists\n"
			       "  --json     one JSON object instead of text\n");
			return COLI_EXIT_OK;
		} else if (!strcmp(argv[i], "--verify")) {
			verify = 1;
		} else if (!strcmp(argv[i], "--json")) {
			d.json = 1;
		} else if (!strcmp(argv[i], "--mirror") && i + 1 < argc && n_mirrors < 8) {
			mirrors[n_mirrors++] = argv[++i];
		} else if (argv[i][0] != '-' && !dir_arg) {
			dir_arg = argv[i];
		} else {
			cli_errorf("doctor", "unexpected argument '%s' (see --help)", argv[i]);
			return COLI_EXIT_USAGE;
		}
	}
	char dir[4096];
	coli_err err = { 0 };
	if (coli_model_dir_resolve(dir_arg, dir, sizeof dir, &err)) {
		cli_errorf("doctor", "%s", err.msg);
		return COLI_EXIT_FAIL;
	}
	d.checks = json_array();
	check_model(&d, dir, verify, mirrors, n_mirrors);
	check_huge_pages(&d);
	check_cache_dir(&d, dir);
	if (d.json) {
		json_t *o = json_object();
		json_object_set_new(o, "model", json_string(dir));
		json_object_set(o, "checks", d.checks);
		json_object_set_new(o, "failures", json_integer(d.fails));
		json_object_set_new(o, "warnings", json_integer(d.warns));
		cli_print_json(o, JSON_INDENT(2));
	} else {
		printf("%d failure(s), %d warning(s)\n", d.fails, d.warns);
	}
	json_decref(d.checks);
	return d.fails ? COLI_EXIT_FAIL : COLI_EXIT_OK;
}
