/* quant_pool.c - the compute pool of quant_kernels.h.
 *
 * DESIGN. n_threads - 1 persistent workers plus the calling thread. A run
 * publishes (fn, arg) and a ticket = (next index, n) in one 64-bit
 * atomic, then bumps a generation counter that wakes the workers (a short
 * spin, then a condition variable). Everyone claims indices with a CAS on
 * the ticket, runs them, and counts them in `done`; the caller returns
 * when done == n. It never waits for a worker that has not woken up: on a
 * shared, oversubscribed machine a descheduled worker simply misses the
 * job. Nothing is allocated per run.
 *
 * Why a CAS on (next, n) rather than fetch_add on next: a late worker may
 * still hold a ticket value from an earlier job. Its CAS can only succeed
 * on the current job's ticket with next < n, and a claimed, unfinished
 * index keeps the caller from publishing another job, so fn/arg read
 * after a successful claim always belong to the claimed job (the claim's
 * acquire pairs with the caller's release store of the ticket). Even an
 * ABA (the same (next, n) in a later job) claims a genuine index of the
 * job that is current.
 *
 * Owner: one caller at a time (run_lock serializes callers). A run started
 * from inside fn (on any pool) executes inline on that thread: nesting
 * would otherwise deadlock on run_lock. */
#include "config.h"

#include "quant_kernels.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#include "coli_log.h"

/* Spins before sleeping: long enough to bridge the gap between two
 * matvecs of one decode step, short enough not to burn a shared core. */
#define POOL_SPIN 2000

/* Set while this thread executes a pool task (see coli_pool_run). */
static _Thread_local int in_task;

struct coli_pool {
	int n_threads;          /* including the caller */
	int n_started;          /* workers actually running */
	pthread_t *threads;
	pthread_mutex_t run_lock;
	pthread_mutex_t lock;   /* guards sleeping only */
	pthread_cond_t wake;
	pthread_cond_t done_cv;
	/* current job, written by the caller before the ticket (see DESIGN) */
	void (*fn)(void *arg, int i);
	void *arg;
	_Atomic uint64_t ticket; /* next << 32 | n */
	_Atomic int done;
	_Atomic int caller_sleeping;
	_Atomic int sleepers;   /* workers in (or entering) cond_wait */
	_Atomic unsigned gen;
	_Atomic int stop;
};

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#endif
}

/* Claim and run indices of the current job until none is left. */
static void pool_take(struct coli_pool *p)
{
	uint64_t t = atomic_load_explicit(&p->ticket, memory_order_acquire);
	for (;;) {
		uint32_t next = (uint32_t)(t >> 32), n = (uint32_t)t;
		if (next >= n)
			return;
		if (!atomic_compare_exchange_weak_explicit(&p->ticket, &t, t + ((uint64_t)1 << 32),
							   memory_order_acquire, memory_order_acquire))
			continue;
		in_task = 1;
		p->fn(p->arg, (int)next);
		in_task = 0;
		/* seq_cst: pairs with the caller's caller_sleeping store */
		if (atomic_fetch_add_explicit(&p->done, 1, memory_order_seq_cst) + 1 == (int)n &&
		    atomic_load_explicit(&p->caller_sleeping, memory_order_seq_cst)) {
			pthread_mutex_lock(&p->lock);
			pthread_cond_signal(&p->done_cv);
			pthread_mutex_unlock(&p->lock);
		}
		t = atomic_load_explicit(&p->ticket, memory_order_acquire);
	}
}

static void *pool_worker(void *opaque)
{
	struct coli_pool *p = opaque;
	unsigned seen = 0;

	for (;;) {
		unsigned g = atomic_load_explicit(&p->gen, memory_order_acquire);
		for (int k = 0; g == seen && k < POOL_SPIN; k++) {
			cpu_relax();
			g = atomic_load_explicit(&p->gen, memory_order_acquire);
		}
		if (g == seen) {
			/* Announce before the last check (seq_cst, pairs with the
			 * caller's gen bump then sleepers load): either the caller
			 * sees us and broadcasts under the mutex, or we see its
			 * new generation and do not sleep. */
			pthread_mutex_lock(&p->lock);
			atomic_fetch_add_explicit(&p->sleepers, 1, memory_order_seq_cst);
			while ((g = atomic_load_explicit(&p->gen, memory_order_seq_cst)) == seen)
				pthread_cond_wait(&p->wake, &p->lock);
			atomic_fetch_sub_explicit(&p->sleepers, 1, memory_order_relaxed);
			pthread_mutex_unlock(&p->lock);
		}
		seen = g;
		if (atomic_load_explicit(&p->stop, memory_order_acquire))
			break;
		pool_take(p);
	}
	return NULL;
}

