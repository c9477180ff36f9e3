/*
 * timer.h - sources of SIGPROF, as a small ops table (perf's unwind ops,
 * Redis' ae backends).
 *
 *   posix-cputimer   timer_create(CLOCK_THREAD_CPUTIME_ID) aimed at one
 *                    thread with SIGEV_THREAD_ID: fair between threads, but
 *                    the kernel checks CPU timers at its tick (HZ, 250 here),
 *                    so faster rates arrive as overruns of one signal.
 *   perf-sigtrap     perf_event_open(PERF_COUNT_SW_TASK_CLOCK) per thread
 *                    with attr.sigtrap: an hrtimer, so rates above HZ are
 *                    real, and the kernel queues SIGTRAP (TRAP_PERF) to the
 *                    thread as task work, on the way back to user space.
 *                    Needs Linux 5.13 and perf_event_paranoid to allow it.
 *                    Costs half of perf-task-clock's signal path in a VM
 *                    (no irq_work self-IPI, no fasync; docs/BENCHMARKS.md).
 *                    The program's own SIGTRAP use is kept (interpose.c).
 *   perf-task-clock  the same event signalling its thread with SIGPROF
 *                    through fasync (F_SETSIG + F_SETOWN_EX): for kernels
 *                    without sigtrap and for traced processes.
 *   sampler-thread   a thread of ours wakes at the rate and sends SIGPROF to
 *                    each thread that used a period of CPU and is running
 *                    (ticker.h): rates above HZ without perf_event, so in
 *                    containers and under perf_event_paranoid 3 too.
 *   itimer-prof      setitimer(ITIMER_PROF): process-wide, unfair between
 *                    threads, one signal per tick at most. Last resort.
 */
#ifndef SP_SAMPLER_TIMER_H
#define SP_SAMPLER_TIMER_H

#include "sigsafe.h"
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>

struct sp_thread;

/* si_perf_data of our SIGTRAPs ("SPROF"): tells them from the program's. */
#define SP_TRAP_COOKIE 0x5350524f46ul

/* siginfo's si_perf_data, which glibc 2.36 does not name: the long after si_addr. */
SP_SIGSAFE static inline unsigned long sp_si_perf_data(const siginfo_t *si)
{
	unsigned long v;
	__builtin_memcpy(&v, (const char *)&si->si_addr + sizeof(void *), sizeof(v));
	return v;
}

struct sp_timer_ops {
	const char *name;
	int signo; /* the signal it sends: SIGPROF, or SIGTRAP for perf-sigtrap */
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
	/* CPU time in ns that this signal stands for; cpu_now is the thread's
	 * CPU time at the handler's entry. Signal-safe. */
	uint64_t (*weight)(struct sp_thread *t, const siginfo_t *si, uint64_t period_ns,
			   uint64_t cpu_now);
	/* Process-wide set-up and tear-down (the sampler thread), or NULL:
	 * start once the handler is installed and in a forked child, stop at
	 * exit after every thread is paused. */
	int (*start)(uint64_t period_ns);
	void (*stop)(void);
};

/*
 * Picks the timer for kind ("auto", "posix", "perf", "trap", "thread",
 * "itimer") and rate. auto: posix up to 250 Hz; above, perf-sigtrap, else
 * perf-task-clock, else posix. The sampler thread is never auto's choice:
 * where an interrupt between processors is slow (this VM: ~20 us), its
 * samples slide to the sampled thread's next system call (docs/SAMPLER.md).
 */
const struct sp_timer_ops *sp_timer_choose(const char *kind, uint32_t freq_hz);

/* Stops the process-wide itimer, if one runs, and starts it again. */
void sp_timer_stop_itimer(void);
void sp_timer_start_itimer(uint64_t period_ns);

/* Pauses every live thread's timer (exec, shutdown, stepping aside, the
 * API's stop), and resumes them. */
void sp_timers_pause_all(void);
void sp_timers_resume_all(void);

/* A random first expiry in [1, period] ns, so threads don't fire in lockstep. */
uint64_t sp_timer_first_expiry(uint64_t period_ns);

#endif
