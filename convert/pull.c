/* pull.c - `coli pull`: see pull.h for the design. */
#include "config.h"

#define COLI_CONVERT_INTERNAL 1
#include "pull.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <jansson.h>
#include <linux/falloc.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "coli_log.h"
#include "pull_hub.h"
#include "model_manifest.h"
#include "ingest_safetensors.h"
#include "util_sha256.h"

#define STAGING ".pull"
#define PSTATE_FORMAT "colitop-pull-state"
#define INDEX_NAME "model.safetensors.index.json"
#define SINGLE_NAME "model.safetensors"

typedef struct shard {
	const hub_file *hf;
	char path[4400];
	hub_range *chunks;
	int n_chunks;
	int verified;
	int fd;
} shard;

typedef struct pull_ctx {
	const pull_opts *o;
	pull_summary *sum;
	hub_client h;
	hub_repo repo;
	char stage[2048], state_path[2100];
	json_t *state;
	convert_opts co;
	convert_session cs;
	int began;
	shard *sh;
	int n_sh;
	int *ms;                   /* per container file: last shard it reads, -1 none */
	int *rel;                  /* per source tensor: step after which it is freed */
	int step_done;
	int punch_ok;              /* the file system frees ranges (FALLOC_FL_PUNCH_HOLE) */
	/* progress of the shard being fetched */
	int cur;
	double t0, t_shard, last_save, last_line;
	uint64_t bytes_before;     /* this shard's bytes already on disk when it started */
} pull_ctx;

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static double gib(uint64_t b)
{
	return (double)b / (double)(1ull << 30);
}

/* Sizes for people: "812.4 MiB", "5.00 GiB". */
static const char *human(uint64_t b, char *buf, size_t cap)
{
	if (b >= 1ull << 30)
		snprintf(buf, cap, "%.2f GiB", gib(b));
	else if (b >= 1ull << 20)
		snprintf(buf, cap, "%.1f MiB", (double)b / (1 << 20));
	else
		snprintf(buf, cap, "%.1f KiB", (double)b / 1024);
	return buf;
}

#ifdef COLI_FAULT_INJECTION
/* COLI_PULL_FAIL_AT=N: die by SIGKILL at the Nth point where state was just
 * made durable (a chunk batch, a verified shard, a container file, freed
 * tensors, a finished shard), as kill -9 would, for the resume tests. */
static void fault_point(void)
{
	static int n;
	const char *s = getenv("COLI_PULL_FAIL_AT");
	if (s && *s && ++n >= atoi(s))
		raise(SIGKILL);
}
static int save_every_chunk(void)
{
	return getenv("COLI_PULL_FAIL_AT") != NULL;
}
#else
static void fault_point(void)
{
}

static int save_every_chunk(void)
{
	return 0;
}
#endif

/* ---- state ---- */

static int state_save(pull_ctx *c, coli_err *err)
{
	json_t *shards = json_object();
	for (int i = 0; shards && i < c->n_sh; i++) {
		shard *s = &c->sh[i];
		char *bits = malloc((size_t)s->n_chunks + 1);
		if (!bits)
			break;
		for (int k = 0; k < s->n_chunks; k++)
			bits[k] = s->chunks[k].got == s->chunks[k].len ? '1' : '0';
		bits[s->n_chunks] = '\0';
		json_object_set_new(shards, s->hf->path,
				    json_pack("{s:s,s:b}", "chunks", bits, "verified", s->verified));
		free(bits);
	}
	json_t *st = json_pack("{s:s,s:i,s:s,s:s,s:s,s:i,s:o}", "format", PSTATE_FORMAT, "version", 1,
			       "repo", c->o->repo, "revision", c->o->revision, "commit",
			       c->repo.commit, "step", c->step_done, "shards", shards);
	if (!st)
		return coli_err_set(err, -ENOMEM, "out of memory");
	int rc = manifest_save(c->state_path, st, err);
	json_decref(st);
	return rc;
}

/* The pinned commit of an earlier run of the same pull, "" when none. */
static int state_load(pull_ctx *c, char *commit, size_t cap, coli_err *err)
{
	commit[0] = '\0';
	if (access(c->state_path, F_OK) != 0)
		return 0;
	coli_err e2 = { 0, "" };
	json_t *st = NULL;
	const char *repo, *rev, *sha;
	if (manifest_load(c->state_path, &st, &e2) < 0 ||
	    json_unpack(st, "{s:s,s:s,s:s}", "repo", &repo, "revision", &rev, "commit", &sha) < 0) {
		coli_warn("%s: unreadable (%s), starting the download over", c->state_path,
			  e2.msg[0] ? e2.msg : "bad format");
		json_decref(st);
		return 0;
	}
	if (strcmp(repo, c->o->repo) || strcmp(rev, c->o->revision)) {
		int rc = c->o->conv.force ? 0 :
			coli_err_set(err, -EEXIST, "%s: holds a partial pull of %s@%s; run that again "
				     "to finish it, or use --force to start over", c->o->conv.out_dir,
				     repo, rev);
		json_decref(st);
		return rc;
	}
	snprintf(commit, cap, "%s", sha);
	c->state = st;
	return 0;
}

/* ---- files before shards ---- */

