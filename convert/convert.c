/* convert.c - `coli convert` driver: plan, resume, write, manifest.
 *
 * Resume protocol (OUT/.convert-state.json, rewritten atomically after each
 * finished file):
 *   {"format":"colitop-convert-state","version":1,
 *    "args":{"quant","mtp_quant","source_config_sha256","source_tensors"},
 *    "files":{"dense/layer-000.bin":{"size","sha256","err":{...}}, ...}}
 * A file listed there is kept on the next run only if its size and sha256
 * still verify; its measured quantization error comes from the state so the
 * final manifest is the same bytes as an uninterrupted run's. manifest.json
 * is written last; the state file is removed after it. */
#include "config.h"

#define COLI_CONVERT_INTERNAL 1
#include "convert.h"

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "coli_log.h"
#include "model_hf_config.h"
#include "quant_kernels.h"
#include "model_manifest.h"
#include "quant.h"
#include "util_sha256.h"
#include "util_size_parse.h"
#include "util_time.h"

#define STATE_NAME ".convert-state.json"
#define STATE_FORMAT "colitop-convert-state"

static const char *const class_names[CONVERT_CLS_COUNT] = {
	"attention", "shared_experts", "dense_ffn", "routers", "experts",
	"embed", "lm_head", "mtp", "norms", "other", "indexer",
};

const char *convert_class_name(int cls)
{
	return cls >= 0 && cls < CONVERT_CLS_COUNT ? class_names[cls] : NULL;
}

const char *convert_alt_name(int cls, int qtype)
{
	if (qtype == COLI_Q_INT4)
		return "rel_rms_sym_int4";
	if (qtype == COLI_Q_INT8 && (cls == CONVERT_CLS_EMBED || cls == CONVERT_CLS_LM_HEAD))
		return "rel_rms_int4";
	return NULL;
}

double convert_rel_rms(double sse, double ssv)
{
	return ssv > 0 ? sqrt(sse / ssv) : 0.0;
}

void convert_opts_default(convert_opts *o)
{
	memset(o, 0, sizeof *o);
	o->quant = COLI_Q_INT4;
	o->mtp_quant = COLI_Q_INT8;
}

/* int8 unless everything is f32: at int4-g64 the indexer changes 5-8.5% of
 * the keys it selects past 4k tokens, int8 0.7-1.1% (bench/README.md,
 * "DSA indexer precision"). */
int convert_indexer_qtype(const convert_opts *o)
{
	if (o->indexer_quant_set)
		return o->indexer_quant;
	return o->quant == COLI_Q_F32 ? COLI_Q_F32 : COLI_Q_INT8;
}

static json_t *err_to_json(const convert_err_acc *a)
{
	json_t *o = json_object();
	for (int c = 0; c < CONVERT_CLS_COUNT; c++) {
		if (!a[c].n)
			continue;
		json_object_set_new(o, class_names[c],
				    json_pack("[f,f,f,f,I]", a[c].sse, a[c].ssv, a[c].sse_alt,
					      a[c].ssv_alt, (json_int_t)a[c].n));
	}
	return o;
}

static int err_from_json(const json_t *o, convert_err_acc *a)
{
	memset(a, 0, sizeof *a * CONVERT_CLS_COUNT);
	for (int c = 0; c < CONVERT_CLS_COUNT; c++) {
		json_t *v = json_object_get(o, class_names[c]);
		if (!v)
			continue;
		json_int_t n;
		if (json_unpack(v, "[F,F,F,F,I]", &a[c].sse, &a[c].ssv, &a[c].sse_alt,
				&a[c].ssv_alt, &n) < 0)
			return -EINVAL;
		a[c].n = n;
	}
	return 0;
}

/* Is OUT safe to write into? Complete container: refuse unless --force.
 * Foreign non-empty directory: refuse unless --force. */
