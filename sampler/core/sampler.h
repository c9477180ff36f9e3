/*
 * sampler.h - state shared by the parts of libstackprof.so.
 *
 * Life of a sample: a CPU timer (an event source, sources/) sends its
 * signal to one thread; the handler (capture/handler.c) unwinds that thread
 * (capture/unwind.c) straight into the thread's ring (core/ring.c); the
 * writer thread (writer/writer.c) drains every ring, deduplicates stacks
 * and streams records to the profile (format/).
 *
 * Threads are slots in a fixed table so that the handler and the writer can
 * find them without locks. A slot moves FREE -> LIVE (its thread runs) ->
 * DEAD (the thread exited; the writer drains the ring, then frees the slot).
 *
 * Each module has its own header, in one of six folders that depend only
 * downward (docs/ARCHITECTURE.md). Only the functions marked SP_SIGSAFE
 * there may run in signal context; sigsafe.h lists every one the handler
 * can reach.
 */
#ifndef SP_SAMPLER_H
#define SP_SAMPLER_H

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "sampler/base/config.h"
#include "sampler/base/fds.h"
#include "sampler/core/ring.h"
#include "sampler/base/syscall.h" /* syscall() is stackprof's own (syscall.h) */

#define SP_MAX_RANGE_DEPTH 64

struct sp_source;

/* FREE -> INIT (being set up by its thread) -> LIVE -> DEAD (drained, then FREE) */
enum sp_slot_state { SP_SLOT_FREE = 0, SP_SLOT_INIT, SP_SLOT_LIVE, SP_SLOT_DEAD };

struct sp_thread {
	_Atomic int state;
	pid_t tid;
	struct sp_ring ring;
	/* the thread's CPU timer (source.h): sp_g.cpu, or posix-cputimer
	 * when perf-task-clock's descriptor budget was spent (sources/perf.c) */
	const struct sp_source *cpu;
	timer_t timer_id;  /* posix-cputimer */
	struct sp_fd perf; /* perf-task-clock: the thread's event (fds.h) */
	uint64_t perf_id;  /* and its id (PERF_EVENT_IOC_ID) */
	void *perf_pin;	   /* a page of its mapping, which keeps it alive */
	uint64_t rnd;	   /* random periods (posix-cputimer) */
	/* the thread's CPU clock, readable from any thread */
	clockid_t cpu_clk;
	/* sampler-thread timer (ticker.c): tick_on is guarded by the ticker's
	 * lock, tick_seen (its last reading of cpu_clk) is the ticker's own */
	bool tick_on;
	uint64_t tick_seen;
	/* the thread's CPU time as the last handler returned; 0 after a resume */
	_Atomic uint64_t cpu_last;
	/* its handler is reading the modules' memory (modules.h) */
	_Atomic int in_modules;
	bool armed;
	/* named ranges: the handler reads range_top; the thread writes both */
	_Atomic uint32_t range_top;
	uint32_t range_stack[SP_MAX_RANGE_DEPTH];
	int range_depth;
	int range_overflow; /* pushes beyond SP_MAX_RANGE_DEPTH, popped silently */
	/* the thread's stack, for the JIT stack scan; 0 if unknown */
	uintptr_t stack_lo, stack_hi;
	/* per-thread counters, summed by the writer */
	_Atomic uint64_t drops;
	_Atomic uint64_t signals;
	_Atomic uint64_t overruns;
	_Atomic uint64_t skipped;
	_Atomic uint64_t unwind_errors;
	_Atomic uint64_t truncated;
	_Atomic uint64_t handler_ns;   /* CPU time in the handler, for the overhead figure */
	_Atomic uint64_t throttled;    /* samples not taken because the handler was too slow */
	_Atomic uint64_t syscalls_cut; /* system calls that returned EINTR for our signal */
	_Atomic uint64_t unw_fast;     /* frames stepped by a CFI rule */
	_Atomic uint64_t unw_slow;     /* frames stepped by libunwind */
	_Atomic uint64_t
	    unw_differ;	     /* STACKPROF_UNWIND=check: samples the two unwinders differ on */
	uint64_t *check_pcs; /* check mode: libunwind's stack, max_depth words */
	/* the sample's stack before it goes to the ring (max_depth words),
	 * then the hashes of the stacks this slot sent whole (SP_KNOWN_SLOTS),
	 * in one mapping kept with the slot (handler.h) */
	uint64_t *stk;
	uint64_t *known;
	uint32_t walked;   /* the native depth of the previous walk (sp_unwind_prefetch) */
	uint8_t *sigstack; /* the handler's own stack (sigstack.h), kept with the slot */
	/* Python frames (pystack.h): the handler's scratch, kept with the
	 * slot, and the frames it could not read */
	_Atomic(uint64_t *) py_scratch;
	_Atomic uint64_t py_unreadable;
	uint32_t throttle;	   /* samples still to skip */
	uint64_t last_cost;	   /* the previous handler's cost (ns) */
	uint64_t throttled_weight; /* their CPU time, carried to the next sample */
	char name_at_exit[16];	   /* the thread's name, read as it exits */
	char py_name[64];	   /* its threading.Thread's name, set before it goes live */
};