static const hub_file *repo_file(const hub_repo *r, const char *path)
{
	for (int i = 0; i < r->n_files; i++)
		if (!strcmp(r->files[i].path, path))
			return &r->files[i];
	return NULL;
}

/* A small file is kept when its size (and sha256 when the hub gives one)
 * match; else fetched again. */
static int fetch_small(pull_ctx *c, const hub_file *f, coli_err *err)
{
	char path[4400], got[65];
	struct stat st;
	snprintf(path, sizeof path, "%s/%s", c->stage, f->path);
	if (stat(path, &st) == 0 && (uint64_t)st.st_size == f->size &&
	    (!f->sha256[0] || (coli_sha256_file(path, got, NULL) == 0 && !strcmp(got, f->sha256))))
		return 0;
	int rc = hub_fetch_file(&c->h, c->repo.commit, f->path, path, err);
	if (rc < 0)
		return rc;
	if (f->sha256[0] && (coli_sha256_file(path, got, err) < 0 || strcmp(got, f->sha256))) {
		unlink(path);
		return coli_err_set(err, -EBADMSG, "%s: sha256 mismatch (hub %s)", f->path, f->sha256);
	}
	return 0;
}

static uint64_t le64(const uint8_t *b)
{
	uint64_t n = 0;
	for (int i = 7; i >= 0; i--)
		n = n << 8 | b[i];
	return n;
}

/* The shard as a sparse file of its full size holding only its header. */
static int make_placeholder(pull_ctx *c, shard *s, coli_err *err)
{
	struct stat st;
	char tmp[4500];
	if (stat(s->path, &st) == 0 && (uint64_t)st.st_size == s->hf->size)
		return 0;
	snprintf(tmp, sizeof tmp, "%s.part", s->path);
	int fd = open(tmp, O_RDWR | O_CREAT | O_TRUNC, 0644), rc;
	if (fd < 0)
		return coli_err_set(err, -errno, "%s: %s", tmp, strerror(errno));
	hub_range r = { 0, 8, 0 };
	uint8_t b[8];
	if (s->hf->size < 8) {
		rc = coli_err_set(err, -EPROTO, "%s: %llu bytes: not a safetensors file", s->hf->path,
				  (unsigned long long)s->hf->size);
		goto out;
	}
	if ((rc = hub_fetch_ranges(&c->h, c->repo.commit, s->hf->path, s->hf->size, fd, &r, 1, 1, NULL, NULL,
				   err)) < 0)
		goto out;
	if (pread(fd, b, 8, 0) != 8) {
		rc = coli_err_set(err, -EIO, "%s: short read", tmp);
		goto out;
	}
	uint64_t n = le64(b);
	if (n > ST_MAX_HEADER_BYTES || 8 + n > s->hf->size) {
		rc = coli_err_set(err, -EPROTO, "%s: header length %llu does not fit the file's %llu "
				  "bytes", s->hf->path, (unsigned long long)n,
				  (unsigned long long)s->hf->size);
		goto out;
	}
	r = (hub_range){ 8, n, 0 };
	if (n && (rc = hub_fetch_ranges(&c->h, c->repo.commit, s->hf->path, s->hf->size, fd, &r, 1, 1, NULL,
					NULL, err)) < 0)
		goto out;
	if (ftruncate(fd, (off_t)s->hf->size) < 0 || fsync(fd) < 0) {
		rc = coli_err_set(err, -errno, "%s: %s", tmp, strerror(errno));
		goto out;
	}
	rc = rename(tmp, s->path) < 0 ? coli_err_set(err, -errno, "%s: %s", s->path, strerror(errno)) : 0;
out:
	close(fd);
	if (rc < 0)
		unlink(tmp);
	return rc;
}

static int cmp_hub_file(const void *a, const void *b)
{
	return strcmp((*(const hub_file *const *)a)->path, (*(const hub_file *const *)b)->path);
}

/* The shards: those the index names (or model.safetensors), sorted by name
 * as the checkpoint reader orders them. */
