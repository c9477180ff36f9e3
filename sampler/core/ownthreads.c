/*
 * ownthreads.c - stackprof's own threads (ownthreads.h), moved out of
 * life/thread.c, which keeps the program's threads: the writer and the
 * ticker start theirs from here without reaching up to life/.
 */
#include "sampler/core/ownthreads.h"
#include "sampler/base/real.h"
#include "sampler/core/sampler.h"

#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>

/* glibc's pthread_create, never the interposed one (life/thread.c): these
 * threads are not the program's and get no slot */
static __typeof__(&pthread_create) sp_own_create;

void sp_join_quiet(pthread_t thread, pid_t tid)
{
	pthread_join(thread, NULL);
	/* pthread_join returns once the thread has cleared its tid, a moment
	 * before the kernel takes its task off the thread group */
	for (int i = 0; tid > 0 && i < 100000; i++) {
		if (syscall(SYS_tgkill, sp_g.pid, tid, 0) < 0 && errno == ESRCH)
			break;
		sched_yield();
	}
	atomic_fetch_sub(&sp_g.own_threads, 1);
}

/* stackprof's threads starting now: counted in own_threads, not yet in /proc */
static _Atomic int sp_spawning;

bool sp_spawn_busy(void)
{
	return atomic_load(&sp_spawning) != 0;
}

int sp_spawn_quiet(pthread_t *thread, void *(*fn)(void *), void *arg)
{
	if (!sp_own_create)
		sp_own_create = SP_REAL(pthread_create);
	sigset_t all;
	sigfillset(&all);
	pthread_attr_t attr;
	int rc = pthread_attr_init(&attr);
	if (rc)
		return rc;
	rc = pthread_attr_setsigmask_np(&attr, &all);
	/* sizes of our own, never the default: that follows RLIMIT_STACK
	 * (`ulimit -s 32` made every thread of ours 32 KiB) and the program's
	 * pthread_setattr_default_np (ownthreads.h) */
	if (!rc)
		rc = pthread_attr_setstacksize(&attr, SP_OWN_STACK);
	if (!rc)
		rc = pthread_attr_setguardsize(&attr, SP_OWN_GUARD);
	/* counted before it runs: /proc's count of the program's threads
	 * leaves it out from its start (procstat.h) */
	atomic_fetch_add(&sp_spawning, 1);
	atomic_fetch_add(&sp_g.own_threads, 1);
	if (!rc)
		rc = sp_own_create(thread, &attr, fn, arg);
	if (rc)
		atomic_fetch_sub(&sp_g.own_threads, 1);
	atomic_fetch_sub(&sp_spawning, 1);
	pthread_attr_destroy(&attr);
	return rc;
}

struct sp_aside {
	int (*fn)(void);
	int rc;
};

static void *sp_aside_main(void *p)
{
	struct sp_aside *a = p;
	/* straight to the kernel: prctl() is life/seccomp.c's */
	sp_syscall(SYS_prctl, PR_SET_NAME, "stackprof-aside", 0, 0, 0);
	a->rc = a->fn();
	return NULL;
}

int sp_call_aside(int (*fn)(void))
{
	struct sp_aside a = {fn, 0};
	pthread_t t;
	if (sp_spawn_quiet(&t, sp_aside_main, &a) != 0)
		return fn();
	sp_join_quiet(t, 0);
	return a.rc;
}
