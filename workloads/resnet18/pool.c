#define _GNU_SOURCE
#include "workloads/resnet18/pool.h"

#include "workloads/resnet18/rn.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

/*
 * How long a thread busy-waits before sleeping on a condition variable.
 * Parallel regions follow each other within microseconds, while waking a
 * sleeping thread costs 20-100 us (much more on an idle VM vCPU): with ~80
 * regions per image that alone cost a third of the run time. Bounded, like
 * libgomp's GOMP_SPINCOUNT, so an idle pool still sleeps; and off when there
 * are more threads than CPUs, where a spinner only delays the thread whose
 * share everyone is waiting for (3 threads on 2 CPUs ran 4x slower).
 */
#define SPIN_NS 200000L

struct rn_worker {
	struct rn_pool *pool;
	int tid;
};

struct rn_pool {
	int nthreads;
	int started; /* workers running, so a failed rn_pool_new() can unwind */
	long spin_ns;
	pthread_t *threads;
	struct rn_worker *workers;
	void **scratch;

	/*
	 * fn and arg are published by the release increment of generation,
	 * which is bumped per region so a worker that wakes late still sees
	 * new work. The condition variables sleep under lock.
	 */
	rn_pool_fn fn;
	void *arg;
	atomic_ulong generation;
	atomic_int pending; /* workers still inside the current region */
	atomic_int stopping;
	pthread_mutex_t lock;
	pthread_cond_t work_cond;
	pthread_cond_t done_cond;
};

void rn_split(long total, int parts, int idx, long align, long *begin, long *end)
{
	long units = (total + align - 1) / align;
	long b = units * idx / parts * align;
	long e = units * (idx + 1) / parts * align;

	*begin = b < total ? b : total;
	*end = e < total ? e : total;
}

static long elapsed_ns(const struct timespec *since)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (t.tv_sec - since->tv_sec) * 1000000000L + (t.tv_nsec - since->tv_nsec);
}

static void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#endif
}

/*
 * Spins, then sleeps, until generation moves past *seen or the pool stops.
 * A separate frame so idle time in a profile reads as waiting, not work.
 */
static RN_NOINLINE int rn_pool_wait_for_work(struct rn_pool *pool, unsigned long *seen)
{
	struct timespec start;

	clock_gettime(CLOCK_MONOTONIC, &start);
	for (unsigned i = 1;; i++) {
		if (atomic_load_explicit(&pool->generation, memory_order_acquire) != *seen ||
		    atomic_load_explicit(&pool->stopping, memory_order_relaxed))
			goto out;
		cpu_relax();
		if (i % 64 == 0 && elapsed_ns(&start) >= pool->spin_ns)
			break;
	}

	pthread_mutex_lock(&pool->lock);
	while (atomic_load(&pool->generation) == *seen && !atomic_load(&pool->stopping))
		pthread_cond_wait(&pool->work_cond, &pool->lock);
	pthread_mutex_unlock(&pool->lock);
out:
	*seen = atomic_load_explicit(&pool->generation, memory_order_acquire);
	return atomic_load(&pool->stopping);
}

/* The caller's side of the region's end: spin, then sleep, until pending is 0. */
static RN_NOINLINE void rn_pool_wait_for_workers(struct rn_pool *pool)
{
	struct timespec start;

	clock_gettime(CLOCK_MONOTONIC, &start);
	for (unsigned i = 1;; i++) {
		if (atomic_load_explicit(&pool->pending, memory_order_acquire) == 0)
			return;
		cpu_relax();
		if (i % 64 == 0 && elapsed_ns(&start) >= pool->spin_ns)
			break;
	}

	pthread_mutex_lock(&pool->lock);
	while (atomic_load_explicit(&pool->pending, memory_order_acquire) > 0)
		pthread_cond_wait(&pool->done_cond, &pool->lock);
	pthread_mutex_unlock(&pool->lock);
}

/* CPUs this process may run on (taskset, cpusets), not just those online. */
static int usable_cpus(void)
{
	cpu_set_t set;

	if (sched_getaffinity(0, sizeof(set), &set) == 0)
		return CPU_COUNT(&set);
	return (int)sysconf(_SC_NPROCESSORS_ONLN);
}

