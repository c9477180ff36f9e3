/*
 * source.h - the interface of an event source, and the table of them.
 *
 * A source is what makes samples: a CPU timer that signals a thread
 * (sources/posix.c, perf.c, sigtrap.c, ticker.c, itimer.c), or a hook that
 * captures on the calling thread (tests/sources/steps.c; allocation
 * sampling next). Each is one file under sources/ that fills a struct
 * sp_source and registers it from a constructor. Nothing else names it:
 * life/ starts, pauses, forks and arms every source through the
 * sp_sources_* calls below, and the signal handler (capture/handler.c)
 * asks sp_source_sent() whose signal came, and that source's weight and
 * rearm ops.
 *
 * The CPU timers are alternatives: one runs per process, the one
 * STACKPROF_TIMER names (its `timer` word), or auto's pick. Every other
 * source runs beside it, whenever its start succeeds.
 */
#ifndef SP_SAMPLER_SOURCE_H
#define SP_SAMPLER_SOURCE_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>

#include "sampler/base/sigsafe.h"

struct sp_thread;

/* si_perf_data of our SIGTRAPs and si_value of our queued SIGPROFs
 * ("SPROF"): tells them from the program's. */
#define SP_TRAP_COOKIE 0x5350524f46ul

/* siginfo's si_perf_data, which glibc 2.36 does not name: the long after si_addr. */
SP_SIGSAFE static inline unsigned long sp_si_perf_data(const siginfo_t *si)
{
	unsigned long v;
	__builtin_memcpy(&v, (const char *)&si->si_addr + sizeof(void *), sizeof(v));
	return v;
}

/*
 * Every op may be NULL. Only owns, weight and rearm run in the signal
 * handler: they must be SP_SIGSAFE and listed in sigsafe.h
 * (SP_SIGSAFE_INDIRECT, where unit/sigsafe checks them, and
 * SP_SIGSAFE_SOURCE_OPS). A period is sp_g.period_ns (sampler.h).
 */
struct sp_source {
	const char *name; /* as the log, the summary and `info` say it */
	uint32_t kind;	  /* SP_EVENT_* of its samples (format/profile.h) */

	/* A CPU timer: STACKPROF_TIMER's word for it, and auto's order (the
	 * lowest rank that works is picked; 0: never auto's pick). NULL for
	 * a source that runs beside the CPU timer. */
	const char *timer;
	int auto_rank;
	/* what it needs to run, said when the timer asked for can't */
	const char *needs;
	bool randomized; /* its periods are drawn at random */

	/* The signal it sends to a sampled thread (SIGPROF or SIGTRAP), or 0
	 * for a source that captures on the calling thread (capture/handler.h:
	 * sp_capture_here). The handler is installed for it. */
	int signo;

	/* Whether it can run here. 0 or -errno. For a CPU timer, asked
	 * before it is picked. */
	int (*probe)(void);
	/* The sampler starts (and again in a fork child, after atfork(2)).
	 * 0, or -errno to be left out of this process (said once). */
	int (*start)(void);
	/* The profile ends (exit, exec, a seccomp filter), after pause. */
	void (*stop)(void);
	/* Sampling stops and starts (the API, the schedule, standing aside,
	 * exec): for the whole process, after and before each live thread's
	 * pause_thread and resume_thread. A capture is refused while sampling
	 * is off anyway: these are for a source with something to stop. */
	void (*pause)(void);
	void (*resume)(void);
	void (*pause_thread)(struct sp_thread *t); /* any thread may call */
	void (*resume_thread)(struct sp_thread *t);
	/* A thread of the source's own stops and restarts, around calls
	 * that want the program's threads only (life/interpose.c). */
	void (*park)(void);
	void (*unpark)(void);
	/* fork: 0 before it, 1 in the parent, 2 in the child (the parent's
	 * descriptors and threads are not the child's; start follows). */
	void (*atfork)(int phase);
	/* A thread is sampled from now on (its slot is live) / leaves; both
	 * run on that thread. attach may hand a thread to another CPU timer
	 * by setting t->cpu (perf-task-clock out of descriptors). 0 or -errno. */
	int (*attach)(struct sp_thread *t);
	void (*detach)(struct sp_thread *t);
	/* The program called stackprof_step(): its number. */
	void (*step)(long step);

	/* Signal side. Whether si, of signo, was sent by this source for t
	 * (t may be NULL): its code and cookie. */
	bool (*owns)(const struct sp_thread *t, const siginfo_t *si);
	/* What the sample stands for (CPU ns for a CPU timer); cpu_now is the
	 * thread's CPU time at the handler's entry. NULL: 1. */
	uint64_t (*weight)(struct sp_thread *t, const siginfo_t *si, uint64_t cpu_now);
	/* Sets a one-shot timer's next expiry, as the handler ends or when
	 * its signal was taken without the handler (a wait dropped it). */
	void (*rearm)(struct sp_thread *t);
};

#define SP_SOURCE_PRIORITY 101
#define SP_MAX_SOURCES	   16

/* Adds s (which lives as long as the library) to the table; false when
 * SP_MAX_SOURCES are already there. Call from a constructor of priority
 * SP_SOURCE_PRIORITY, so that it is there before the sampler starts. */
bool sp_source_register(const struct sp_source *s);

/*
 * The CPU timer for STACKPROF_TIMER's word: that timer if its probe
 * passes, else the next of auto's order after it, saying why; "auto"
 * tries auto's order from the start. An unknown word is said and taken
 * as auto. NULL if no CPU timer is registered or none can run.
 */
const struct sp_source *sp_source_choose_cpu(const char *word);

/* Why the last sp_source_choose_cpu picked its timer: "auto's first
 * pick", "asked for (STACKPROF_TIMER=posix)", or what auto passed over
 * and why. */
const char *sp_source_cpu_why(void);

/* The CPU timers' words, for a message: "posix, trap, ...". */
const char *sp_source_cpu_words(void);

/* Signals (a bit per number) that the chosen CPU timer and the other
 * sources send: the handler is installed for each. */
uint64_t sp_sources_signals(void);

/* The program handles sig already: a source beside the CPU timer that
 * sends it is left out (said as it would start). */
void sp_sources_refuse(int sig);

/* life/ tells every started source, in the order of registration; the
 * CPU timer is sp_g.cpu, and per-thread calls go to t->cpu. */
void sp_sources_start(void);
void sp_sources_stop(void);
void sp_sources_pause(void);
void sp_sources_resume(void);
void sp_sources_park(void);
void sp_sources_unpark(void);
void sp_sources_atfork(int phase);
/* Arms t for every started source and opens their signals on it (the
 * calling thread). The CPU timer's error, or 0; others' are said. */
int sp_sources_attach(struct sp_thread *t);
void sp_sources_detach(struct sp_thread *t);
void sp_sources_step(long step);

/* Fills set with the signals of the started sources. */
void sp_sources_sigset(sigset_t *set);

/* Whether a started source sends sig now. Signal-safe. */
SP_SIGSAFE bool sp_sources_send(int sig);

/* The source whose signal sig (with si) is, on thread t (the calling
 * thread's slot, or NULL), or NULL: the program's own. Signal-safe. */
SP_SIGSAFE const struct sp_source *sp_source_sent(const struct sp_thread *t, int sig,
						  const siginfo_t *si);

/* A signal of source s for t was taken without the handler (a wait dropped
 * it): a one-shot timer is set for its next expiry. Signal-safe. */
SP_SIGSAFE void sp_source_taken(const struct sp_source *s, struct sp_thread *t);

#endif
