/*
 * sampler.h - state shared by the parts of libstackprof.so.
 *
 * Life of a sample: a per-thread timer (timer.c) sends SIGPROF to one thread;
 * the handler (handler.c) unwinds that thread (unwind.c) straight into the
 * thread's ring (ring.c); the writer thread (writer.c) drains every ring,
 * deduplicates stacks and streams records to the profile (format/).
 *
 * Threads are slots in a fixed table so that the handler and the writer can
 * find them without locks. A slot moves FREE -> LIVE (its thread runs) ->
 * DEAD (the thread exited; the writer drains the ring, then frees the slot).
 *
 * Unless a declaration says "signal-safe", it is not: only handler.c and the
 * functions marked so may run in signal context.
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

#include "config.h"
#include "ring.h"

#define SP_EXPORT __attribute__((visibility("default")))
#define SP_TLS	  __attribute__((tls_model("initial-exec")))

#define SP_MAX_THREADS	   4096
#define SP_MAX_RANGE_DEPTH 64

/* FREE -> INIT (being set up by its thread) -> LIVE -> DEAD (drained, then FREE) */
enum sp_slot_state { SP_SLOT_FREE = 0, SP_SLOT_INIT, SP_SLOT_LIVE, SP_SLOT_DEAD };

struct sp_thread {
	_Atomic int state;
	pid_t tid;
	struct sp_ring ring;
	/* the timer kind's handle: a POSIX timer id or a perf_event fd */
	timer_t timer;
	int perf_fd;
	/* sampler-thread timer (ticker.c): the thread's CPU clock; tick_on is
	 * guarded by the ticker's lock, tick_seen (its last reading) is the
	 * ticker's own */
	clockid_t tick_clk;
	bool tick_on;
	uint64_t tick_seen;
	/* the thread's CPU time as the last handler returned; 0 after a resume */
	_Atomic uint64_t cpu_last;
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
	_Atomic uint64_t handler_ns; /* CPU time in the handler, for the overhead figure */
	_Atomic uint64_t throttled;  /* samples not taken because the handler was too slow */
	_Atomic uint64_t unw_fast;   /* frames stepped by a CFI rule */
	_Atomic uint64_t unw_slow;   /* frames stepped by libunwind */
	_Atomic uint64_t
	    unw_differ;		   /* STACKPROF_UNWIND=check: samples the two unwinders differ on */
	uint64_t *check_pcs;	   /* check mode: libunwind's stack, max_depth words */
	uint32_t throttle;	   /* samples still to skip */
	uint64_t throttled_weight; /* their CPU time, carried to the next sample */
	char name_at_exit[16];	   /* the thread's name, read as it exits */
};

struct sp_state {
	struct sp_config cfg;
	_Atomic bool enabled;  /* the sampler is set up and timers may run */
	_Atomic bool sampling; /* samples are kept (start/stop, schedule) */
	_Atomic bool stopping; /* shutdown under way: no new timers */
	pid_t pid;
	uint64_t start_mono_ns;
	uint64_t start_real_ns;
	uint64_t period_ns;
	const struct sp_timer_ops *timer;

	struct sp_thread *threads; /* SP_MAX_THREADS slots, mmap'ed */
	_Atomic uint32_t n_slots;  /* high-water mark of used slots */

	/* writer thread */
	pthread_t writer;
	bool writer_running;
	pthread_mutex_t lock; /* serializes the writer against flush/fork/exec */
	pthread_cond_t wake;
	char path[4096];

	/* handler/dlclose rendezvous: see modules.c */
	_Atomic int inflight;
	_Atomic int modules_changing;

	_Atomic uint64_t stray_signals; /* SIGPROF on a thread we don't know */
};

extern struct sp_state sp_g;

/* This thread's slot, or NULL. Initial-exec TLS: signal-safe to read. */
extern __thread struct sp_thread *sp_self SP_TLS;

/* Set while this thread's handler is inside libunwind: routes dl_iterate_phdr to the snapshot. */
extern __thread volatile int sp_in_unwind SP_TLS;

