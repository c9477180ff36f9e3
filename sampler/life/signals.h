/*
 * signals.h - the timer's signal: installing stackprof's handler, and the
 * program's own use of SIGPROF.
 *
 * SIGPROF is stackprof's while a SIGPROF timer runs. If the program
 * installs a handler of its own (or ignores SIGPROF), stackprof steps
 * aside: it stops sampling, pauses its timers and lets the program have
 * the signal; when the program gives SIGPROF back (SIG_DFL, or the action
 * it saved from stackprof), stackprof steps back in. SIGTRAP, under the
 * perf-sigtrap timer, is shared instead (sigshare.h). sigprocmask is
 * answered without a system call inside the handler's libunwind calls.
 *
 * None of this is signal-safe.
 */
#ifndef SP_SAMPLER_SIGNALS_H
#define SP_SAMPLER_SIGNALS_H

#include <signal.h>
#include <stdbool.h>

#include "sampler/base/sigsafe.h"

/* Installs the handler for the timer's signal; -EBUSY if the program
 * already handles SIGPROF. */
int sp_handler_install(void);

/* sp_handler_mask: capture/handler.h; sp_stepped_aside: core/sampler.h */
#include "sampler/capture/handler.h"

#endif
