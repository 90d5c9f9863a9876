/* pull_progress.c - the progress line (`coli pull`; pull_int.h). */
#include "config.h"

#include "pull_int.h"

/* ---- progress ---- */

uint64_t pull_shard_got(const shard *s)
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

void pull_progress_line(pull_ctx *c, int final)
{
	const shard *s = &c->sh[c->cur];
	char a[32], b[32], r[32];
	uint64_t got = pull_shard_got(s);
	double dt = coli_now_s() - c->t_shard;
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

int pull_on_progress(void *ctx, int range_done)
{
	pull_ctx *c = ctx;
	shard *s = &c->sh[c->cur];
	double t = coli_now_s();
	if (range_done && t - c->last_save >= 1.0) {
		/* Bytes on disk before the state says so. */
		coli_err e = { 0, "" };
		if (fdatasync(s->fd) < 0 || pull_state_save(c, &e) < 0)
			return -EIO;
		c->last_save = t;
		pull_fault_point();
	} else if (range_done && save_every_chunk()) {
		/* Test builds: a kill point per chunk, state saved first. */
		coli_err e = { 0, "" };
		if (fdatasync(s->fd) < 0 || pull_state_save(c, &e) < 0)
			return -EIO;
		pull_fault_point();
	}
	if (!c->o->quiet && c->o->progress_tty && t - c->last_line >= 0.5) {
		c->last_line = t;
		pull_progress_line(c, 0);
	}
	return 0;
}