static int prepare_out(const convert_opts *o, coli_err *err)
{
	char path[4096];
	if (mkdir(o->out_dir, 0755) < 0 && errno != EEXIST)
		return coli_err_set(err, -errno, "%s: cannot create: %s", o->out_dir, strerror(errno));
	snprintf(path, sizeof path, "%s/manifest.json", o->out_dir);
	if (access(path, F_OK) == 0) {
		if (!o->force)
			return coli_err_set(err, -EEXIST,
					    "%s: already holds a complete container (manifest.json); "
					    "use --force to replace it", o->out_dir);
		if (unlink(path) < 0)
			return coli_err_set(err, -errno, "%s: %s", path, strerror(errno));
		snprintf(path, sizeof path, "%s/" STATE_NAME, o->out_dir);
		unlink(path);
		return manifest_fsync_dir(o->out_dir, err);
	}
	snprintf(path, sizeof path, "%s/" STATE_NAME, o->out_dir);
	if (access(path, F_OK) == 0 || o->force)
		return 0;
	DIR *d = opendir(o->out_dir);
	if (!d)
		return coli_err_set(err, -errno, "%s: %s", o->out_dir, strerror(errno));
	struct dirent *de;
	int foreign = 0;
	while ((de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, "..") &&
		    !(o->staging && !strcmp(de->d_name, o->staging)))
			foreign = 1;
	closedir(d);
	if (foreign)
		return coli_err_set(err, -ENOTEMPTY,
				    "%s: not empty and not a colitop container or partial conversion; "
				    "use --force to write into it anyway", o->out_dir);
	return 0;
}

/* What a resumed run must share with the interrupted one: the options and
 * the checkpoint (config hash, tensor count, each file's name and size). */
static json_t *state_args(const convert_opts *o, const convert_plan *p)
{
	json_t *files = json_array();
	for (int i = 0; files && i < p->ck->n_files; i++) {
		const char *f = p->ck->files[i], *b = strrchr(f, '/');
		struct stat st;
		json_int_t size = stat(f, &st) == 0 ? (json_int_t)st.st_size : -1;
		json_array_append_new(files, json_pack("[s,I]", b ? b + 1 : f, size));
	}
	json_t *a = json_pack("{s:s,s:s,s:s,s:s,s:i,s:o}", "quant", coli_qtype_name(o->quant),
			      "mtp_quant", coli_qtype_name(o->mtp_quant), "embed_quant",
			      coli_qtype_name(p->embed_qtype), "source_config_sha256",
			      p->config_sha256, "source_tensors", p->ck->n_tensors, "source_files",
			      files);
	if (a && o->source_id)
		json_object_set_new(a, "source_id", json_string(o->source_id));
	if (a && p->cfg.index_topk > 0)
		json_object_set_new(a, "indexer_quant", json_string(coli_qtype_name(p->indexer_qtype)));
	return a;
}

/* Load the previous run's state; *files gets the "files" object (new ref). */
static int state_load(const convert_opts *o, const json_t *args, json_t **files,
		      json_t **released, coli_err *err)
{
	char path[4096];
	json_t *st = NULL;
	snprintf(path, sizeof path, "%s/" STATE_NAME, o->out_dir);
	*files = NULL;
	if (access(path, F_OK) != 0)
		goto fresh;
	coli_err e2 = { 0, "" };
	json_t *fl;
	const char *fmt;
	if (manifest_load(path, &st, &e2) < 0 || manifest_get_str(st, "format", &fmt, path, &e2) < 0 ||
	    strcmp(fmt, STATE_FORMAT) || manifest_get_obj(st, "files", &fl, path, &e2) < 0) {
		coli_warn("%s: unreadable (%s), starting over", path, e2.msg[0] ? e2.msg : "bad format");
		goto fresh;
	}
	if (!json_equal(json_object_get(st, "args"), args)) {
		if (!o->force) {
			json_decref(st);
			return coli_err_set(err, -EEXIST,
					    "%s: holds a partial conversion made with other arguments "
					    "or another checkpoint; use --force to start over",
					    o->out_dir);
		}
		coli_info("%s: discarding a partial conversion made with other arguments", o->out_dir);
		goto fresh;
	}
	*files = json_incref(fl);
	json_t *rel = json_object_get(st, "released");
	*released = json_is_array(rel) ? json_incref(rel) : json_array();
	json_decref(st);
	return *released ? 0 : coli_err_set(err, -ENOMEM, "out of memory");
fresh:
	json_decref(st);
	*files = json_object();
	*released = json_array();
	return *files && *released ? 0 : coli_err_set(err, -ENOMEM, "out of memory");
}

