/* pull_plan.c - disk accounting and the plan printout (`coli pull`; pull_int.h). */
#include "config.h"

#include "pull_int.h"

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

void pull_measure_peak(pull_ctx *c)
{
	uint64_t u = disk_used(c->o->conv.out_dir);
	if (u > c->sum->peak_measured)
		c->sum->peak_measured = u;
}

int pull_precheck_space(pull_ctx *c, coli_err *err)
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
int pull_precheck_shards(pull_ctx *c, coli_err *err)
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

void pull_print_plan(pull_ctx *c)
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
