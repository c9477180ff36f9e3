/*
 * termsig.h - the signals that end a process from outside: SIGTERM,
 * SIGINT and SIGHUP at their default action.
 *
 * A process killed by one (Pool.terminate()'s SIGTERM to its workers, kill,
 * a terminal's ^C or hang-up) runs no exit path, and its profile would end
 * at the writer's last flush. So while the program leaves one of these at
 * SIG_DFL, stackprof installs a handler of its own for it: the handler has
 * the writer thread end the profile (sp_writer_end_for_signal, bounded),
 * then sets SIG_DFL and sends the signal again, so that the process dies
 * of it exactly as alone (status 143 for SIGTERM, no core).
 *
 * The program sees SIG_DFL: sigaction() and signal() answer what it set.
 * Any action it sets other than SIG_DFL is installed for real and is its
 * own from then on (SIG_DFL again gives it back to stackprof); an action
 * it finds at start other than SIG_DFL (SIG_IGN from nohup, a handler) is
 * never touched. exec resets a handler to SIG_DFL, so the new image gets
 * the default action as alone. Not in a pid namespace's init, which these
 * signals don't end at their default action.
 */
#ifndef SP_SAMPLER_TERMSIG_H
#define SP_SAMPLER_TERMSIG_H

#include <signal.h>
#include <stdbool.h>

#include "sampler/base/sigsafe.h"

/* Takes each of the signals that is at SIG_DFL now. After the writer has
 * started (its thread blocks every signal, so it never runs the handler). */
void sp_term_install(void);

/* Whether sig is one of these signals and stackprof may hold it. */
bool sp_term_is(int sig);

/* The program's sigaction(sig, act, old) for one of them. 0, or -1 with
 * errno set, as sigaction(). */
int sp_term_sigaction(int sig, const struct sigaction *act, struct sigaction *old);

/* The handler. Signal-safe: it waits at most SP_TERM_WAIT_MS, on a futex. */
SP_SIGSAFE void sp_term_handler(int sig);

/* How long the handler waits for the writer to end the profile. A normal
 * end takes a few milliseconds; a writer held up (the interrupted thread
 * holds a lock it needs) must not keep a killed process alive for long. */
#define SP_TERM_WAIT_MS 1000

#endif