static int state_save(const convert_opts *o, const json_t *args, json_t *files,
		      json_t *released, coli_err *err)
{
	char path[4096];
	snprintf(path, sizeof path, "%s/" STATE_NAME, o->out_dir);
	json_t *st = json_pack("{s:s,s:i,s:O,s:O}", "format", STATE_FORMAT, "version", 1, "args",
			       args, "files", files);
	if (st && json_array_size(released))
		json_object_set(st, "released", released);
	if (!st)
		return coli_err_set(err, -ENOMEM, "out of memory");
	int rc = manifest_save(path, st, err);
	json_decref(st);
	return rc;
}

/* Keep a file from an earlier run when its size and sha256 still verify. */
static int file_verified(const convert_opts *o, const convert_plan *p, convert_file *f,
			 const json_t *entry)
{
	json_int_t size;
	const char *sha;
	json_t *e;
	char path[4096], got[65];
	struct stat st;
	if (!entry || json_unpack((json_t *)entry, "{s:I,s:s,s:o}", "size", &size, "sha256", &sha,
				  "err", &e) < 0)
		return 0;
	snprintf(path, sizeof path, "%s/%s", o->out_dir, f->path);
	/* f->size is the planned size (copies: the source file's size now). */
	if (stat(path, &st) < 0 || (uint64_t)st.st_size != (uint64_t)size ||
	    (uint64_t)size != f->size)
		return 0;
	/* the same pass gives the checksums of its tensors or records */
	if (convert_file_digest(p, f, path, got, NULL) < 0 || strcmp(got, sha))
		return 0;
	if (err_from_json(e, f->err) < 0)
		return 0;
	memcpy(f->sha256, got, sizeof f->sha256);
	return 1;
}

#ifdef COLI_FAULT_INJECTION
/* COLI_CONVERT_FAIL_AFTER_FILES=N: die by SIGKILL after N files were written
 * (state saved), as a crash or kill -9 would, for the resume test. */
static void fault_after_file(int written)
{
	const char *s = getenv("COLI_CONVERT_FAIL_AFTER_FILES");
	if (s && *s && written >= atoi(s))
		raise(SIGKILL);
}
/* COLI_CONVERT_FREE_BYTES=N: the disk check sees N bytes free, so its
 * message is tested where no small file system can be mounted. */
static void fault_free_bytes(uint64_t *avail)
{
	const char *s = getenv("COLI_CONVERT_FREE_BYTES");
	if (s && *s)
		*avail = strtoull(s, NULL, 10);
}
#else
static void fault_after_file(int written)
{
	(void)written;
}

static void fault_free_bytes(uint64_t *avail)
{
	(void)avail;
}
#endif

/* Refuse early when OUT's file system cannot hold what is left to write
 * (files already there of the planned size are assumed kept). */
static int check_space(const convert_opts *o, const convert_plan *p, coli_err *err)
{
	struct statvfs vfs;
	uint64_t need = 0;
	if (statvfs(o->out_dir, &vfs) < 0)
		return 0; /* unknown: let the writes tell */
	for (int i = 0; i < p->n_files; i++) {
		char path[4096];
		struct stat st;
		snprintf(path, sizeof path, "%s/%s", o->out_dir, p->files[i].path);
		uint64_t have = stat(path, &st) == 0 ? (uint64_t)st.st_size : 0;
		if (have != p->files[i].size)
			need += p->files[i].size;
	}
	uint64_t avail = (uint64_t)vfs.f_bavail * (uint64_t)vfs.f_frsize;
	fault_free_bytes(&avail);
	/* in units that show a small model's figures ("0.00 GiB" did not) */
	char a[32], b[32];
	if (need > avail)
		return coli_err_set(err, -ENOSPC, "%s: the container needs %s more, %s free", o->out_dir,
				    size_format((int64_t)need, a, sizeof a),
				    size_format((int64_t)avail, b, sizeof b));
	return 0;
}

