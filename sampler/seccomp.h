/*
 * seccomp.h - stackprof's own system calls, out of the way of the
 * program's syscall(), which seccomp.c interposes.
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
#ifndef SP_SAMPLER_SECCOMP_H
#define SP_SAMPLER_SECCOMP_H

#include "sampler/sigsafe.h"

/* syscall(2) itself: the call, -1 with errno set on failure. Signal-safe. */
SP_SIGSAFE long sp_syscall(long nr, ...);

#ifndef SP_SECCOMP_C
#define syscall sp_syscall
#endif

#endif
