/* quant_pool.c - the compute pool runs every index exactly once, for any
 * pool size and any n (including n smaller than the pool), run after run. */
#include "config.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#include "quant_kernels.h"

#define MAXN 5000

struct ctx {
	_Atomic int hits[MAXN];
	_Atomic long sum;
};

static void touch(void *arg, int i)
{
	struct ctx *c = arg;
	atomic_fetch_add(&c->hits[i], 1);
	atomic_fetch_add(&c->sum, i);
}

static int check_pool(coli_pool *p, int size)
{
	static struct ctx c;
	const int ns[] = { 0, 1, 2, 3, 7, 64, 1000, MAXN };
	int fails = 0;
	for (int rep = 0; rep < 200; rep++) {
		int n = ns[rep % (int)(sizeof ns / sizeof ns[0])];
		for (int i = 0; i < MAXN; i++)
			atomic_store(&c.hits[i], 0);
		atomic_store(&c.sum, 0);
		coli_pool_run(p, n, touch, &c);
		for (int i = 0; i < MAXN; i++) {
			int want = i < n ? 1 : 0;
			if (atomic_load(&c.hits[i]) != want) {
				fprintf(stderr, "pool %d: n=%d index %d ran %d times\n", size, n, i,
					atomic_load(&c.hits[i]));
				fails++;
				break;
			}
		}
		if (atomic_load(&c.sum) != (long)n * (n - 1) / 2)
			fails++;
	}
	return fails;
}

struct nest {
	coli_pool *p;
	_Atomic int inner[64];
};

static void nest_inner(void *arg, int i)
{
	_Atomic int *hits = arg;
	atomic_fetch_add(&hits[i], 1);
}

/* A task that itself runs a pool job: must run inline, not deadlock. */
static void nest_outer(void *arg, int i)
{
	struct nest *n = arg;
	static _Atomic int scratch[8][64];
	coli_pool_run(n->p, 8, nest_inner, scratch[i % 8]);
	atomic_fetch_add(&n->inner[i], 1);
}

static int check_nested(void)
{
	static struct nest n;
	n.p = coli_pool_new(3);
	if (!n.p)
		return 1;
	coli_pool_run(n.p, 64, nest_outer, &n);
	int fails = 0;
	for (int i = 0; i < 64; i++)
		if (atomic_load(&n.inner[i]) != 1)
			fails++;
	coli_pool_free(n.p);
	if (fails)
		fprintf(stderr, "nested runs: %d outer tasks wrong\n", fails);
	return fails;
}

int main(void)
{
	int fails = 0;
	coli_pool_free(NULL);
	fails += check_pool(NULL, 0);
	const int sizes[] = { 1, 2, 3, 8, 0 };
	for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
		coli_pool *p = coli_pool_new(sizes[s]);
		if (!p) {
			fprintf(stderr, "coli_pool_new(%d) failed\n", sizes[s]);
			return 1;
		}
		if (sizes[s] > 0 && coli_pool_size(p) != sizes[s]) {
			fprintf(stderr, "pool size %d, wanted %d\n", coli_pool_size(p), sizes[s]);
			fails++;
		}
		if (coli_pool_size(p) < 1)
			fails++;
		fails += check_pool(p, sizes[s]);
		coli_pool_free(p);
	}
	fails += check_nested();
	/* a pool that never ran must shut down cleanly too */
	coli_pool_free(coli_pool_new(4));
	if (fails)
		fprintf(stderr, "%d failures\n", fails);
	return fails ? 1 : 0;
}