static int list_shards(pull_ctx *c, coli_err *err)
{
	char path[2200];
	const hub_file **list = calloc((size_t)c->repo.n_files + 1, sizeof *list);
	int n = 0, rc = 0;
	json_t *idx = NULL;
	if (!list)
		return coli_err_set(err, -ENOMEM, "out of memory");
	if (repo_file(&c->repo, INDEX_NAME)) {
		snprintf(path, sizeof path, "%s/" INDEX_NAME, c->stage);
		if ((rc = manifest_load(path, &idx, err)) < 0)
			goto out;
		json_t *wm = json_object_get(idx, "weight_map"), *v;
		const char *k;
		json_object_foreach(wm, k, v) {
			const char *fn = json_string_value(v);
			const hub_file *f = fn ? repo_file(&c->repo, fn) : NULL;
			int seen = 0;
			if (!f) {
				rc = coli_err_set(err, -ENOENT, "%s: names %s, which %s@%s does not hold",
						  INDEX_NAME, fn ? fn : "(not a string)", c->o->repo,
						  c->repo.commit);
				goto out;
			}
			for (int i = 0; i < n && !seen; i++)
				seen = list[i] == f;
			if (!seen)
				list[n++] = f;
		}
	} else if (repo_file(&c->repo, SINGLE_NAME)) {
		list[n++] = repo_file(&c->repo, SINGLE_NAME);
	} else {
		rc = coli_err_set(err, -ENOENT, "%s@%s: no %s nor %s: not a safetensors checkpoint",
				  c->o->repo, c->repo.commit, INDEX_NAME, SINGLE_NAME);
		goto out;
	}
	qsort(list, (size_t)n, sizeof *list, cmp_hub_file);
	if (!(c->sh = calloc((size_t)n, sizeof *c->sh))) {
		rc = coli_err_set(err, -ENOMEM, "out of memory");
		goto out;
	}
	c->n_sh = n;
	for (int i = 0; i < n; i++) {
		shard *s = &c->sh[i];
		s->hf = list[i];
		s->fd = -1;
		snprintf(s->path, sizeof s->path, "%s/%s", c->stage, s->hf->path);
		if (!s->hf->sha256[0]) {
			rc = coli_err_set(err, -EPROTO, "%s: the hub gives no LFS sha256 for it, so it "
					  "cannot be verified", s->hf->path);
			goto out;
		}
		if (strchr(s->hf->path, '/')) {
			rc = coli_err_set(err, -EINVAL, "%s: shards in subdirectories are not supported",
					  s->hf->path);
			goto out;
		}
	}
out:
	json_decref(idx);
	free(list);
	return rc;
}

/* Chunks: ~4 per connection for a small shard, at most 64 MiB each. */
static int make_chunks(pull_ctx *c, shard *s, coli_err *err)
{
	uint64_t size = s->hf->size, conn = (uint64_t)(c->o->connections > 0 ? c->o->connections : 1);
	uint64_t ch = size / (conn * 4);
	if (ch < (64u << 10))
		ch = 64u << 10;
	if (ch > (64u << 20))
		ch = 64u << 20;
	ch = (ch + 4095) & ~(uint64_t)4095;
	s->n_chunks = (int)((size + ch - 1) / ch);
	if (!(s->chunks = calloc((size_t)s->n_chunks + 1, sizeof *s->chunks)))
		return coli_err_set(err, -ENOMEM, "out of memory");
	for (int k = 0; k < s->n_chunks; k++) {
		s->chunks[k].off = (uint64_t)k * ch;
		s->chunks[k].len = size - s->chunks[k].off < ch ? size - s->chunks[k].off : ch;
	}
	/* An earlier run's finished chunks and verification. */
	json_t *e = json_object_get(json_object_get(c->state, "shards"), s->hf->path);
	const char *bits = json_string_value(json_object_get(e, "chunks"));
	if (bits && strlen(bits) == (size_t)s->n_chunks) {
		for (int k = 0; k < s->n_chunks; k++)
			if (bits[k] == '1')
				s->chunks[k].got = s->chunks[k].len;
		s->verified = json_is_true(json_object_get(e, "verified"));
	}
	return 0;
}

/* ---- the schedule ---- */

struct ms_ctx {
	int ms;
};

static void note_ms(const st_tensor *t, void *ctx)
{
	struct ms_ctx *m = ctx;
	if (t->file_index > m->ms)
		m->ms = t->file_index;
}

struct rel_ctx {
	const st_checkpoint *ck;
	int *rel;
	int ms;
};

static void note_rel(const st_tensor *t, void *ctx)
{
	struct rel_ctx *r = ctx;
	int i = (int)(t - r->ck->tensors);
	if (r->rel[i] < r->ms)
		r->rel[i] = r->ms;
}

/* ms: the shard after which each container file can be written; rel: the
 * shard after which each source tensor is read by no unwritten file. */
static int schedule(pull_ctx *c, coli_err *err)
{
	const convert_plan *p = &c->cs.p;
	const st_checkpoint *ck = p->ck;
	if (ck->n_files != c->n_sh)
		return coli_err_set(err, -EPROTO, "%d shards planned, %d in the checkpoint", c->n_sh,
				    ck->n_files);
	c->ms = malloc(sizeof *c->ms * (size_t)(p->n_files + 1));
	c->rel = malloc(sizeof *c->rel * (size_t)(ck->n_tensors + 1));
	if (!c->ms || !c->rel)
		return coli_err_set(err, -ENOMEM, "out of memory");
	for (int i = 0; i < ck->n_tensors; i++)
		c->rel[i] = ck->tensors[i].file_index;
	for (int f = 0; f < p->n_files; f++) {
		struct ms_ctx m = { -1 };
		convert_file_each_source(p, &p->files[f], note_ms, &m);
		c->ms[f] = m.ms;
		struct rel_ctx r = { ck, c->rel, m.ms };
		convert_file_each_source(p, &p->files[f], note_rel, &r);
	}
	pull_summary *s = c->sum;
	s->n_shards = c->n_sh;
	for (int i = 0; i < p->n_files; i++)
		s->container_bytes += p->files[i].size;
	for (int k = 0; k < c->n_sh; k++) {
		uint64_t held = 0;
		if (c->sh[k].hf->size > s->largest_shard)
			s->largest_shard = c->sh[k].hf->size;
		for (int i = 0; i < ck->n_tensors; i++)
			if (ck->tensors[i].file_index <= k && c->rel[i] > k)
				held += ck->tensors[i].nbytes;
		if (held > s->largest_held)
			s->largest_held = held;
	}
	uint64_t small = 0;
	for (int i = 0; i < c->repo.n_files; i++)
		if (!strcmp(c->repo.files[i].path, "config.json") ||
		    !strcmp(c->repo.files[i].path, INDEX_NAME) ||
		    convert_is_tokenizer_file(c->repo.files[i].path))
			small += c->repo.files[i].size;
	s->peak_need = s->container_bytes + s->largest_shard + s->largest_held + small;
	return 0;
}

