/*
 * api.h - the sampler's side of the public C API (stackprof.h): the
 * schedule and the on/off decision. The table of named ranges and the
 * queue of window marks it fills are core/ranges.h, where the writer reads
 * them. The stackprof_* functions themselves are declared in stackprof.h.
 *
 * None of this is signal-safe; the handler reads only the thread's
 * range_top (sampler.h).
 */
#ifndef SP_SAMPLER_API_H
#define SP_SAMPLER_API_H

/* Called once by the constructor: applies STACKPROF_SCHEDULE and STACKPROF_START. */
void sp_api_init(void);

/* Sets sampling on or off as the API, the schedule and the program's use
 * of SIGPROF (signals.h) say now, pausing or resuming the timers. */
void sp_api_resync(void);

/* Fork hooks: 0 before fork (lock), 1 in the parent (unlock), 2 in the child (re-init). */
void sp_api_atfork(int phase);

#endif
