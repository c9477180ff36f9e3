/*
 * sigstack.h - a stack of stackprof's own for its signal handler, so that
 * sampling never takes room on the program's stacks.
 *
 * A program may run on small stacks: ucontext coroutines of 8 or 16 KiB,
 * green threads, a signal handler of its own on a 16 KiB sigaltstack. The
 * handler needs a few KiB (unwinding, libunwind's cursor), and the kernel's
 * signal frame needs up to 3.5 KiB more (with AVX-512 state); on the
 * program's stack that overflowed it. So each thread gets a region of
 * SP_SIGSTACK_SIZE bytes, with a guard page under it, kept with its slot:
 *
 * - Where the program has no alternate signal stack, the region is
 *   registered as the thread's, and stackprof's handlers are installed with
 *   SA_ONSTACK: the kernel puts even its signal frame there. The program's
 *   sigaltstack() calls are answered as if the region were not there: a
 *   query says "none", a stack the program sets replaces it (and is then
 *   the program's, as without stackprof), and when the program disables its
 *   own, the region is registered again.
 * - The handler's entry (sp_handler, in assembly) moves onto the region
 *   whenever the kernel delivered elsewhere (on the program's own alternate
 *   stack, or on the interrupted stack), so only the kernel's frame ever
 *   lands on a stack of the program's.
 * - A SIGTRAP that is the program's own (sigshare.h) runs the program's
 *   handler on the stack the kernel would have chosen for it.
 *
 * How much of the region the handler used is measured (resident pages) and
 * written in the profile's stats (docs/SAMPLER.md has the figures).
 */
#ifndef SP_SAMPLER_SIGSTACK_H
#define SP_SAMPLER_SIGSTACK_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include "sampler/base/sigsafe.h"

struct sp_thread;

/* The region per thread: the handler's deepest path and libunwind need
 * well under a third of it (docs/SAMPLER.md). */
#define SP_SIGSTACK_SIZE (64u * 1024u)

/*
 * Gives the calling thread (t is its slot) its region, mapping one if the
 * slot has none, and registers it as the thread's alternate signal stack if
 * the program has none. 0 or -errno (the thread is still sampled, on the
 * stack it is interrupted on).
 */
int sp_sigstack_attach(struct sp_thread *t);

/* The calling thread is leaving its slot: its region is no longer its
 * alternate signal stack. */
void sp_sigstack_detach(struct sp_thread *t);

/* The bytes of t's region the handler has touched so far (whole pages),
 * and a fresh start for the next thread in the slot. Not signal-safe. */
size_t sp_sigstack_used(const struct sp_thread *t);
void sp_sigstack_reset(struct sp_thread *t);

/*
 * Calls a handler of the program's, fn(sig, si, uc), on the stack the
 * kernel would have run it on had stackprof's handler not been installed:
 * onstack says whether the program's action has SA_ONSTACK. Signal-safe.
 */
SP_SIGSAFE void sp_sigstack_call_program(void (*fn)(int, siginfo_t *, void *), int sig,
					 siginfo_t *si, void *uc, int onstack);

#endif