coli_pool *coli_pool_new(int n_threads)
{
	if (n_threads <= 0) {
		long n = sysconf(_SC_NPROCESSORS_ONLN);
		n_threads = n > 0 ? (int)n : 1;
		/* under taskset or a cpuset, more threads than allowed CPUs
		 * would only take turns */
		cpu_set_t set;
		if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0 &&
		    CPU_COUNT(&set) < n_threads)
			n_threads = CPU_COUNT(&set);
	}
	if (n_threads > 1024)
		n_threads = 1024;
	struct coli_pool *p = calloc(1, sizeof *p);
	if (!p)
		return NULL;
	p->n_threads = n_threads;
	pthread_mutex_init(&p->run_lock, NULL);
	pthread_mutex_init(&p->lock, NULL);
	pthread_cond_init(&p->wake, NULL);
	pthread_cond_init(&p->done_cv, NULL);
	if (n_threads > 1) {
		p->threads = calloc((size_t)n_threads - 1, sizeof *p->threads);
		if (!p->threads)
			goto fail;
	}
	for (int t = 0; t < n_threads - 1; t++) {
		if (pthread_create(&p->threads[t], NULL, pool_worker, p) != 0) {
			coli_warn("compute pool: started %d of %d threads", t + 1, n_threads);
			break;
		}
		p->n_started++;
	}
	/* A pool that could not start every thread still works, smaller. */
	p->n_threads = p->n_started + 1;
	return p;
fail:
	coli_pool_free(p);
	return NULL;
}

void coli_pool_free(coli_pool *p)
{
	if (!p)
		return;
	pthread_mutex_lock(&p->lock);
	atomic_store_explicit(&p->stop, 1, memory_order_release);
	atomic_fetch_add_explicit(&p->gen, 1, memory_order_release);
	pthread_cond_broadcast(&p->wake);
	pthread_mutex_unlock(&p->lock);
	for (int t = 0; t < p->n_started; t++)
		pthread_join(p->threads[t], NULL);
	pthread_cond_destroy(&p->done_cv);
	pthread_cond_destroy(&p->wake);
	pthread_mutex_destroy(&p->lock);
	pthread_mutex_destroy(&p->run_lock);
	free(p->threads);
	free(p);
}

int coli_pool_size(const coli_pool *p)
{
	return p ? p->n_threads : 1;
}

static void pool_run_one(struct coli_pool *p, uint32_t n, void (*fn)(void *arg, int i), void *arg)
{
	p->fn = fn;
	p->arg = arg;
	atomic_store_explicit(&p->done, 0, memory_order_relaxed);
	atomic_store_explicit(&p->ticket, (uint64_t)n, memory_order_release);
	/* Spinning workers see the new generation by themselves; the mutex
	 * and the wakeup syscall are paid only when some worker sleeps. */
	atomic_fetch_add_explicit(&p->gen, 1, memory_order_seq_cst);
	if (atomic_load_explicit(&p->sleepers, memory_order_seq_cst)) {
		pthread_mutex_lock(&p->lock);
		pthread_cond_broadcast(&p->wake);
		pthread_mutex_unlock(&p->lock);
	}

	pool_take(p);

	for (int k = 0; atomic_load_explicit(&p->done, memory_order_acquire) != (int)n; k++) {
		if (k < POOL_SPIN) {
			cpu_relax();
			continue;
		}
		/* The worker finishing the last index signals only if it sees
		 * caller_sleeping; seq_cst on both sides means either it sees
		 * the flag or we see its done count before sleeping. */
		pthread_mutex_lock(&p->lock);
		atomic_store_explicit(&p->caller_sleeping, 1, memory_order_seq_cst);
		while (atomic_load_explicit(&p->done, memory_order_seq_cst) != (int)n)
			pthread_cond_wait(&p->done_cv, &p->lock);
		atomic_store_explicit(&p->caller_sleeping, 0, memory_order_relaxed);
		pthread_mutex_unlock(&p->lock);
	}
}

void coli_pool_run(coli_pool *p, int n, void (*fn)(void *arg, int i), void *arg)
{
	if (n <= 0)
		return;
	if (!p || p->n_started == 0 || n == 1 || in_task) {
		for (int i = 0; i < n; i++)
			fn(arg, i);
		return;
	}
	pthread_mutex_lock(&p->run_lock);
	pool_run_one(p, (uint32_t)n, fn, arg);
	pthread_mutex_unlock(&p->run_lock);
}
