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

#include "sampler/base/sigsafe.h"
#include "sampler/core/source.h"

struct sp_thread;

/*
 * Picks the timer for kind ("auto", "posix", "perf", "trap", "thread",
 * "itimer") and rate. auto: perf-sigtrap, else perf-task-clock, else
 * posix-cputimer, else itimer-prof. The sampler thread is never auto's
 * choice: where an interrupt between processors is slow (this VM: ~20 us),
 * its samples slide to the sampled thread's next system call
 * (docs/SAMPLER.md).
 */
const struct sp_timer_ops *sp_timer_choose(const char *kind, uint32_t freq_hz);

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
