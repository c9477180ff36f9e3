/*
 * sigshare.h - signals stackprof shares with the program: SIGTRAP while
 * the perf-sigtrap timer sends it one on every sample, SIGSEGV and SIGBUS
 * while it reads Python's memory (saferead.h).
 *
 * The kernel's action for a shared signal stays stackprof's handler for
 * the life of the process. The program's own sigaction()/signal() calls
 * for it are answered from a copy kept here (libsigchain's idea): they read
 * and set what the program believes is installed. A signal that is not
 * stackprof's (a breakpoint, a fault of the program's, raise(), kill) is
 * handled as that copy says: the program's handler is called with the mask
 * and on the stack the kernel would have used; an ignored one is dropped
 * (but a fault ignored still kills, as the kernel would have it); at the
 * default action the kernel takes over again: a fault is simply returned
 * from, so the instruction faults again and the process dies of it with a
 * core, and a sent signal is sent again.
 */
#ifndef SP_SAMPLER_SIGSHARE_H
#define SP_SAMPLER_SIGSHARE_H

#include <signal.h>
#include <stdbool.h>

#include "sampler/base/sigsafe.h"

/* Whether a SIGTRAP is one of the perf-sigtrap timer's. Signal-safe. */
SP_SIGSAFE bool sp_trap_is_ours(const siginfo_t *si);

/* Whether sig (SIGTRAP, SIGSEGV or SIGBUS) is shared with the program now.
 * Signal-safe. */
SP_SIGSAFE bool sp_share_active(int sig);

/* Whether the program has a handler of its own for a shared sig now. */
bool sp_share_handled(int sig);

/* Takes sig for handler (installed SA_SIGINFO | SA_RESTART | SA_ONSTACK
 * with mask), keeping the program's current action as its copy. 0 or
 * -errno; -EINVAL for a signal that is not shared. */
int sp_share_install(int sig, void (*handler)(int, siginfo_t *, void *), const sigset_t *mask);

/* The program's sigaction(sig, act, old), answered from the copy. 0. */
int sp_share_sigaction(int sig, const struct sigaction *act, struct sigaction *old);

/*
 * Handles a signal that is not stackprof's as the program's action says.
 * Never waits. Signal-safe (it runs the program's handler, which is the
 * program's business).
 */
SP_SIGSAFE void sp_share_forward(int sig, siginfo_t *si, void *uc);

/* Fork hooks: 0 before fork (lock), 1 in the parent (unlock), 2 in the child (re-init). */
void sp_share_atfork(int phase);

/* Around exec: hand an ignored signal over to the new image, and take the
 * shared signals back if exec failed. */
void sp_share_before_exec(void);
void sp_share_after_failed_exec(void);

#endif
