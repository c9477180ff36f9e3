/*
 * timer.h - sources of SIGPROF, as a small ops table (perf's unwind ops,
 * Redis' ae backends).
 *
 *   posix-cputimer   timer_create(CLOCK_THREAD_CPUTIME_ID) aimed at one
 *                    thread with SIGEV_THREAD_ID: fair between threads, but
 *                    the kernel checks CPU timers at its tick (HZ, 250 here),
 *                    so faster rates arrive as overruns of one signal.
 *   perf-task-clock  perf_event_open(PERF_COUNT_SW_TASK_CLOCK) per thread,
 *                    signalling its thread (F_SETSIG + F_SETOWN_EX): an
 *                    hrtimer, so rates above HZ are real; needs
 *                    perf_event_paranoid to allow it.
 *   itimer-prof      setitimer(ITIMER_PROF): process-wide, unfair between
 *                    threads, one signal per tick at most. Last resort.
 */
#ifndef SP_SAMPLER_TIMER_H
#define SP_SAMPLER_TIMER_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>

struct sp_thread;

struct sp_timer_ops {
	const char *name;
	bool per_thread;
	/* Checks that this source works here. 0 or -errno. */
	int (*probe)(uint64_t period_ns);
	/* Arms the calling thread's timer. 0 or -errno. */
	int (*arm)(struct sp_thread *t, uint64_t period_ns);
	/* Pauses t's timer (any thread may call), and resumes it. */
	void (*pause)(struct sp_thread *t);
	void (*resume)(struct sp_thread *t, uint64_t period_ns);
	/* Deletes the calling thread's timer. */
	void (*disarm)(struct sp_thread *t);
	/* CPU time in ns that this signal stands for. Signal-safe. */
	uint64_t (*weight)(struct sp_thread *t, const siginfo_t *si, uint64_t period_ns);
};

/*
 * Picks the timer for kind ("auto", "posix", "perf", "itimer") and rate.
 * auto: posix up to 250 Hz, perf above when permitted, else posix.
 */
const struct sp_timer_ops *sp_timer_choose(const char *kind, uint32_t freq_hz);

/* Stops the process-wide itimer, if one runs. */
void sp_timer_stop_itimer(void);

/* A random first expiry in [1, period] ns, so threads don't fire in lockstep. */
uint64_t sp_timer_first_expiry(uint64_t period_ns);

#endif