void convert_file_each_source(const convert_plan *p, const convert_file *f,
			      void (*fn)(const st_tensor *t, void *ctx), void *ctx)
{
	int n = f->kind == CONVERT_FILE_TENSORS ? f->n_t :
		f->kind == CONVERT_FILE_EXPERTS ? p->cfg.n_routed_experts * 3 : 0;
	for (int k = 0; k < n; k++) {
		const st_tensor *t = f->kind == CONVERT_FILE_TENSORS ? f->t[k].src : f->experts[k];
		if (!t)
			continue;
		fn(t, ctx);
		const st_tensor *sc = st_find_fp8_scale(p->ck, t);
		if (sc)
			fn(sc, ctx);
	}
}

static const char *base_name(const char *path)
{
	const char *b = strrchr(path, '/');
	return b ? b + 1 : path;
}

static int is_released(const convert_session *s, int shard)
{
	size_t k;
	json_t *v;
	json_array_foreach(s->released, k, v)
		if (!strcmp(json_string_value(v), base_name(s->p.ck->files[shard])))
			return 1;
	return 0;
}

struct src_ctx {
	const convert_session *s;
	int bad_shard;
};

static void note_released(const st_tensor *t, void *ctx)
{
	struct src_ctx *c = ctx;
	if (c->bad_shard < 0 && is_released(c->s, t->file_index))
		c->bad_shard = t->file_index;
}

/* A file to (re)write must not read a shard --delete-source already freed. */
static int sources_present(const convert_session *s, const convert_file *f, coli_err *err)
{
	struct src_ctx c = { s, -1 };
	if (!json_array_size(s->released))
		return 0;
	convert_file_each_source(&s->p, f, note_released, &c);
	if (c.bad_shard < 0)
		return 0;
	return coli_err_set(err, -ENOENT,
			    "%s: must be written again but reads %s, whose data --delete-source "
			    "already removed; restore the checkpoint and convert again",
			    f->path, s->p.ck->files[c.bad_shard]);
}

struct last_ctx {
	int *last;
	int file;
};

static void note_last(const st_tensor *t, void *ctx)
{
	struct last_ctx *c = ctx;
	if (c->last[t->file_index] < c->file)
		c->last[t->file_index] = c->file;
}

int convert_shard_release(const char *path, uint64_t header_end, coli_err *err)
{
	struct stat st;
	if (stat(path, &st) < 0)
		return coli_err_set(err, -errno, "%s: %s", path, strerror(errno));
	/* Cutting to the header and growing back leaves a hole where the data
	 * was, on every file system with sparse files. */
	if (truncate(path, (off_t)header_end) < 0 || truncate(path, st.st_size) < 0)
		return coli_err_set(err, -errno, "%s: freeing the converted data: %s", path,
				    strerror(errno));
	return 0;
}

/* End of a shard's header: the data region starts at 8 + N. */
static int shard_header_end(const char *path, uint64_t *end, coli_err *err)
{
	uint8_t b[8];
	FILE *f = fopen(path, "rb");
	if (!f)
		return coli_err_set(err, -errno, "%s: %s", path, strerror(errno));
	size_t got = fread(b, 1, 8, f);
	fclose(f);
	if (got != 8)
		return coli_err_set(err, -EIO, "%s: short safetensors header", path);
	uint64_t n = 0;
	for (int i = 7; i >= 0; i--)
		n = n << 8 | b[i];
	*end = 8 + n;
	return 0;
}

/* --delete-source: free the source shards no file after i reads. */
static int convert_release_sources(convert_session *s, int i, coli_err *err)
{
	const st_checkpoint *ck = s->p.ck;
	int rc;
	if (!s->last_reader) {
		if (!(s->last_reader = malloc(sizeof *s->last_reader * (size_t)(ck->n_files + 1))))
			return coli_err_set(err, -ENOMEM, "out of memory");
		for (int k = 0; k < ck->n_files; k++)
			s->last_reader[k] = -1;
		for (int k = 0; k < s->p.n_files; k++) {
			struct last_ctx c = { s->last_reader, k };
			convert_file_each_source(&s->p, &s->p.files[k], note_last, &c);
		}
	}
	for (int k = 0; k < ck->n_files; k++) {
		uint64_t end = 0;
		if (s->last_reader[k] > i || is_released(s, k))
			continue;
		if ((rc = shard_header_end(ck->files[k], &end, err)) < 0)
			return rc;
		/* Recorded first: a shard is never read after it is listed. */
		json_array_append_new(s->released, json_string(base_name(ck->files[k])));
		if ((rc = state_save(s->o, s->args, s->files, s->released, err)) < 0 ||
		    (rc = convert_shard_release(ck->files[k], end, err)) < 0)
			return rc;
		coli_info("%s: converted, its data freed (--delete-source)", ck->files[k]);
	}
	return 0;
}