struct sp_state {
	struct sp_config cfg;
	_Atomic bool enabled;  /* the sampler is set up and timers may run */
	_Atomic bool sampling; /* samples are kept (start/stop, schedule) */
	_Atomic bool stopping; /* shutdown under way: no new timers */
	_Atomic bool ended;    /* sp_finish began: sampling stays off for good */
	pid_t pid;
	uint64_t start_mono_ns;
	uint64_t start_real_ns;
	uint64_t period_ns;
	const struct sp_source *cpu; /* the CPU timer (source.h) */

	struct sp_thread *threads;  /* cfg.max_threads slots, mmap'ed */
	_Atomic uint32_t n_slots;   /* high-water mark of used slots */
	_Atomic uint32_t slot_hint; /* where a free slot may be: sp_slot_claim starts there */
	/* threads that got no slot (table full, no memory for their ring):
	 * not sampled, counted, and their CPU time summed (thread.h) */
	_Atomic uint64_t threads_missed;

	/* writer thread */
	pthread_t writer;
	bool writer_running;
	_Atomic int own_threads; /* stackprof's threads alive: writer, ticker, finisher */
	pthread_mutex_t lock;	 /* serializes the writer against flush/fork/exec */
	pthread_cond_t wake;
	char path[4096];

	/* handler/dlclose rendezvous: see modules.h */
	_Atomic int modules_changing;

	_Atomic uint64_t stray_signals;	  /* our signal on a thread we don't sample */
	_Atomic uint32_t timer_fallbacks; /* threads given posix-cputimer (sources/perf.c) */
	_Atomic uint64_t setup_ns;	  /* CPU time of start-up and of each thread's attach */
	_Atomic uint64_t aside_ns; /* a dlclose's module bookkeeping on the program's thread */
};

extern struct sp_state sp_g;

/* Whether the program has SIGPROF now and stackprof stands aside
 * (life/signals.c decides). Signal-safe. */
SP_SIGSAFE bool sp_stepped_aside(void);

/* Stands aside (on) or back in; true if it already was aside. */
bool sp_aside_set(bool on);

/* How many times stackprof has stood aside so far. */
unsigned sp_aside_count(void);

/* Sets a drained slot free for the next thread (the writer's last act on
 * it), and moves the claim's hint back to it. */
void sp_thread_slot_free(struct sp_thread *t);

/* This thread's slot, or NULL. Initial-exec TLS: signal-safe to read. */
extern __thread struct sp_thread *sp_self SP_TLS;

/* Set while this thread's handler is inside libunwind: routes dl_iterate_phdr to the snapshot. */
extern __thread volatile int sp_in_unwind SP_TLS;

#endif
