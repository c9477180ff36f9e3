/*
 * timer.h - sources of the sampling signal, as a small ops table (perf's
 * unwind ops, Redis' ae backends).
 *
 *   perf-sigtrap     perf_event_open(PERF_COUNT_SW_TASK_CLOCK), an hrtimer
 *                    on each thread's CPU time, with attr.sigtrap: on each
 *                    overflow the kernel itself queues SIGTRAP (TRAP_PERF)
 *                    to the thread that ran, as task work on its way back
 *                    to user space. One event for the whole process: it is
 *                    opened on the thread that starts stackprof with
 *                    inherit and inherit_thread, so every thread created
 *                    later gets its own counting copy without a descriptor
 *                    of its own. Not tied to the kernel tick, so samples
 *                    never lock onto it. auto's choice at every rate where
 *                    perf_event_paranoid and seccomp allow it (Linux 5.13)
 *                    and no debugger traces the process. The program's own
 *                    SIGTRAP use is kept (sigshare.h).
 *   perf-task-clock  the same event per thread, signalling its thread with
 *                    SIGPROF through fasync (F_SETSIG + F_SETOWN_EX): for
 *                    traced processes and kernels without sigtrap. One
 *                    descriptor per thread, within a budget (fds.h);
 *                    threads beyond it get posix-cputimer.
 *   posix-cputimer   timer_create(CLOCK_THREAD_CPUTIME_ID) aimed at one
 *                    thread with SIGEV_THREAD_ID. The kernel checks CPU
 *                    timers only at its tick (HZ, 250 here), so a fixed
 *                    period would sample a periodic program at the same
 *                    phases again and again: each period is drawn at
 *                    random in [period/2, 3 period/2] and the timer re-armed
 *                    from the handler. Each sample weighs the thread's CPU
 *                    time since the previous one.
 *   sampler-thread   a thread of ours wakes at the rate and sends SIGPROF to
 *                    each thread that used a period of CPU and is running
 *                    (ticker.h): rates above HZ without perf_event. Biased:
 *                    its signals arrive late, after system calls.
 *   itimer-prof      setitimer(ITIMER_PROF): process-wide, unfair between
 *                    threads, one signal per tick at most. Last resort.
 *
 * Before any perf_event_open, a seccomp filter is looked for in
 * /proc/self/status: under one, the call is first tried in a short-lived
 * child process, since a sandbox may kill the process for it.
 */
#ifndef SP_SAMPLER_TIMER_H
#define SP_SAMPLER_TIMER_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>

#include "sampler/sigsafe.h"

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
	/* each period is drawn at random (posix-cputimer, sampler-thread) */
	bool randomized;
	/* Checks that this source works here. 0 or -errno. */
	int (*probe)(uint64_t period_ns);
	/* Process-wide set-up once the handler is installed (and in a forked
	 * child), and tear-down at exit, after every thread is paused. NULL
	 * if none. 0 or -errno. */
	int (*start)(uint64_t period_ns);
	void (*stop)(void);
	/* Stops and restarts a thread of stackprof's own, around calls that
	 * want the program's threads only (interpose.c). NULL if none. */
	void (*park)(void);
	void (*unpark)(uint64_t period_ns);
	/* Arms the calling thread's timer. May hand the thread to another
	 * kind by setting t->timer (a descriptor budget spent). 0 or -errno. */
	int (*arm)(struct sp_thread *t, uint64_t period_ns);
	/* Pauses t's timer (any thread may call), and resumes it. */
	void (*pause)(struct sp_thread *t);
	void (*resume)(struct sp_thread *t, uint64_t period_ns);
	/* Deletes the calling thread's timer. */
	void (*disarm)(struct sp_thread *t);
	/* Pauses and resumes every thread at once (one process-wide event or
	 * timer), or NULL: then each thread's pause and resume. */
	void (*pause_all)(void);
	void (*resume_all)(uint64_t period_ns);
	/* CPU time in ns that this signal stands for; cpu_now is the thread's
	 * CPU time at the handler's entry. Signal-safe. */
	uint64_t (*weight)(struct sp_thread *t, const siginfo_t *si, uint64_t period_ns,
			   uint64_t cpu_now);
	/* Sets the next expiry, from the handler's end, or NULL for a
	 * periodic source. Signal-safe. */
	void (*rearm)(struct sp_thread *t, uint64_t period_ns);
};

/*
 * Picks the timer for kind ("auto", "posix", "perf", "trap", "thread",
 * "itimer") and rate. auto: perf-sigtrap, else perf-task-clock, else
 * posix-cputimer, else itimer-prof. The sampler thread is never auto's
 * choice: where an interrupt between processors is slow (this VM: ~20 us),
 * its samples slide to the sampled thread's next system call
 * (docs/SAMPLER.md).
 */
const struct sp_timer_ops *sp_timer_choose(const char *kind, uint32_t freq_hz);

/* Whether signal sig with si was sent by the timer of thread t (the
 * calling thread's slot, or NULL): SIGTRAP with perf's code and our
 * cookie, SIGPROF from t's POSIX timer, perf's fasync, the sampler thread
 * (with our cookie) or ITIMER_PROF. Signal-safe. */
SP_SIGSAFE bool sp_timer_sent(const struct sp_thread *t, int sig, const siginfo_t *si);

/* A signal of t's timer was taken without its handler (a wait dropped
 * it): a one-shot timer is set for its next expiry. Signal-safe. */
SP_SIGSAFE void sp_timer_taken(struct sp_thread *t);

/* Pauses every live thread's timer (exec, shutdown, stepping aside, the
 * API's stop), and resumes them. */
void sp_timers_pause_all(void);
void sp_timers_resume_all(void);

/* Resuming t: its next sample weighs the CPU time from now on, not what it
 * used while paused (read from t's CPU clock, so any thread may call). */
void sp_timer_resume_base(struct sp_thread *t);

/* In a forked child: lets go of the descriptors the child shares with the
 * parent's timers (the process-wide event, each thread's event), before
 * the child starts its own. */
void sp_timer_atfork_child(void);

#endif
