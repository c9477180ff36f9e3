/*
 * source.h - the interface of an event source: what starts, stops, pauses
 * and arms it, and what the signal handler asks of it. The CPU timers of
 * sources/timer.c and sources/ticker.c are sources; the handler (capture/)
 * and the life cycle (life/) see them only through this.
 */
#ifndef SP_SAMPLER_SOURCE_H
#define SP_SAMPLER_SOURCE_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>

#include "sampler/base/sigsafe.h"

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
	/* Whether si (of the source's signal, for t, which may be NULL) is
	 * one of this source's: its code and cookie. Signal-safe. */
	bool (*owns)(const struct sp_thread *t, const siginfo_t *si);
};

/* Whether signal sig with si was sent by the timer of thread t (the
 * calling thread's slot, or NULL): SIGTRAP with perf's code and our
 * cookie, SIGPROF from t's POSIX timer, perf's fasync, the sampler thread
 * (with our cookie) or ITIMER_PROF. Signal-safe. */
SP_SIGSAFE bool sp_timer_sent(const struct sp_thread *t, int sig, const siginfo_t *si);

/* A signal of t's timer was taken without its handler (a wait dropped
 * it): a one-shot timer is set for its next expiry. Signal-safe. */
SP_SIGSAFE void sp_timer_taken(struct sp_thread *t);

/*
 * An event source beside the CPU timer (one of the timer ops above, which
 * STACKPROF_TIMER picks): a file of its own that registers itself from a
 * constructor of priority SP_SOURCE_PRIORITY, so that it is known before
 * the sampler starts. Its samples go through the one capture path
 * (capture/handler.h: sp_capture_here, or sp_capture from a signal of its
 * own) with its event kind. Every op may be NULL; none is called from a
 * signal handler. While sampling is off (the API, the schedule, standing
 * aside) a capture is refused, so pause and resume are for a source that
 * has something to stop (a timer, a hook).
 */
struct sp_source {
	const char *name;
	uint32_t kind; /* SP_EVENT_* (format/profile.h) */
	/* the sampler starts (and again in a fork child, after atfork_child):
	 * 0, or -errno to be left out of this process (said once) */
	int (*start)(void);
	/* the profile ends: exit, exec, a seccomp filter */
	void (*stop)(void);
	void (*pause)(void);
	void (*resume)(void);
	/* a thread is sampled from now on / leaves (called on that thread) */
	void (*attach)(struct sp_thread *t);
	void (*detach)(struct sp_thread *t);
	/* in a fork child, before start: the parent's state is not its own */
	void (*atfork_child)(void);
	/* the program called stackprof_step(): its number */
	void (*step)(long step);
};

#define SP_SOURCE_PRIORITY 101
#define SP_MAX_SOURCES	   8

/* Adds s (which lives as long as the library) to the sources; false when
 * SP_MAX_SOURCES are already there. */
bool sp_source_register(const struct sp_source *s);

/* life/ tells every started source (each call its op, in order of
 * registration). */
void sp_sources_start(void);
void sp_sources_stop(void);
void sp_sources_pause(void);
void sp_sources_resume(void);
void sp_sources_attach(struct sp_thread *t);
void sp_sources_detach(struct sp_thread *t);
void sp_sources_atfork_child(void);
void sp_sources_step(long step);

#endif
