/*
 * sigtrap.h - sharing SIGTRAP with the program while the perf-sigtrap timer
 * sends stackprof a SIGTRAP (TRAP_PERF) on every sample.
 *
 * The kernel's action for SIGTRAP stays stackprof's handler for the life of
 * the process. The program's own sigaction()/signal() calls for SIGTRAP
 * are answered from a copy kept here (libsigchain's idea): they read and
 * set what the program believes is installed. A SIGTRAP that is not ours (a
 * breakpoint, raise(), kill -TRAP) is handled as that copy says: the
 * program's handler is called, an ignored one is dropped, and the default
 * action is restored and the signal sent again so that the process dies of
 * SIGTRAP with a core as it would have. Ours carry SP_TRAP_COOKIE in
 * si_perf_data and never reach the program.
 */
#ifndef SP_SAMPLER_SIGTRAP_H
#define SP_SAMPLER_SIGTRAP_H

#include <signal.h>
#include <stdbool.h>

#include "sigsafe.h"

/* Whether a SIGTRAP is one of the timer's. Signal-safe. */
SP_SIGSAFE bool sp_trap_is_ours(const siginfo_t *si);

/* Whether SIGTRAP is shared with the program now. Signal-safe. */
SP_SIGSAFE bool sp_trap_shared(void);

/* Takes SIGTRAP for handler, keeping the program's current action as its
 * copy. 0 or -errno. */
int sp_trap_install(void (*handler)(int, siginfo_t *, void *));

/* The program's sigaction(SIGTRAP, act, old), answered from the copy. 0. */
int sp_trap_sigaction(const struct sigaction *act, struct sigaction *old);

/*
 * Handles a SIGTRAP that is not ours as the program's action says: calls
 * its handler with the mask the kernel would have set, drops an ignored
 * one, or gives the signal back to the kernel's default action. Never
 * waits. Signal-safe (it runs the program's handler, which is the
 * program's business).
 */
SP_SIGSAFE void sp_trap_forward(int sig, siginfo_t *si, void *uc);

/* Fork hooks: 0 before fork (lock), 1 in the parent (unlock), 2 in the child (re-init). */
void sp_trap_atfork(int phase);

/* Around exec: hand an ignored SIGTRAP over to the new image, and take
 * SIGTRAP back if exec failed. */
void sp_trap_before_exec(void);
void sp_trap_after_failed_exec(void);

#endif
