/* pool.c - the compute pool of kernels.h.
 *
 * DESIGN. n_threads - 1 persistent workers plus the calling thread. A run
 * publishes (fn, arg, n) and bumps a generation counter; workers notice the
 * new generation (a short spin, then a condition variable), take indices
 * from one shared atomic counter until it passes n, and decrement `active`.
 * The caller takes indices too, then waits until `active` is 0. Nothing is
 * allocated per run.
 *
 * Memory ordering: the job fields are plain; they are written before the
 * generation bump (release) and read after a worker observes it (acquire),
 * and the workers' results are published by their acq_rel decrement of
 * `active`, which the caller reads with acquire. The mutex only guards
 * sleeping, so no wakeup is lost: a worker re-checks the generation under
 * the mutex before waiting, and the caller bumps it under the same mutex.
 *
 * Owner: one caller at a time (run_lock serializes callers). A run started
 * from inside fn (on any pool) executes inline on that thread: nesting
 * would otherwise deadlock on run_lock or wait on busy workers. */
#include "config.h"

#include "kernels.h"

#include <pthread.h>
#include <stdatomic.h>
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
	pthread_mutex_t lock;
	pthread_cond_t wake;
	pthread_cond_t done;
	/* current job (see DESIGN) */
	void (*fn)(void *arg, int i);
	void *arg;
	int n;
	_Atomic int next;
	_Atomic int active;
	_Atomic unsigned gen;
	_Atomic int stop;
};

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#endif
}

static void pool_take(struct coli_pool *p)
{
	for (;;) {
		int i = atomic_fetch_add_explicit(&p->next, 1, memory_order_relaxed);
		if (i >= p->n)
			break;
		in_task = 1;
		p->fn(p->arg, i);
		in_task = 0;
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
			pthread_mutex_lock(&p->lock);
			while ((g = atomic_load_explicit(&p->gen, memory_order_acquire)) == seen)
				pthread_cond_wait(&p->wake, &p->lock);
			pthread_mutex_unlock(&p->lock);
		}
		seen = g;
		if (atomic_load_explicit(&p->stop, memory_order_acquire))
			break;
		pool_take(p);
		if (atomic_fetch_sub_explicit(&p->active, 1, memory_order_acq_rel) == 1) {
			pthread_mutex_lock(&p->lock);
			pthread_cond_signal(&p->done);
			pthread_mutex_unlock(&p->lock);
		}
	}
	return NULL;
}

coli_pool *coli_pool_new(int n_threads)
{
	if (n_threads <= 0) {
		long n = sysconf(_SC_NPROCESSORS_ONLN);
		n_threads = n > 0 ? (int)n : 1;
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
	pthread_cond_init(&p->done, NULL);
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
	pthread_cond_destroy(&p->done);
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
	p->fn = fn;
	p->arg = arg;
	p->n = n;
	atomic_store_explicit(&p->next, 0, memory_order_relaxed);
	atomic_store_explicit(&p->active, p->n_started, memory_order_relaxed);
	pthread_mutex_lock(&p->lock);
	atomic_fetch_add_explicit(&p->gen, 1, memory_order_release);
	pthread_cond_broadcast(&p->wake);
	pthread_mutex_unlock(&p->lock);

	pool_take(p);

	int k = 0;
	while (atomic_load_explicit(&p->active, memory_order_acquire) != 0 && k++ < POOL_SPIN)
		cpu_relax();
	if (atomic_load_explicit(&p->active, memory_order_acquire) != 0) {
		pthread_mutex_lock(&p->lock);
		while (atomic_load_explicit(&p->active, memory_order_acquire) != 0)
			pthread_cond_wait(&p->done, &p->lock);
		pthread_mutex_unlock(&p->lock);
	}
	pthread_mutex_unlock(&p->run_lock);
}