/* Pauses every live thread's timer (exec, shutdown, stepping aside), and resumes them. */
void sp_timers_pause_all(void);
void sp_timers_resume_all(void);
/* Whether the program took SIGPROF over and stackprof stepped aside for good. */
bool sp_stepped_aside(void);

/*
 * Stops the timers and writes the final stats: what the destructor does at
 * exit, and what exitsig.c does before the process kills itself with sig
 * (0: a normal exit). Once per process; later calls return at once.
 */
void sp_finish(int sig);

/* Monotonic time in ns. Signal-safe. */
uint64_t sp_now_ns(void);

/* The calling thread's CPU time in ns (a syscall). Signal-safe. */
uint64_t sp_thread_cpu_ns(void);

/* Kernel thread id. Signal-safe. */
pid_t sp_gettid(void);

/* Reads up to size-1 bytes of a small file (/proc) and NUL-terminates buf. Bytes read, or -1. */
ssize_t sp_read_small(const char *path, char *buf, size_t size);

/* Writes a diagnostic to stderr with write(2), unless quiet. Signal-safe when msg is constant. */
void sp_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* --- thread.c ----------------------------------------------------------- */

/* Claims a slot for the calling thread, sets sp_self and arms its timer. 0 or -errno. */
int sp_thread_attach(void);
/* Disarms the calling thread's timer and hands its slot to the writer. */
void sp_thread_detach(void);
/* Installs the TLS destructor that detaches exiting threads. */
int sp_thread_init(void);
/* Starts one of stackprof's own threads (writer, ticker): not profiled, and
 * with every signal blocked, so the target's signals go to its own threads.
 * The mask is set through the attribute: the caller's is never touched. 0 or errno. */
int sp_spawn_quiet(pthread_t *thread, void *(*fn)(void *), void *arg);
/* Joins such a thread and waits until the kernel has removed its task too
 * (tid: its kernel thread id, 0 if unknown), so that the process is left
 * with the threads it had without it. */
void sp_join_quiet(pthread_t thread, pid_t tid);

/* --- interpose.c --------------------------------------------------------- */

/* The libc definition of a function this library interposes (dlsym RTLD_NEXT). */
void *sp_real_sym(const char *name);
#define SP_REAL(name) ((__typeof__(&name))sp_real_sym(#name))

/* SIGTRAP shared with the program under the perf-sigtrap timer (sigtrap.c). */
bool sp_trap_is_ours(const siginfo_t *si);
bool sp_trap_shared(void);
int sp_trap_install(void (*handler)(int, siginfo_t *, void *));
int sp_trap_sigaction(const struct sigaction *act, struct sigaction *old);
void sp_trap_forward(int sig, siginfo_t *si, void *uc);
void sp_trap_before_exec(void);
void sp_trap_after_failed_exec(void);

/* Installs the handler for the timer's signal; -EBUSY if the target
 * already handles SIGPROF. */
int sp_handler_install(void);
/* Registers the fork hooks. 0 or -errno. */
int sp_fork_init(void);
/* api.c's fork hooks, as sp_modules_atfork(). */
void sp_api_atfork(int phase);
void sp_api_init(void);
/* glibc's dlopen, for loading libunwind privately. */
void *sp_real_dlopen(const char *file, int mode);

/* --- writer.c ----------------------------------------------------------- */

/* Opens the output file and starts the writer thread. 0 or -errno. */
int sp_writer_start(void);
/* Drains and flushes now; waits for it. */
void sp_writer_flush_now(void);
/* Drains and flushes with stats marked "exec": the profile reads as complete if exec succeeds. */
void sp_writer_exec_flush(void);
/* Drains everything, writes the final stats, closes the file, joins the thread.
 * sig: the signal the process is about to end itself with, or 0. */
void sp_writer_stop(bool final, int sig);
/* Joins the writer thread, keeping the file and all state, and starts it
 * again. Samples wait in the rings meanwhile (a full ring drops them). */
void sp_writer_park(void);
void sp_writer_unpark(void);
/* In a fork child: drops the parent's writer state without touching its file. */
void sp_writer_forget(void);

#endif
