/* quant_kernels_group.c - one pool run over the rows of several matrices.
 *
 * A decode step is many small products: a MoE layer is 8 routed experts
 * and a shared one, three matrices each of ~7 MB at GLM-5 sizes, ~350 us
 * apiece on two cores. Run one at a time, every product ends with both
 * threads meeting at the pool (one waits for the other's last chunk, the
 * memory bus idles meanwhile, a sleeping worker pays a futex wake). Here
 * the rows of all products of a group are cut into chunks of about the
 * same number of bytes and handed out in one run, so the group costs one
 * meeting. Which thread computes a row never changes its bits (each row is
 * one call of the row function, whose result does not depend on the range
 * it is called with), so a group gives exactly the products' own results.
 * Used by coli_matmul_group (quant_kernels.c) and coli_matmul_q8_group. */
#include "config.h"

#include "quant_kernels.h"

#include <stddef.h>

/* Below this many weight bytes (times inputs) a group runs on the calling
 * thread only: the pool's wakeup would cost more than the work. */
#define GROUP_MIN_BYTES (64 * 1024)
/* Chunk size: about 4 chunks per thread over the whole group, so a thread
 * the machine delays holds the others up by a fraction of the group, but
 * no more than 1 MiB (the tail a fast thread may wait for) and no less
 * than 64 KiB (below that the claim costs show). Rows in multiples of
 * 16: the q8 kernels' row groups (16 rows in a register's lanes; a chunk
 * ending mid-group would run a half-empty one). */
#define CHUNK_MAX (1024 * 1024)
#define CHUNK_MIN (64 * 1024)

struct group_job {
	coli_rows_seg_fn run;
	void *ctx;
	int nseg;
	const int *rows;
	int first[COLI_GROUP_SEGS + 1]; /* first task of each segment */
	int chunk[COLI_GROUP_SEGS];     /* rows per task */
};

static void group_task(void *arg, int t)
{
	const struct group_job *j = arg;
	int s = 0;
	while (t >= j->first[s + 1])
		s++;
	int r0 = (t - j->first[s]) * j->chunk[s];
	int r1 = r0 + j->chunk[s];
	if (r1 > j->rows[s])
		r1 = j->rows[s];
	j->run(j->ctx, s, r0, r1);
}

void coli_rows_dispatch(coli_pool *p, int nseg, const coli_qmat *const *w, const int *n,
			coli_rows_seg_fn run, void *ctx)
{
	if (nseg <= 0)
		return;
	int rows[COLI_GROUP_SEGS];
	size_t total = 0, work = 0;
	for (int s = 0; s < nseg; s++) {
		size_t b = coli_qtype_bytes(w[s]->qtype, w[s]->rows, w[s]->cols);
		rows[s] = w[s]->rows;
		total += b;
		work += b * (size_t)n[s];
	}
	const int threads = coli_pool_size(p);
	if (threads <= 1 || work < GROUP_MIN_BYTES || nseg > COLI_GROUP_SEGS) {
		for (int s = 0; s < nseg; s++)
			run(ctx, s, 0, rows[s]);
		return;
	}
	size_t target = total / ((size_t)threads * 4);
	target = target > CHUNK_MAX ? CHUNK_MAX : target < CHUNK_MIN ? CHUNK_MIN : target;
	struct group_job job = { run, ctx, nseg, rows, { 0 }, { 0 } };
	for (int s = 0; s < nseg; s++) {
		size_t rb = coli_qtype_row_bytes(w[s]->qtype, w[s]->cols);
		size_t c = rb ? target / rb : (size_t)rows[s];
		c = (c + 15) & ~(size_t)15;
		if (c < 16)
			c = 16;
		if (c > (size_t)rows[s])
			c = (size_t)rows[s] > 0 ? (size_t)rows[s] : 1;
		job.chunk[s] = (int)c;
		job.first[s + 1] = job.first[s] + (rows[s] + job.chunk[s] - 1) / job.chunk[s];
	}
	coli_pool_run(p, job.first[nseg], group_task, &job);
}