/* ---- disk ---- */

static uint64_t du_total;

static int du_add(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)path;
	(void)ftw;
	if (flag == FTW_F)
		du_total += (uint64_t)st->st_blocks * 512u;
	return 0;
}

/* Bytes allocated under dir (what the file system charges for it). */
static uint64_t disk_used(const char *dir)
{
	du_total = 0;
	nftw(dir, du_add, 16, FTW_PHYS);
	return du_total;
}

static void measure_peak(pull_ctx *c)
{
	uint64_t u = disk_used(c->o->conv.out_dir);
	if (u > c->sum->peak_measured)
		c->sum->peak_measured = u;
}

static int precheck_space(pull_ctx *c, coli_err *err)
{
	struct statvfs v;
	char a[32], b[32], d[32], e[32], f[32];
	pull_summary *s = c->sum;
	if (statvfs(c->o->conv.out_dir, &v) < 0)
		return 0;
	uint64_t avail = (uint64_t)v.f_bavail * (uint64_t)v.f_frsize;
	uint64_t have = disk_used(c->o->conv.out_dir);
	uint64_t need = s->peak_need > have ? s->peak_need - have : 0;
	if (need <= avail)
		return 0;
	return coli_err_set(err, -ENOSPC,
			    "%s: needs %s at peak (container %s + largest shard %s + tensors held "
			    "across shards %s), %s of it still to come, only %s free",
			    c->o->conv.out_dir, human(s->peak_need, a, sizeof a),
			    human(s->container_bytes, b, sizeof b), human(s->largest_shard, d, sizeof d),
			    human(s->largest_held, e, sizeof e), human(need, f, sizeof f),
			    human(avail, (char[32]){ 0 }, 32));
}

/* Before any shard byte is asked for: the shards the hub lists must fit
 * where they go, the largest at least (a hub claiming a shard of 10 GB on
 * a disk with less is refused here, not after minutes of retries). */
static int precheck_shards(pull_ctx *c, coli_err *err)
{
	struct statvfs v;
	char a[32], b[32];
	const hub_file *big = NULL;
	for (int k = 0; k < c->n_sh; k++)
		if (!big || c->sh[k].hf->size > big->size)
			big = c->sh[k].hf;
	if (!big || statvfs(c->stage, &v) < 0)
		return 0;
	uint64_t avail = (uint64_t)v.f_bavail * (uint64_t)v.f_frsize;
	uint64_t have = disk_used(c->stage);
	if (big->size <= avail + have)
		return 0;
	return coli_err_set(err, -ENOSPC, "%s: the hub lists %s as %s, more than the %s free "
			    "in %s; nothing of it was downloaded", c->o->repo, big->path,
			    human(big->size, a, sizeof a), human(avail, b, sizeof b), c->o->conv.out_dir);
}

/* ---- the plan, for --dry-run and the log ---- */

static void print_plan(pull_ctx *c)
{
	const convert_plan *p = &c->cs.p;
	pull_summary *s = c->sum;
	char a[32], b[32], d[32];
	uint64_t dense = 0, experts = 0, total_src = 0;
	for (int i = 0; i < p->n_files; i++) {
		if (!strncmp(p->files[i].path, "experts/", 8))
			experts += p->files[i].size;
		else
			dense += p->files[i].size;
	}
	printf("pull %s@%s (commit %s) -> %s\n", c->o->repo, c->o->revision, c->repo.commit,
	       c->o->conv.out_dir);
	printf("  files to fetch:\n");
	for (int i = 0; i < c->repo.n_files; i++) {
		const hub_file *f = &c->repo.files[i];
		int is_shard = 0;
		for (int k = 0; k < c->n_sh; k++)
			is_shard |= c->sh[k].hf == f;
		if (!is_shard && strcmp(f->path, "config.json") && strcmp(f->path, INDEX_NAME) &&
		    !convert_is_tokenizer_file(f->path))
			continue;
		total_src += f->size;
		printf("    %-48s %12s%s\n", f->path, human(f->size, a, sizeof a),
		       is_shard ? "  (shard, sha256 checked, freed once converted)" : "");
	}
	printf("  download    %s in %d shards (largest %s)\n", human(total_src, a, sizeof a),
	       c->n_sh, human(s->largest_shard, b, sizeof b));
	printf("  container   %s: dense part (resident in RAM) %s, experts (read from disk) %s\n",
	       human(s->container_bytes, a, sizeof a), human(dense, b, sizeof b),
	       human(experts, d, sizeof d));
	printf("  peak disk   %s = container + largest shard %s + tensors held across a shard "
	       "boundary %s\n", human(s->peak_need, a, sizeof a), human(s->largest_shard, b, sizeof b),
	       human(s->largest_held, d, sizeof d));
	struct statvfs v;
	const char *dir = c->o->conv.out_dir;
	char parent[4096];
	snprintf(parent, sizeof parent, "%s", dir);
	/* OUT may not exist yet: ask its nearest existing ancestor. */
	while (statvfs(parent, &v) < 0) {
		char *sl = strrchr(parent, '/');
		if (!sl || sl == parent) {
			snprintf(parent, sizeof parent, "%s", sl == parent ? "/" : ".");
			if (statvfs(parent, &v) < 0)
				memset(&v, 0, sizeof v);
			break;
		}
		*sl = '\0';
	}
	uint64_t avail = (uint64_t)v.f_bavail * (uint64_t)v.f_frsize;
	printf("  free there  %s: %s\n", human(avail, a, sizeof a),
	       avail >= s->peak_need ? "enough" : "NOT enough");
	long pages = sysconf(_SC_PHYS_PAGES), psz = sysconf(_SC_PAGESIZE);
	uint64_t ram = pages > 0 && psz > 0 ? (uint64_t)pages * (uint64_t)psz : 0;
	printf("  RAM         %s on this machine: %s the dense part (%s)\n", human(ram, a, sizeof a),
	       ram >= dense ? "holds" : "does NOT hold", human(dense, b, sizeof b));
}

