/*
 * interpose.h - how this library reaches the libc functions it replaces.
 *
 * libstackprof.so exports its own definitions of some libc functions
 * (exec family, dlclose, uid/gid changes, unshare, setns, fopen and
 * fopen64 in interpose.c; sigaction and signal in signals.c; sigprocmask, pthread_sigmask, the
 * sigwait family, signalfd and the waits with a mask in sigmask.c; sigaltstack in sigstack.c;
 * close, close_range, closefrom, dup2, dup3, pipe and pipe2 in fds.c; kill, killpg, raise,
 * pthread_kill and tgkill in exitsig.c; _exit and _Exit in exitcall.c; pthread_create in thread.c;
 * dl_iterate_phdr in modules.c); it calls the real ones through dlsym(RTLD_NEXT) (sigstack.c makes
 * the sigaltstack system call itself). real.h (base) finds them.
 *
 * dlopen is deliberately not interposed: glibc resolves a bare library
 * name against the RUNPATH of dlopen's caller, found from its return
 * address, and a wrapper would make that caller us. New modules are picked
 * up by the writer, which polls glibc's load counters every drain.
 *
 * None of this is signal-safe.
 */
#ifndef SP_SAMPLER_INTERPOSE_H
#define SP_SAMPLER_INTERPOSE_H

#include "sampler/base/real.h" /* SP_REAL */

/*
 * Around the calls that want the program's threads only (uid/gid changes,
 * unshare, setns), stackprof's own threads are joined and started again
 * afterwards: "parked". Fork hooks for that state: 0 before fork (lock), 1
 * in the parent (unlock), 2 in the child (re-init, nothing parked).
 */
void sp_park_atfork(int phase);

/* Marks the process as stopping (sp_g.stopping) under the parking lock:
 * a call parked now finds the threads stopped for good when it returns,
 * and none is parked after it, so the final flush owns the writer. */
void sp_park_stop(void);

#endif
