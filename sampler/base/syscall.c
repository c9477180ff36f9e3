/*
 * syscall.c - stackprof's own raw system call (syscall.h).
 */
#define SP_SECCOMP_C
#include "sampler/base/syscall.h"

#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <sys/syscall.h>

long sp_syscall(long nr, ...)
{
	va_list ap;
	va_start(ap, nr);
	long a1 = va_arg(ap, long), a2 = va_arg(ap, long), a3 = va_arg(ap, long);
	long a4 = va_arg(ap, long), a5 = va_arg(ap, long), a6 = va_arg(ap, long);
	va_end(ap);
	long rc;
	register long r10 __asm__("r10") = a4;
	register long r8 __asm__("r8") = a5;
	register long r9 __asm__("r9") = a6;
	__asm__ volatile("syscall"
			 : "=a"(rc)
			 : "0"(nr), "D"(a1), "S"(a2), "d"(a3), "r"(r10), "r"(r8), "r"(r9)
			 : "rcx", "r11", "memory");
	if (rc < 0 && rc > -4096) {
		errno = (int)-rc;
		return -1;
	}
	return rc;
}

/* The kernel's sigset: 64 signals. */
#define SP_KSIGSET (_NSIG / 8)

int sp_sigmask_own(int how, const sigset_t *set, sigset_t *old)
{
	sigset_t s;
	if (set && (sigismember(set, SP_SIGCANCEL) == 1 || sigismember(set, SP_SIGSETXID) == 1)) {
		s = *set;
		sigdelset(&s, SP_SIGCANCEL);
		sigdelset(&s, SP_SIGSETXID);
		set = &s;
	}
	int e = errno;
	long rc = sp_syscall(SYS_rt_sigprocmask, how, set, old, SP_KSIGSET);
	int err = rc < 0 ? errno : 0;
	errno = e;
	return err;
}