/* --delete-source, after convert_finish: remove the source shards. */
static int convert_remove_sources(convert_session *s, coli_err *err)
{
	const st_checkpoint *ck = s->p.ck;
	for (int k = 0; k < ck->n_files; k++)
		if (unlink(ck->files[k]) < 0 && errno != ENOENT)
			return coli_err_set(err, -errno, "%s: %s", ck->files[k], strerror(errno));
	coli_info("%s: %d source shards removed (--delete-source)", s->o->src_dir, ck->n_files);
	return 0;
}

int convert_begin(const convert_opts *o, convert_session *s, coli_err *err)
{
	int rc;
	memset(s, 0, sizeof *s);
	s->o = o;
	s->t0 = coli_now_s();
	if (!coli_qtype_name(o->quant) || !coli_qtype_name(o->mtp_quant) ||
	    (o->embed_quant_set && !coli_qtype_name(o->embed_quant)) ||
	    (o->indexer_quant_set && !coli_qtype_name(o->indexer_quant)))
		return coli_err_set(err, -EINVAL, "unknown quant type");
	rc = convert_plan_build(o, &s->p, err);
	s->planned = 1;
	if (rc < 0)
		return rc;
	if ((rc = prepare_out(o, err)) < 0)
		return rc;
	if (!(s->args = state_args(o, &s->p)))
		return coli_err_set(err, -ENOMEM, "out of memory");
	if ((rc = state_load(o, s->args, &s->files, &s->released, err)) < 0)
		return rc;
	if (!(s->done = calloc((size_t)s->p.n_files + 1, 1)))
		return coli_err_set(err, -ENOMEM, "out of memory");
	if (o->threads != 1 && !(s->pool = coli_pool_new(o->threads)))
		return coli_err_set(err, -ENOMEM, "cannot start %d quantization threads", o->threads);
	return 0;
}

/* Refuse when OUT cannot hold what is left to write. */
static int convert_check_space(const convert_session *s, coli_err *err)
{
	return check_space(s->o, &s->p, err);
}

int convert_file_done(convert_session *s, int i)
{
	convert_file *f = &s->p.files[i];
	if (!s->done[i]) {
		json_t *entry = json_object_get(s->files, f->path);
		s->done[i] = entry ? (file_verified(s->o, &s->p, f, entry) ? 1 : 2) : 3;
	}
	return s->done[i] == 1 || s->done[i] == 4;
}

int convert_file_ensure(convert_session *s, int i, coli_err *err)
{
	convert_file *f = &s->p.files[i];
	convert_summary *sum = &s->sum;
	int rc, n = s->p.n_files;
	if (convert_file_done(s, i)) {
		if (s->done[i] == 1) {
			sum->files_skipped++;
			coli_info("[%d/%d] %s: kept from the previous run (size and sha256 verified)",
				  i + 1, n, f->path);
			s->done[i] = 4;
		}
		return 0;
	}
	if ((rc = sources_present(s, f, err)) < 0)
		return rc;
	if (s->done[i] == 2)
		coli_info("[%d/%d] %s: does not verify, writing it again", i + 1, n, f->path);
	json_object_del(s->files, f->path);
	double t1 = coli_now_s();
	uint64_t before = sum->bytes_written;
	if ((rc = convert_file_write(&s->p, f, s->o->out_dir, s->pool, &sum->bytes_written, err)) < 0)
		return rc;
	json_object_set_new(s->files, f->path,
			    json_pack("{s:I,s:s,s:o}", "size", (json_int_t)f->size, "sha256", f->sha256,
				      "err", err_to_json(f->err)));
	if ((rc = state_save(s->o, s->args, s->files, s->released, err)) < 0)
		return rc;
	s->done[i] = 4;
	sum->files_written++;
	double kib = (double)(sum->bytes_written - before) / 1024.0;
	coli_info("[%d/%d] %s: %.1f %s in %.2f s", i + 1, n, f->path, kib >= 1024 ? kib / 1024 : kib,
		  kib >= 1024 ? "MiB" : "KiB", coli_now_s() - t1);
	fault_after_file(sum->files_written);
	return 0;
}