static RN_NOINLINE void *rn_pool_worker_main(void *arg)
{
	struct rn_worker *w = arg;
	struct rn_pool *pool = w->pool;
	unsigned long seen = 0;
	char name[16];

	snprintf(name, sizeof(name), "rn18-worker-%d", w->tid);
	pthread_setname_np(pthread_self(), name);

	while (!rn_pool_wait_for_work(pool, &seen)) {
		pool->fn(pool->arg, w->tid, pool->nthreads);

		/* Last one out wakes the caller, should it have gone to sleep. */
		if (atomic_fetch_sub_explicit(&pool->pending, 1, memory_order_acq_rel) == 1) {
			pthread_mutex_lock(&pool->lock);
			pthread_cond_signal(&pool->done_cond);
			pthread_mutex_unlock(&pool->lock);
		}
	}
	return NULL;
}

struct rn_pool *rn_pool_new(int nthreads, size_t scratch_bytes)
{
	struct rn_pool *pool;
	size_t bytes = (scratch_bytes + RN_ALIGN - 1) / RN_ALIGN * RN_ALIGN;
	int err;

	if (nthreads < 1) {
		errno = EINVAL;
		return NULL;
	}
	pool = calloc(1, sizeof(*pool));
	if (!pool)
		return NULL;
	pool->nthreads = nthreads;
	pool->spin_ns = nthreads <= usable_cpus() ? SPIN_NS : 0;
	atomic_init(&pool->generation, 0);
	atomic_init(&pool->pending, 0);
	atomic_init(&pool->stopping, 0);
	pthread_mutex_init(&pool->lock, NULL);
	pthread_cond_init(&pool->work_cond, NULL);
	pthread_cond_init(&pool->done_cond, NULL);

	pool->threads = calloc((size_t)nthreads, sizeof(*pool->threads));
	pool->workers = calloc((size_t)nthreads, sizeof(*pool->workers));
	pool->scratch = calloc((size_t)nthreads, sizeof(*pool->scratch));
	if (!pool->threads || !pool->workers || !pool->scratch)
		goto fail;
	for (int i = 0; i < nthreads; i++) {
		pool->scratch[i] = aligned_alloc(RN_ALIGN, bytes ? bytes : RN_ALIGN);
		if (!pool->scratch[i])
			goto fail;
	}

	for (; pool->started < nthreads - 1; pool->started++) {
		struct rn_worker *w = &pool->workers[pool->started];

		w->pool = pool;
		w->tid = pool->started + 1;
		err = pthread_create(&pool->threads[pool->started], NULL, rn_pool_worker_main, w);
		if (err) {
			errno = err;
			goto fail;
		}
	}
	return pool;

fail:
	err = errno;
	rn_pool_free(pool);
	errno = err;
	return NULL;
}

void rn_pool_free(struct rn_pool *pool)
{
	if (!pool)
		return;
	pthread_mutex_lock(&pool->lock);
	atomic_store(&pool->stopping, 1);
	pthread_cond_broadcast(&pool->work_cond);
	pthread_mutex_unlock(&pool->lock);
	for (int i = 0; i < pool->started; i++)
		pthread_join(pool->threads[i], NULL);
	for (int i = 0; pool->scratch && i < pool->nthreads; i++)
		free(pool->scratch[i]);
	pthread_cond_destroy(&pool->done_cond);
	pthread_cond_destroy(&pool->work_cond);
	pthread_mutex_destroy(&pool->lock);
	free(pool->scratch);
	free(pool->workers);
	free(pool->threads);
	free(pool);
}

int rn_pool_size(const struct rn_pool *pool)
{
	return pool->nthreads;
}

void *rn_pool_scratch(struct rn_pool *pool, int tid)
{
	return pool->scratch[tid];
}

void rn_pool_run(struct rn_pool *pool, rn_pool_fn fn, void *arg)
{
	if (pool->nthreads == 1) {
		fn(arg, 0, 1);
		return;
	}

	pool->fn = fn;
	pool->arg = arg;
	atomic_store_explicit(&pool->pending, pool->nthreads - 1, memory_order_relaxed);
	/* Under the lock so a worker between its check and its wait cannot miss it. */
	pthread_mutex_lock(&pool->lock);
	atomic_fetch_add_explicit(&pool->generation, 1, memory_order_release);
	pthread_cond_broadcast(&pool->work_cond);
	pthread_mutex_unlock(&pool->lock);

	fn(arg, 0, pool->nthreads);
	rn_pool_wait_for_workers(pool);
}
