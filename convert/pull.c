/* pull.c - `coli pull`: the driver (see pull.h for the design, pull_int.h
 * for its parts). */
#include "config.h"

#include "pull_int.h"
#include "util_file.h"

#ifdef COLI_FAULT_INJECTION
/* COLI_PULL_FAIL_AT=N: die by SIGKILL at the Nth point where state was just
 * made durable (a chunk batch, a verified shard, a container file, freed
 * tensors, a finished shard), as kill -9 would, for the resume tests. */
void pull_fault_point(void)
{
	static int n;
	const char *s = getenv("COLI_PULL_FAIL_AT");
	if (s && *s && ++n >= atoi(s))
		raise(SIGKILL);
}
#else
void pull_fault_point(void)
{
}
#endif

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
	if (ftruncate(fd, (off_t)s->hf->size) < 0) {
		rc = coli_err_set(err, -errno, "%s: %s", tmp, strerror(errno));
		goto out;
	}
	rc = coli_file_commit(fd, tmp, s->path, err);
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
		c->bytes_before = pull_shard_got(s);
		c->t_shard = coli_now_s();
		/* Chunks finished before an interruption are trusted: the state
		 * listed them only after their bytes were on disk. */
		rc = hub_fetch_ranges(&c->h, c->repo.commit, s->hf->path, s->hf->size, s->fd, s->chunks,
				      s->n_chunks, c->o->connections, pull_on_progress, c, err);
		if (rc == 0 && fsync(s->fd) < 0)
			rc = coli_err_set(err, -errno, "%s: %s", s->path, strerror(errno));
		if (rc == 0 && !c->o->quiet && c->o->progress_tty)
			pull_progress_line(c, 1);
		close(s->fd);
		s->fd = -1;
		c->sum->bytes_downloaded += pull_shard_got(s) - c->bytes_before;
		if (rc < 0) {
			coli_err e2 = { 0, "" };
			pull_state_save(c, &e2);
			return rc;
		}
		c->sum->shards_fetched++;
		coli_err verr = { 0, "" };
		if (shard_verify(c, s, &verr) == 0) {
			s->verified = 1;
			if ((rc = pull_state_save(c, err)) < 0)
				return rc;
			double dt = coli_now_s() - c->t_shard;
			coli_info("[shard %d/%d] %s: %s downloaded in %.1f s, sha256 verified", k + 1,
				  c->n_sh, s->hf->path, human(s->hf->size, a, sizeof a), dt);
			pull_fault_point();
			return 0;
		}
		if (attempt == 1) {
			for (int i = 0; i < s->n_chunks; i++)
				s->chunks[i].got = 0;
			coli_err e2 = { 0, "" };
			pull_state_save(c, &e2);
			return coli_err_set(err, -EBADMSG, "%s: corrupt after downloading it twice (%s)",
					    s->hf->path, verr.msg);
		}
	}
	return rc;
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
			pull_fault_point();
		}
		/* The highest point: this shard and everything written from it. */
		pull_measure_peak(c);
		if ((rc = pull_release_after(c, k, err)) < 0)
			return rc;
		pull_fault_point();
		c->step_done = k;
		if ((rc = pull_state_save(c, err)) < 0)
			return rc;
		coli_info("[shard %d/%d] %s: %d container files written, converted tensors freed",
			  k + 1, c->n_sh, c->sh[k].hf->path, wrote);
		pull_fault_point();
	}
	/* Files that read no shard (tokenizer copies) and any left over. */
	for (int f = 0; f < c->cs.p.n_files; f++)
		if ((rc = convert_file_ensure(&c->cs, f, err)) < 0)
			return rc;
	pull_measure_peak(c);
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
	c.t0 = coli_now_s();
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
		if ((rc = pull_state_load(&c, pinned, sizeof pinned, err)) < 0)
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
	if ((rc = list_shards(&c, err)) < 0 || (!o->dry_run && (rc = pull_precheck_shards(&c, err)) < 0))
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
	if ((rc = pull_schedule(&c, err)) < 0)
		goto out;
	if (o->dry_run) {
		pull_print_plan(&c);
		goto out;
	}
	if (!o->quiet)
		pull_print_plan(&c);
	if ((rc = pull_precheck_space(&c, err)) < 0)
		goto out;
	if ((rc = pull_state_save(&c, err)) < 0 || (rc = walk(&c, err)) < 0)
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
