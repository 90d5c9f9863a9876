/* pull_punch.c - hole punching: freeing the source ranges already converted (`coli pull`; pull_int.h). */
#include "config.h"

#include "pull_int.h"

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
int pull_release_after(pull_ctx *c, int k, coli_err *err)
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
