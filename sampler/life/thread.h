/*
 * thread.h - a slot for every thread the program runs, and stackprof's own
 * threads.
 *
 * Program threads are found through an interposed pthread_create: the new
 * thread runs a trampoline that claims a slot (sampler.h), maps its ring,
 * warms the unwinder and arms its own timer before the program's start
 * routine. A TLS destructor hands the slot to the writer when the thread
 * exits. The main thread attaches from the constructor.
 *
 * stackprof's own threads (the writer, the sampler-thread timer) are not
 * profiled and run with every signal blocked, so the program's
 * process-directed signals never land on them.
 *
 * None of this is signal-safe.
 */
#ifndef SP_SAMPLER_THREAD_H
#define SP_SAMPLER_THREAD_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

/* Installs the TLS destructor that detaches exiting threads, and finds
 * glibc's pthread_create. 0 or -errno. */
int sp_thread_init(void);

/* The pthread key whose value on each thread is its slot (python.c finds
 * glibc's key block with it). */
unsigned sp_thread_key_id(void);

/* Claims a slot for the calling thread, sets sp_self and arms its timer;
 * py_name (or NULL) is the name Python's threading gave it. 0 (also when
 * stackprof is off) or -errno. */
int sp_thread_attach(const char *py_name);

/*
 * stackprof's own CPU time on this thread since c0 (sp_thread_cpu_ns())
 * and h0 (sp_self_handler_ns() then), less the handler's time meanwhile,
 * which handler_ns counts: the thread's timer may be armed during set-up.
 */
uint64_t sp_self_handler_ns(void);
uint64_t sp_own_cpu_since(uint64_t c0, uint64_t h0);

/* Disarms the calling thread's timer and hands its slot to the writer,
 * which drains the ring and frees the slot. */
void sp_thread_detach(void);

/* Sets a drained slot free for the next thread (the writer's last act on it). */
struct sp_thread;
void sp_thread_slot_free(struct sp_thread *t);

/*
 * The CPU time of the threads that got no slot (sp_g.threads_missed
 * counts them): of those that exited, and of those running now, read from
 * their clocks. Never waits: if another thread holds the list, the last
 * sum. For the stats the writer writes.
 */
uint64_t sp_thread_missed_ns(void);

/* In a fork child: the list of threads without a slot, the count and the
 * slot hint start again (the child's only thread takes a slot). */
void sp_thread_atfork_child(void);

/* From now on, a thread that leaves makes no system call of ours: a
 * seccomp filter may be about to forbid them (seccomp.c). */
void sp_thread_seal(void);

/* Empties t's table of the stacks it sent whole (handler.h), so that its
 * next samples send them whole again: a slot's new thread starts with an
 * empty one (a fork child's writer never saw the parent's stacks). */
void sp_thread_forget_stacks(struct sp_thread *t);

/*
 * Starts one of stackprof's own threads: not profiled, and with every
 * signal blocked. The mask is set through the attribute: the caller's is
 * never touched. 0 or errno.
 */
int sp_spawn_quiet(pthread_t *thread, void *(*fn)(void *), void *arg);

/*
 * The stack of each of stackprof's threads, whatever RLIMIT_STACK and
 * pthread_setattr_default_np say: the deepest of them, the final flush,
 * needs 83 KiB of stackprof's own frames (docs/SAMPLER.md, "Stacks"); the
 * rest is a margin for zlib's and libc's. Only the pages touched are ever
 * backed. The guard is wider than the largest frame of ours (64 KiB in
 * sp_jit_sync), so that no overflow can step over it.
 */
#define SP_OWN_STACK (256u * 1024)
#define SP_OWN_GUARD (68u * 1024)

/* Whether a thread of ours is being started: it is in own_threads already
 * but may not be in /proc yet. */
bool sp_spawn_busy(void);

/*
 * Runs fn on a thread of stackprof's own and waits for it; on the calling
 * thread if that can't start. Work that needs more stack than a program's
 * thread may have (its budget: docs/SAMPLER.md) goes there. fn's result.
 */
int sp_call_aside(int (*fn)(void));

/*
 * Joins such a thread and waits until the kernel has removed its task too
 * (tid: its kernel thread id, 0 if unknown), so that the process is left
 * with the threads it had without stackprof.
 */
void sp_join_quiet(pthread_t thread, pid_t tid);

#endif
