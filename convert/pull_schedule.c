/* pull_schedule.c - the release schedule: when each container file is written and each source tensor freed (`coli pull`; pull_int.h). */
#include "config.h"

#include "pull_int.h"

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
int pull_schedule(pull_ctx *c, coli_err *err)
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