/* ---- progress ---- */

static uint64_t shard_got(const shard *s)
{
	uint64_t g = 0;
	for (int k = 0; k < s->n_chunks; k++)
		g += s->chunks[k].got;
	return g;
}

static int files_done(pull_ctx *c)
{
	int n = 0;
	for (int i = 0; i < c->cs.p.n_files; i++)
		n += c->cs.done[i] == 1 || c->cs.done[i] == 4;
	return n;
}

static void progress_line(pull_ctx *c, int final)
{
	const shard *s = &c->sh[c->cur];
	char a[32], b[32], r[32];
	uint64_t got = shard_got(s);
	double dt = now_s() - c->t_shard;
	double rate = dt > 0 ? (double)(got - c->bytes_before) / dt : 0;
	uint64_t left = 0;
	for (int k = c->cur; k < c->n_sh; k++)
		left += c->sh[k].hf->size - (k == c->cur ? got : 0);
	double eta = rate > 0 ? (double)left / rate : 0;
	fprintf(stderr, "\r\033[Kshard %d/%d %s/%s %s/s ETA %dm%02ds files %d/%d%s", c->cur + 1,
		c->n_sh, human(got, a, sizeof a), human(s->hf->size, b, sizeof b),
		human((uint64_t)rate, r, sizeof r), (int)(eta / 60), (int)eta % 60, files_done(c),
		c->cs.p.n_files, final ? "\n" : "");
	fflush(stderr);
}

static int on_progress(void *ctx, int range_done)
{
	pull_ctx *c = ctx;
	shard *s = &c->sh[c->cur];
	double t = now_s();
	if (range_done && t - c->last_save >= 1.0) {
		/* Bytes on disk before the state says so. */
		coli_err e = { 0, "" };
		if (fdatasync(s->fd) < 0 || state_save(c, &e) < 0)
			return -EIO;
		c->last_save = t;
		fault_point();
	} else if (range_done && save_every_chunk()) {
		/* Test builds: a kill point per chunk, state saved first. */
		coli_err e = { 0, "" };
		if (fdatasync(s->fd) < 0 || state_save(c, &e) < 0)
			return -EIO;
		fault_point();
	}
	if (!c->o->quiet && c->o->progress_tty && t - c->last_line >= 0.5) {
		c->last_line = t;
		progress_line(c, 0);
	}
	return 0;
}

/* ---- one shard ---- */

static int shard_verify(pull_ctx *c, shard *s, coli_err *err)
{
	char got[65];
	int rc = coli_sha256_file(s->path, got, err);
	if (rc < 0)
		return rc;
	if (strcmp(got, s->hf->sha256))
		return coli_err_set(err, -EBADMSG, "%s: sha256 %s, the hub says %s", s->hf->path, got,
				    s->hf->sha256);
	(void)c;
	return 0;
}

