/*
 * handler.h - the SIGPROF handler, in a file of its own (gperftools'
 * profile-handler.cc, async-profiler): everything it calls is in this file or
 * marked signal-safe in its header.
 *
 * Rules it keeps: errno saved and restored; no malloc, stdio or locks; state
 * reached through initial-exec TLS; a full ring drops the sample and counts
 * it; it never waits.
 */
#ifndef SP_SAMPLER_HANDLER_H
#define SP_SAMPLER_HANDLER_H

#include "sampler/sigsafe.h"
#include <signal.h>

/* Ring entry layout, in 64-bit words: time, weight, range, then the PCs. */
#define SP_ENTRY_TIME	0
#define SP_ENTRY_WEIGHT 1
#define SP_ENTRY_RANGE	2
#define SP_ENTRY_PCS	3

/* The handler's entry, installed with SA_SIGINFO | SA_RESTART | SA_ONSTACK:
 * it moves onto the thread's own stack (sigstack.h), then runs
 * sp_handler_body. In assembly, in sigstack.c. */
SP_SIGSAFE void sp_handler(int sig, siginfo_t *si, void *uc);

/* The handler itself. */
SP_SIGSAFE void sp_handler_body(int sig, siginfo_t *si, void *uc);

#endif