int convert_finish(convert_session *s, const char *src_label, coli_err *err)
{
	const convert_opts *o = s->o;
	convert_plan *p = &s->p;
	convert_summary *sum = &s->sum;
	char path[4096];
	int rc;
	json_t *man = convert_manifest_build(o, p, src_label);
	if (!man)
		return coli_err_set(err, -ENOMEM, "out of memory building manifest.json");
	snprintf(path, sizeof path, "%s/manifest.json", o->out_dir);
	rc = manifest_save(path, man, err);
	json_decref(man);
	if (rc < 0)
		return rc;
	snprintf(path, sizeof path, "%s/" STATE_NAME, o->out_dir);
	unlink(path);
	manifest_fsync_dir(o->out_dir, NULL);
	for (int i = 0; i < p->n_files; i++) {
		sum->bytes_total += p->files[i].size;
		for (int c = 0; c < CONVERT_CLS_COUNT; c++) {
			convert_err_acc *a = &sum->err[c];
			const convert_err_acc *b = &p->files[i].err[c];
			a->sse += b->sse;
			a->ssv += b->ssv;
			a->sse_alt += b->sse_alt;
			a->ssv_alt += b->ssv_alt;
			a->n += b->n;
		}
	}
	sum->files_total = p->n_files;
	sum->n_tensors = p->n_tensors;
	sum->n_expert_records = p->n_experts;
	sum->n_f32_fallback = p->n_fallback;
	return 0;
}

void convert_end(convert_session *s, convert_summary *sum)
{
	struct rusage ru;
	if (getrusage(RUSAGE_SELF, &ru) == 0)
		s->sum.peak_rss_kb = ru.ru_maxrss;
	s->sum.elapsed_s = coli_now_s() - s->t0;
	if (sum)
		*sum = s->sum;
	coli_pool_free(s->pool);
	json_decref(s->files);
	json_decref(s->args);
	json_decref(s->released);
	free(s->done);
	free(s->last_reader);
	if (s->planned)
		convert_plan_free(&s->p);
	memset(s, 0, sizeof *s);
}

/* The label recorded as the manifest's source.name: the directory's name. */
static void dir_label(const char *dir, char *label, size_t cap)
{
	const char *base = strrchr(dir, '/');
	snprintf(label, cap, "%s", base && base[1] ? base + 1 : dir);
}

int convert_run(const convert_opts *o, convert_summary *sum, coli_err *err)
{
	convert_session s;
	char label[256];
	int rc = convert_begin(o, &s, err);
	if (rc == 0)
		rc = convert_check_space(&s, err);
	if (rc == 0)
		coli_info("converting %s -> %s: %d files, %d resident tensors, %d experts "
			  "(quant %s, experts %s, mtp %s)", o->src_dir, o->out_dir, s.p.n_files,
			  s.p.n_tensors, s.p.n_experts, coli_qtype_name(o->quant),
			  coli_qtype_name(s.p.expert_qtype), coli_qtype_name(o->mtp_quant));
	for (int i = 0; rc == 0 && i < s.p.n_files; i++)
		if ((rc = convert_file_ensure(&s, i, err)) == 0 && o->delete_source)
			rc = convert_release_sources(&s, i, err);
	dir_label(o->src_dir, label, sizeof label);
	if (rc == 0)
		rc = convert_finish(&s, label, err);
	if (rc == 0 && o->delete_source)
		rc = convert_remove_sources(&s, err);
	convert_end(&s, sum);
	return rc;
}
