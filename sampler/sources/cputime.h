/*
 * cputime.h - what the CPU timers share (posix.c, perf.c, sigtrap.c,
 * ticker.c, itimer.c): a sample's weight in CPU time, its base on resume,
 * and a per-thread random draw.
 */
#ifndef SP_SAMPLER_CPUTIME_H
#define SP_SAMPLER_CPUTIME_H

#include <stdint.h>
#include <signal.h>
#include <time.h>

#include "sampler/base/sigsafe.h"

struct sp_thread;

/*
 * The weight of a sample when signals can merge or periods vary: the
 * thread's CPU time since the previous handler returned, which leaves out
 * the handler's own time (the profiler's, not the program's). Arming and
 * resuming set the start (sp_cputime_resume_base); without one the sample
 * weighs a period. What a thread runs after its last sample is in no
 * sample: at most a period per thread. A source's weight op. Signal-safe.
 */
SP_SIGSAFE uint64_t sp_cpu_weight(struct sp_thread *t, const siginfo_t *si, uint64_t cpu_now);

/* Resuming t: its next sample weighs the CPU time from now on, not what it
 * used while paused (read from t's CPU clock, so any thread may call). */
void sp_cputime_resume_base(struct sp_thread *t);

/* xorshift on t's own state: no libc random state shared with the
 * program. Signal-safe. */
SP_SIGSAFE uint64_t sp_cputime_rand(struct sp_thread *t);
void sp_cputime_seed(struct sp_thread *t);

static inline struct timespec sp_cputime_ts(uint64_t ns)
{
	return (struct timespec){.tv_sec = (time_t)(ns / 1000000000u),
				 .tv_nsec = (long)(ns % 1000000000u)};
}

#endif
