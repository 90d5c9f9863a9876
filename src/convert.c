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
#include "hf_config.h"
#include "kernels.h"
#include "manifest.h"
#include "quant.h"
#include "sha256.h"

#define STATE_NAME ".convert-state.json"
#define STATE_FORMAT "colitop-convert-state"

static const char *const class_names[CONVERT_CLS_COUNT] = {
	"attention", "shared_experts", "dense_ffn", "routers", "experts",
	"embed", "lm_head", "mtp", "norms", "other",
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
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
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
	return json_pack("{s:s,s:s,s:s,s:s,s:i,s:o}", "quant", coli_qtype_name(o->quant),
			 "mtp_quant", coli_qtype_name(o->mtp_quant), "embed_quant",
			 coli_qtype_name(p->embed_qtype), "source_config_sha256", p->config_sha256,
			 "source_tensors", p->ck->n_tensors, "source_files", files);
}

/* Load the previous run's state; *files gets the "files" object (new ref). */
static int state_load(const convert_opts *o, const json_t *args, json_t **files, coli_err *err)
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
	json_decref(st);
	return 0;
fresh:
	json_decref(st);
	*files = json_object();
	return *files ? 0 : coli_err_set(err, -ENOMEM, "out of memory");
}

static int state_save(const convert_opts *o, const json_t *args, json_t *files, coli_err *err)
{
	char path[4096];
	snprintf(path, sizeof path, "%s/" STATE_NAME, o->out_dir);
	json_t *st = json_pack("{s:s,s:i,s:O,s:O}", "format", STATE_FORMAT, "version", 1, "args",
			       args, "files", files);
	if (!st)
		return coli_err_set(err, -ENOMEM, "out of memory");
	int rc = manifest_save(path, st, err);
	json_decref(st);
	return rc;
}

/* Keep a file from an earlier run when its size and sha256 still verify. */
static int file_verified(const convert_opts *o, convert_file *f, const json_t *entry)
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
	if (coli_sha256_file(path, got, NULL) < 0 || strcmp(got, sha))
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
#else
static void fault_after_file(int written)
{
	(void)written;
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
	if (need > avail)
		return coli_err_set(err, -ENOSPC, "%s: the container needs %.2f GiB more, %.2f GiB free",
				    o->out_dir, (double)need / (1u << 30), (double)avail / (1u << 30));
	return 0;
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

int convert_run(const convert_opts *o, convert_summary *sum, coli_err *err)
{
	convert_plan p;
	json_t *args = NULL, *files = NULL, *man = NULL;
	coli_pool *pool = NULL;
	double t0 = now_s();
	int rc;
	memset(sum, 0, sizeof *sum);
	if (!coli_qtype_name(o->quant) || !coli_qtype_name(o->mtp_quant) ||
	    (o->embed_quant_set && !coli_qtype_name(o->embed_quant)))
		return coli_err_set(err, -EINVAL, "unknown quant type");
	rc = convert_plan_build(o, &p, err);
	if (rc < 0)
		goto out;
	if ((rc = prepare_out(o, err)) < 0)
		goto out;
	if (!(args = state_args(o, &p))) {
		rc = coli_err_set(err, -ENOMEM, "out of memory");
		goto out;
	}
	if ((rc = state_load(o, args, &files, err)) < 0 || (rc = check_space(o, &p, err)) < 0)
		goto out;
	if (o->threads != 1 && !(pool = coli_pool_new(o->threads))) {
		rc = coli_err_set(err, -ENOMEM, "cannot start %d quantization threads", o->threads);
		goto out;
	}
	coli_info("converting %s -> %s: %d files, %d resident tensors, %d experts "
		  "(quant %s, experts %s, mtp %s)", o->src_dir, o->out_dir, p.n_files, p.n_tensors,
		  p.n_experts, coli_qtype_name(o->quant), coli_qtype_name(p.expert_qtype),
		  coli_qtype_name(o->mtp_quant));
	for (int i = 0; i < p.n_files; i++) {
		convert_file *f = &p.files[i];
		json_t *entry = json_object_get(files, f->path);
		if (file_verified(o, f, entry)) {
			sum->files_skipped++;
			coli_info("[%d/%d] %s: kept from the previous run (size and sha256 verified)",
				  i + 1, p.n_files, f->path);
			continue;
		}
		if (entry)
			coli_info("[%d/%d] %s: does not verify, writing it again", i + 1, p.n_files,
				  f->path);
		json_object_del(files, f->path);
		double t1 = now_s();
		uint64_t before = sum->bytes_written;
		if ((rc = convert_file_write(&p, f, o->out_dir, pool, &sum->bytes_written, err)) < 0)
			goto out;
		json_object_set_new(files, f->path,
				    json_pack("{s:I,s:s,s:o}", "size", (json_int_t)f->size, "sha256",
					      f->sha256, "err", err_to_json(f->err)));
		if ((rc = state_save(o, args, files, err)) < 0)
			goto out;
		sum->files_written++;
		double kib = (double)(sum->bytes_written - before) / 1024.0;
		coli_info("[%d/%d] %s: %.1f %s in %.2f s", i + 1, p.n_files, f->path,
			  kib >= 1024 ? kib / 1024 : kib, kib >= 1024 ? "MiB" : "KiB", now_s() - t1);
		fault_after_file(sum->files_written);
	}
	{
		char path[4096];
		const char *base = strrchr(o->src_dir, '/');
		char label[256];
		snprintf(label, sizeof label, "%s", base && base[1] ? base + 1 : o->src_dir);
		if (!(man = convert_manifest_build(o, &p, label))) {
			rc = coli_err_set(err, -ENOMEM, "out of memory building manifest.json");
			goto out;
		}
		snprintf(path, sizeof path, "%s/manifest.json", o->out_dir);
		if ((rc = manifest_save(path, man, err)) < 0)
			goto out;
		snprintf(path, sizeof path, "%s/" STATE_NAME, o->out_dir);
		unlink(path);
		manifest_fsync_dir(o->out_dir, NULL);
	}
	for (int i = 0; i < p.n_files; i++) {
		sum->bytes_total += p.files[i].size;
		for (int c = 0; c < CONVERT_CLS_COUNT; c++) {
			convert_err_acc *a = &sum->err[c];
			const convert_err_acc *b = &p.files[i].err[c];
			a->sse += b->sse;
			a->ssv += b->ssv;
			a->sse_alt += b->sse_alt;
			a->ssv_alt += b->ssv_alt;
			a->n += b->n;
		}
	}
	sum->files_total = p.n_files;
	sum->n_tensors = p.n_tensors;
	sum->n_expert_records = p.n_experts;
	sum->n_f32_fallback = p.n_fallback;
out:
	{
		struct rusage ru;
		if (getrusage(RUSAGE_SELF, &ru) == 0)
			sum->peak_rss_kb = ru.ru_maxrss;
	}
	sum->elapsed_s = now_s() - t0;
	coli_pool_free(pool);
	json_decref(man);
	json_decref(files);
	json_decref(args);
	convert_plan_free(&p);
	return rc;
}