static int shard_fetch(pull_ctx *c, int k, coli_err *err)
{
	shard *s = &c->sh[k];
	char a[32];
	int rc = 0;
	for (int attempt = 0; attempt < 2 && !s->verified; attempt++) {
		if (attempt) {
			coli_warn("%s: sha256 mismatch, downloading it again", s->hf->path);
			for (int i = 0; i < s->n_chunks; i++)
				s->chunks[i].got = 0;
		}
		s->fd = open(s->path, O_RDWR);
		if (s->fd < 0)
			return coli_err_set(err, -errno, "%s: %s", s->path, strerror(errno));
		c->cur = k;
		c->bytes_before = shard_got(s);
		c->t_shard = now_s();
		/* Chunks finished before an interruption are trusted: the state
		 * listed them only after their bytes were on disk. */
		rc = hub_fetch_ranges(&c->h, c->repo.commit, s->hf->path, s->hf->size, s->fd, s->chunks,
				      s->n_chunks, c->o->connections, on_progress, c, err);
		if (rc == 0 && fsync(s->fd) < 0)
			rc = coli_err_set(err, -errno, "%s: %s", s->path, strerror(errno));
		if (rc == 0 && !c->o->quiet && c->o->progress_tty)
			progress_line(c, 1);
		close(s->fd);
		s->fd = -1;
		c->sum->bytes_downloaded += shard_got(s) - c->bytes_before;
		if (rc < 0) {
			coli_err e2 = { 0, "" };
			state_save(c, &e2);
			return rc;
		}
		c->sum->shards_fetched++;
		coli_err verr = { 0, "" };
		if (shard_verify(c, s, &verr) == 0) {
			s->verified = 1;
			if ((rc = state_save(c, err)) < 0)
				return rc;
			double dt = now_s() - c->t_shard;
			coli_info("[shard %d/%d] %s: %s downloaded in %.1f s, sha256 verified", k + 1,
				  c->n_sh, s->hf->path, human(s->hf->size, a, sizeof a), dt);
			fault_point();
			return 0;
		}
		if (attempt == 1) {
			for (int i = 0; i < s->n_chunks; i++)
				s->chunks[i].got = 0;
			coli_err e2 = { 0, "" };
			state_save(c, &e2);
			return coli_err_set(err, -EBADMSG, "%s: corrupt after downloading it twice (%s)",
					    s->hf->path, verr.msg);
		}
	}
	return rc;
}

static const st_tensor *sort_base;

static int cmp_by_offset(const void *a, const void *b)
{
	uint64_t x = sort_base[*(const int *)a].offset, y = sort_base[*(const int *)b].offset;
	return x < y ? -1 : x > y;
}

static int punch(pull_ctx *c, int fd, uint64_t a, uint64_t b, uint64_t page, const char *path,
		 coli_err *err)
{
	a = (a + page - 1) / page * page;
	b = b / page * page;
	if (b <= a || !c->punch_ok)
		return 0;
	if (fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)a, (off_t)(b - a)) == 0)
		return 0;
	if (errno == EOPNOTSUPP || errno == ENOSYS) {
		coli_warn("%s: this file system cannot free parts of a file; a shard is freed only "
			  "once all of it is converted", c->stage);
		c->punch_ok = 0;
		return 0;
	}
	return coli_err_set(err, -errno, "%s: freeing converted tensors: %s", path, strerror(errno));
}

/* Punch out the tensors of shard j that no file after step k reads. */
static int punch_runs(pull_ctx *c, const st_checkpoint *ck, int j, int k, int fd, uint64_t page,
		      const char *path, coli_err *err)
{
	int n = 0, rc = 0;
	int *idx = malloc(sizeof *idx * (size_t)(ck->n_tensors + 1));
	if (!idx)
		return coli_err_set(err, -ENOMEM, "out of memory");
	for (int i = 0; i < ck->n_tensors; i++)
		if (ck->tensors[i].file_index == j)
			idx[n++] = i;
	sort_base = ck->tensors;
	qsort(idx, (size_t)n, sizeof *idx, cmp_by_offset);
	uint64_t a = 0, b = 0;
	int open_run = 0;
	for (int q = 0; q <= n && rc == 0; q++) {
		const st_tensor *t = q < n ? &ck->tensors[idx[q]] : NULL;
		int freed = t && c->rel[idx[q]] <= k;
		if (freed && open_run && t->offset == b) {
			b += t->nbytes;
			continue;
		}
		if (open_run)
			rc = punch(c, fd, a, b, page, path, err);
		open_run = freed;
		if (freed) {
			a = t->offset;
			b = t->offset + t->nbytes;
		}
	}
	free(idx);
	return rc;
}

/* Free what no unwritten file reads: tensor ranges by hole punching, and
 * whole shards once nothing in them is read. */
static int release_after(pull_ctx *c, int k, coli_err *err)
{
	const st_checkpoint *ck = c->cs.p.ck;
	long pg = sysconf(_SC_PAGESIZE);
	uint64_t page = pg > 0 ? (uint64_t)pg : 4096;
	for (int j = 0; j <= k; j++) {
		shard *s = &c->sh[j];
		int keep = 0, fd = -1;
		uint64_t hdr = UINT64_MAX;
		for (int i = 0; i < ck->n_tensors; i++) {
			const st_tensor *t = &ck->tensors[i];
			if (t->file_index != j)
				continue;
			if (t->offset < hdr)
				hdr = t->offset;
			if (c->rel[i] > k)
				keep = 1;
		}
		if (hdr == UINT64_MAX)
			hdr = s->hf->size;
		if (!keep) {
			int rc = convert_shard_release(s->path, hdr, err);
			if (rc < 0)
				return rc;
			continue;
		}
		if (!c->punch_ok)
			continue;
		if ((fd = open(s->path, O_RDWR)) < 0)
			return coli_err_set(err, -errno, "%s: %s", s->path, strerror(errno));
		/* Runs of adjacent freed tensors are punched as one range, so
		 * tensors smaller than a page are freed too. */
		int rc = punch_runs(c, ck, j, k, fd, page, s->path, err);
		close(fd);
		if (rc < 0)
			return rc;
	}
	return 0;
}

