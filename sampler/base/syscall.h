/*
 * syscall.h - stackprof's own system calls, out of the way of the
 * program's syscall(), which life/seccomp.c interposes.
 *
 * A program installs a seccomp filter with prctl(PR_SET_SECCOMP) or with
 * seccomp(2), which glibc 2.36 has no wrapper for: libseccomp and programs
 * call syscall(SYS_seccomp, ...). seccomp.c replaces both, and finishes
 * the profile before the filter takes effect (docs/SAMPLER.md, "Seccomp").
 * stackprof's own calls of syscall() must not go through that wrapper
 * (the handler makes some, and the wrapper's seccomp path is not
 * signal-safe), so every sampler file that includes sampler.h calls
 * sp_syscall instead: the same raw system call, which unit/sigsafe sees.
 */
#ifndef SP_SAMPLER_SYSCALL_H
#define SP_SAMPLER_SYSCALL_H

#include "sampler/base/sigsafe.h"

#include <signal.h>

/* syscall(2) itself: the call, -1 with errno set on failure. Signal-safe. */
SP_SIGSAFE long sp_syscall(long nr, ...);

/* glibc's own signals (cancellation, setxid), which its pthread_sigmask
 * never lets a program block */
#define SP_SIGCANCEL 32
#define SP_SIGSETXID 33

/*
 * stackprof's own changes of the mask (blocking its signal around a
 * critical section, the mask of the program's handler a forwarded signal
 * runs with): straight to the kernel, never through the program's view.
 * pthread_sigmask's contract. Signal-safe.
 */
SP_SIGSAFE int sp_sigmask_own(int how, const sigset_t *set, sigset_t *old);

#ifndef SP_SECCOMP_C
#define syscall sp_syscall
#endif

/* Every pthread_sigmask call in the sampler is stackprof's own
 * (capture/sigmask.c defines the program's). */
#if !defined(SP_SIGMASK_IMPL) && !defined(SP_SECCOMP_C)
#define pthread_sigmask(how, set, old) sp_sigmask_own(how, set, old)
#endif

#endif
