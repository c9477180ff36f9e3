/*
 * ownthreads.h - stackprof's own threads: the writer, the sampler-thread
 * timer's ticker, the finisher and the orphan watchdog, and the aside
 * thread that lends its stack. They are not profiled (no slot) and run
 * with every signal blocked, so the program's process-directed signals
 * never land on them. sp_g.own_threads counts them, so that /proc's count
 * of the program's threads can leave them out (base/procstat.h).
 *
 * In core/, not life/: the writer and the sources start threads of their
 * own, and may not reach up to the program's thread life cycle.
 *
 * None of this is signal-safe.
 */
#ifndef SP_SAMPLER_OWNTHREADS_H
#define SP_SAMPLER_OWNTHREADS_H

#include <pthread.h>
#include <stdbool.h>
#include <sys/types.h>

/*
 * Starts one of stackprof's own threads: not profiled, and with every
 * signal blocked. The mask is set through the attribute: the caller's is
 * never touched. 0 or errno.
 */
int sp_spawn_quiet(pthread_t *thread, void *(*fn)(void *), void *arg);

/*
 * The stack of each of stackprof's threads, whatever RLIMIT_STACK and
 * pthread_setattr_default_np say: the deepest of them, the final flush,
 * needs 83 KiB of stackprof's own frames (docs/SAMPLER.md, "Stacks"); the
 * rest is a margin for zlib's and libc's. Only the pages touched are ever
 * backed. The guard is wider than the largest frame of ours (64 KiB in
 * sp_jit_sync), so that no overflow can step over it.
 */
#define SP_OWN_STACK (256u * 1024)
#define SP_OWN_GUARD (68u * 1024)

/* Whether a thread of ours is being started: it is in own_threads already
 * but may not be in /proc yet. */
bool sp_spawn_busy(void);

/*
 * Runs fn on a thread of stackprof's own and waits for it; on the calling
 * thread if that can't start. Work that needs more stack than a program's
 * thread may have (its budget: docs/SAMPLER.md) goes there. fn's result.
 */
int sp_call_aside(int (*fn)(void));

/*
 * Joins such a thread and waits until the kernel has removed its task too
 * (tid: its kernel thread id, 0 if unknown), so that the process is left
 * with the threads it had without stackprof.
 */
void sp_join_quiet(pthread_t thread, pid_t tid);

#endif