/* Files of the resume state that should exist for the steps recorded as
 * done but do not verify: their shards may be freed already, so start the
 * shard walk over (finished files are kept). */
static void recover(pull_ctx *c)
{
	int bad = -1;
	for (int f = 0; f < c->cs.p.n_files && bad < 0; f++)
		if (c->ms[f] <= c->step_done && c->ms[f] >= 0 && !convert_file_done(&c->cs, f))
			bad = f;
	if (bad < 0)
		return;
	coli_warn("%s: written earlier but does not verify; fetching its shards again",
		  c->cs.p.files[bad].path);
	for (int k = 0; k < c->n_sh && k <= c->step_done + 1; k++) {
		c->sh[k].verified = 0;
		for (int i = 0; i < c->sh[k].n_chunks; i++)
			c->sh[k].chunks[i].got = 0;
	}
	c->step_done = -1;
}

struct need_ctx {
	int shard, hit;
};

static void note_need(const st_tensor *t, void *ctx)
{
	struct need_ctx *n = ctx;
	n->hit |= t->file_index == n->shard;
}

/* Does an unwritten file read shard k? (On a resume, maybe none does.) */
static int shard_needed(pull_ctx *c, int k)
{
	for (int f = 0; f < c->cs.p.n_files; f++) {
		struct need_ctx n = { k, 0 };
		if (c->ms[f] < k || convert_file_done(&c->cs, f))
			continue;
		convert_file_each_source(&c->cs.p, &c->cs.p.files[f], note_need, &n);
		if (n.hit)
			return 1;
	}
	return 0;
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

static int walk(pull_ctx *c, coli_err *err)
{
	int rc;
	recover(c);
	for (int k = 0; k < c->n_sh; k++) {
		if (k <= c->step_done)
			continue;
		if (shard_needed(c, k) && (rc = shard_fetch(c, k, err)) < 0)
			return rc;
		int wrote = 0;
		for (int f = 0; f < c->cs.p.n_files; f++) {
			if (c->ms[f] > k || convert_file_done(&c->cs, f))
				continue;
			if ((rc = convert_file_ensure(&c->cs, f, err)) < 0)
				return rc;
			wrote++;
			fault_point();
		}
		/* The highest point: this shard and everything written from it. */
		measure_peak(c);
		if ((rc = release_after(c, k, err)) < 0)
			return rc;
		fault_point();
		c->step_done = k;
		if ((rc = state_save(c, err)) < 0)
			return rc;
		coli_info("[shard %d/%d] %s: %d container files written, converted tensors freed",
			  k + 1, c->n_sh, c->sh[k].hf->path, wrote);
		fault_point();
	}
	/* Files that read no shard (tokenizer copies) and any left over. */
	for (int f = 0; f < c->cs.p.n_files; f++)
		if ((rc = convert_file_ensure(&c->cs, f, err)) < 0)
			return rc;
	measure_peak(c);
	return 0;
}

/* OUT is a finished container: up to date (0) when it was pulled from the
 * commit the revision names now, else an error saying what it holds. */
static int already_pulled(pull_ctx *c, const char *man, coli_err *err)
{
	json_t *m = NULL;
	coli_err e2 = { 0, "" };
	const char *dir = c->o->conv.out_dir;
	if (manifest_load(man, &m, &e2) < 0)
		return coli_err_set(err, -EEXIST, "%s: holds a container whose manifest.json cannot be read "
				    "(%s); use --force to replace it", dir, e2.msg);
	const char *src = json_string_value(json_object_get(json_object_get(m, "source"), "name"));
	char want[400];
	int rc = hub_repo_info(&c->h, c->o->revision, &c->repo, err);
	if (rc == 0) {
		snprintf(c->sum->commit, sizeof c->sum->commit, "%s", c->repo.commit);
		snprintf(want, sizeof want, "%s@%s", c->o->repo, c->repo.commit);
		if (!src || strcmp(src, want))
			rc = coli_err_set(err, -EEXIST, "%s: already holds a complete container of %s, not "
					  "%s@%s (commit %s); use --force to replace it", dir,
					  src ? src : "another source", c->o->repo, c->o->revision,
					  c->repo.commit);
	}
	json_decref(m);
	return rc;
}

void pull_opts_default(pull_opts *o)
{
	memset(o, 0, sizeof *o);
	convert_opts_default(&o->conv);
	o->revision = "main";
	o->connections = 4;
}

int pull_run(const pull_opts *o, pull_summary *sum, coli_err *err)
{
	pull_ctx c;
	char pinned[64] = "", tmpdir[2048] = "/tmp/coli-pull-XXXXXX", plan_out[2100];
	int rc, tmp_stage = 0;
	memset(&c, 0, sizeof c);
	memset(sum, 0, sizeof *sum);
	c.o = o;
	c.sum = sum;
	c.step_done = -1;
	c.punch_ok = 1;
	c.t0 = now_s();
	if (strlen(o->conv.out_dir) > 1900)
		return coli_err_set(err, -ENAMETOOLONG, "%s: path too long", o->conv.out_dir);
	/* names checked before anything is created or asked of the hub */
	if ((rc = hub_client_init(&c.h, o->repo, err)) < 0 || (rc = hub_check_revision(o->revision, err)) < 0)
		return rc;
	if (o->dry_run) {
		/* Headers only, in a scratch directory: sparse files take no space. */
		const char *td = getenv("TMPDIR");
		if (td && *td && strlen(td) < 1900)
			snprintf(tmpdir, sizeof tmpdir, "%s/coli-pull-XXXXXX", td);
		char *d = mkdtemp(tmpdir);
		if (!d)
			return coli_err_set(err, -errno, "mkdtemp: %s", strerror(errno));
		snprintf(c.stage, sizeof c.stage, "%s", d);
		tmp_stage = 1;
	} else {
		if (mkdir(o->conv.out_dir, 0755) < 0 && errno != EEXIST)
			return coli_err_set(err, -errno, "%s: cannot create: %s", o->conv.out_dir,
					    strerror(errno));
		char man[4200];
		snprintf(man, sizeof man, "%s/manifest.json", o->conv.out_dir);
		if (access(man, F_OK) == 0 && !o->conv.force) {
			rc = already_pulled(&c, man, err);
			if (rc == 0)
				sum->up_to_date = 1;
			hub_repo_free(&c.repo);
			return rc;
		}
		snprintf(c.stage, sizeof c.stage, "%s/" STAGING, o->conv.out_dir);
		if (mkdir(c.stage, 0755) < 0 && errno != EEXIST)
			return coli_err_set(err, -errno, "%s: cannot create: %s", c.stage,
					    strerror(errno));
		snprintf(c.state_path, sizeof c.state_path, "%s/state.json", c.stage);
		if ((rc = state_load(&c, pinned, sizeof pinned, err)) < 0)
			goto out;
	}
	if ((rc = hub_repo_info(&c.h, pinned[0] ? pinned : o->revision, &c.repo, err)) < 0)
		goto out;
	snprintf(sum->commit, sizeof sum->commit, "%s", c.repo.commit);
	if (pinned[0]) {
		coli_info("resuming %s@%s at commit %s", o->repo, o->revision, pinned);
	} else if (!o->dry_run) {
		/* No pull to resume: nothing under .pull/ can be trusted (shards
		 * of another commit may share names and sizes). */
		nftw(c.stage, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
		if (mkdir(c.stage, 0755) < 0) {
			rc = coli_err_set(err, -errno, "%s: cannot create: %s", c.stage, strerror(errno));
			goto out;
		}
	}
	const hub_file *cfg = repo_file(&c.repo, "config.json");
	if (!cfg) {
		rc = coli_err_set(err, -ENOENT, "%s@%s: no config.json: not a model checkpoint",
				  o->repo, o->revision);
		goto out;
	}
	if ((rc = fetch_small(&c, cfg, err)) < 0)
		goto out;
	for (int i = 0; i < c.repo.n_files; i++) {
		const hub_file *f = &c.repo.files[i];
		if ((!strcmp(f->path, INDEX_NAME) || convert_is_tokenizer_file(f->path)) &&
		    !strchr(f->path, '/') && (rc = fetch_small(&c, f, err)) < 0)
			goto out;
	}
	if ((rc = list_shards(&c, err)) < 0 || (!o->dry_run && (rc = precheck_shards(&c, err)) < 0))
		goto out;
	for (int k = 0; k < c.n_sh; k++) {
		if ((rc = make_placeholder(&c, &c.sh[k], err)) < 0 ||
		    (rc = make_chunks(&c, &c.sh[k], err)) < 0)
			goto out;
	}
	json_t *sd = json_object_get(c.state, "step");
	c.step_done = json_is_integer(sd) ? (int)json_integer_value(sd) : -1;
	c.co = o->conv;
	c.co.src_dir = c.stage;
	c.co.staging = STAGING;
	c.co.source_id = c.repo.commit;
	if (o->dry_run) {
		/* Plan against the scratch directory; OUT is not touched. */
		c.co.staging = NULL;
		snprintf(plan_out, sizeof plan_out, "%s/plan-out", c.stage);
		c.co.out_dir = plan_out;
	}
	if ((rc = convert_begin(&c.co, &c.cs, err)) < 0)
		goto out;
	c.began = 1;
	if ((rc = schedule(&c, err)) < 0)
		goto out;
	if (o->dry_run) {
		print_plan(&c);
		goto out;
	}
	if (!o->quiet)
		print_plan(&c);
	if ((rc = precheck_space(&c, err)) < 0)
		goto out;
	if ((rc = state_save(&c, err)) < 0 || (rc = walk(&c, err)) < 0)
		goto out;
	char label[400];
	snprintf(label, sizeof label, "%s@%s", o->repo, c.repo.commit);
	if ((rc = convert_finish(&c.cs, label, err)) < 0)
		goto out;
	/* Complete: the downloads and their state go. */
	nftw(c.stage, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
	manifest_fsync_dir(o->conv.out_dir, NULL);
out:
	if (c.began)
		convert_end(&c.cs, &sum->conv);
	if (tmp_stage)
		nftw(c.stage, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
	for (int k = 0; k < c.n_sh; k++)
		free(c.sh[k].chunks);
	free(c.sh);
	free(c.ms);
	free(c.rel);
	json_decref(c.state);
	hub_repo_free(&c.repo);
	return rc;
}
