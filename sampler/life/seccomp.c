/*
 * seccomp.c - a seccomp filter, or strict mode, installed by the program:
 * stackprof finishes the profile and stops its threads before it takes
 * effect. Its own system calls are sp_syscall (base/syscall.h).
 *
 * A filter lists the system calls a process may make; one that kills on
 * any other (an allow-list: read, write, mmap, futex, exit) would kill the
 * process at its next sample: the handler reads the thread's CPU clock, a
 * real system call (docs/SAMPLER.md lists the handler's), and the writer
 * opens, writes and waits. Strict mode allows read, write, exit and
 * sigreturn only, and kills the thread on anything else. So before such a
 * call, the profile is finished as at exit (timers stopped, the last
 * samples written, the writer and ticker joined), said once, and nothing
 * more is sampled in this process; then the call is made. A filter with
 * SECCOMP_FILTER_FLAG_TSYNC would apply to stackprof's threads too: none is
 * left. A forked child that installs one finishes only its own profile.
 * An image exec'ed under a filter is profiled from its start
 * (sources/perfevent.c tries perf_event_open in a throwaway child first): this stops only what
 * runs when the filter comes.
 */
#define SP_SECCOMP_C
#include "sampler/base/syscall.h"
#include "sampler/life/main.h"
#include "sampler/core/sampler.h"
#include "sampler/base/sys.h"
#include "sampler/life/thread.h"

#include <errno.h>
#include <linux/seccomp.h>
#include <stdarg.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

static void sp_before_seccomp(const char *how)
{
	int e = errno;
	if (atomic_load(&sp_g.enabled) && !atomic_load(&sp_g.stopping) && getpid() == sp_g.pid) {
		sp_log("the program installs %s: stackprof finishes its profile now and samples "
		       "no more in this process (a sample's system calls could break the rules)",
		       how);
		sp_finish_aside(0, true);
		/* the threads alive now leave later, under the filter */
		sp_thread_seal();
	}
	errno = e;
}

static const char *sp_seccomp_mode(long mode)
{
	return mode == SECCOMP_MODE_STRICT   ? "seccomp strict mode"
	       : mode == SECCOMP_MODE_FILTER ? "a seccomp filter"
					     : NULL;
}

SP_EXPORT int prctl(int option, ...)
{
	va_list ap;
	va_start(ap, option);
	unsigned long a2 = va_arg(ap, unsigned long), a3 = va_arg(ap, unsigned long);
	unsigned long a4 = va_arg(ap, unsigned long), a5 = va_arg(ap, unsigned long);
	va_end(ap);
	const char *how = option == PR_SET_SECCOMP ? sp_seccomp_mode((long)a2) : NULL;
	if (how)
		sp_before_seccomp(how);
	return (int)sp_syscall(SYS_prctl, (long)option, a2, a3, a4, a5);
}

SP_EXPORT long syscall(long nr, ...)
{
	va_list ap;
	va_start(ap, nr);
	long a1 = va_arg(ap, long), a2 = va_arg(ap, long), a3 = va_arg(ap, long);
	long a4 = va_arg(ap, long), a5 = va_arg(ap, long), a6 = va_arg(ap, long);
	va_end(ap);
	const char *how = NULL;
	if (nr == SYS_seccomp)
		how = a1 == SECCOMP_SET_MODE_STRICT   ? "seccomp strict mode"
		      : a1 == SECCOMP_SET_MODE_FILTER ? "a seccomp filter"
						      : NULL;
	else if (nr == SYS_prctl && a1 == PR_SET_SECCOMP)
		how = sp_seccomp_mode(a2);
	if (how)
		sp_before_seccomp(how);
	return sp_syscall(nr, a1, a2, a3, a4, a5, a6);
}
