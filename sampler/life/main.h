/*
 * main.h - the library's life: the constructor sets everything up before
 * the first timer is armed; the profile is finished once per process, by
 * the destructor at a normal exit, by exitsig.c just before the process
 * ends itself with a signal, or by exitcall.c in _exit and _Exit. Not
 * signal-safe.
 */
#ifndef SP_SAMPLER_MAIN_H
#define SP_SAMPLER_MAIN_H

#include <stdbool.h>

/*
 * Stops the timers and writes the final stats: what the destructor does at
 * exit, what exitcall.c does in _exit, and what exitsig.c does before the
 * process kills itself with sig (0: a normal exit or _exit). Once per process; later calls return
 * at once.
 */
void sp_finish(int sig);

/*
 * sp_finish(sig) on a thread of stackprof's own, waited for: the final
 * flush wants tens of KiB of stack, more than a program's small thread
 * stack may have left (a 32 KiB stack overflowed). If that thread can't
 * start: on the calling thread when here is true, else not at all.
 * Nothing in a process that is not sampling, is stopping already, or is a
 * vfork child.
 */
void sp_finish_aside(int sig, bool here);

/*
 * On a program thread that is leaving (its TLS destructors run): if it is
 * the program's last thread, the profile is finished and stackprof's own
 * threads are joined now, so that glibc sees the last thread go and calls
 * exit(0) as it would without stackprof (atexit handlers, stdio's flush).
 * Reads /proc; not for the handler.
 */
void sp_finish_if_last(void);

/*
 * The writer's watchdog, once a pass: when the program has no thread left
 * (its last one left by raw SYS_exit, was killed alone, or two left at
 * once), starts a thread that finishes the profile and ends the process
 * (see main.c). True when it did; the writer is then told to stop.
 */
bool sp_orphan_check(void);

#endif
