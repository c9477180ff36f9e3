/*
 * A persistent fork-join thread pool, the shape of an OpenMP runtime.
 *
 * Inference runs hundreds of short parallel regions per forward pass (one per
 * im2col, GEMM, batch norm, ...), so threads are created once and park on a
 * condition variable between regions instead of being created per call. The
 * calling thread always runs share 0 itself, so a pool of N threads has N-1
 * workers, named "rn18-worker-<i>" for profiles and top(1).
 *
 * Each thread also owns a fixed scratch area (GEMM packing buffers), which
 * keeps allocation out of the hot path and needs no locking.
 *
 * Not reentrant: one thread drives a pool, and a task must not call
 * rn_pool_run() on the pool running it.
 */
#ifndef RN_POOL_H
#define RN_POOL_H

#include <stddef.h>

struct rn_pool;

/*
 * A parallel region body: called once on every thread with its share index
 * tid in [0, nthreads). tid 0 is the caller of rn_pool_run().
 */
typedef void (*rn_pool_fn)(void *arg, int tid, int nthreads);

/*
 * Starts nthreads-1 workers, each with scratch_bytes of 64-byte aligned
 * scratch (the caller gets one too). Returns NULL with errno set on failure.
 */
struct rn_pool *rn_pool_new(int nthreads, size_t scratch_bytes);

/* Stops and joins the workers and frees the pool. Accepts NULL. */
void rn_pool_free(struct rn_pool *pool);

/* Number of threads including the caller. */
int rn_pool_size(const struct rn_pool *pool);

/* Thread tid's scratch area, borrowed from the pool. */
void *rn_pool_scratch(struct rn_pool *pool, int tid);

/* Runs fn on every thread of the pool and returns when all have finished. */
void rn_pool_run(struct rn_pool *pool, rn_pool_fn fn, void *arg);

/*
 * Share idx of [0, total) split into parts nearly equal pieces whose
 * boundaries are multiples of align (so threads never share a cache line or
 * a GEMM panel). Empty shares are possible when total is small.
 */
void rn_split(long total, int parts, int idx, long align, long *begin, long *end);

#endif
