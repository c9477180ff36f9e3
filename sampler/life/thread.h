/*
 * thread.h - a slot for every thread the program runs.
 *
 * Program threads are found through an interposed pthread_create: the new
 * thread runs a trampoline that claims a slot (sampler.h), maps its ring,
 * warms the unwinder and arms its own timer before the program's start
 * routine. A TLS destructor hands the slot to the writer when the thread
 * exits. The main thread attaches from the constructor.
 *
 * stackprof's own threads are core/ownthreads.h; a drained slot is set
 * free by sp_thread_slot_free (core/sampler.h).
 *
 * None of this is signal-safe.
 */
#ifndef SP_SAMPLER_THREAD_H
#define SP_SAMPLER_THREAD_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

struct sp_thread;

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

#endif
