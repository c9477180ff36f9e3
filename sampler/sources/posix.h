/*
 * posix.h - posix-cputimer (STACKPROF_TIMER=posix): timer_create on
 * CLOCK_THREAD_CPUTIME_ID, aimed at one thread with SIGEV_THREAD_ID.
 *
 * The kernel checks CPU timers only at its tick (HZ, 250 here), so a
 * fixed period would sample a periodic program at the same phases again
 * and again: each period is drawn at random in [period/2, 3 period/2) and
 * the timer re-armed from the handler. Each sample weighs the thread's CPU
 * time since the previous one.
 *
 * The CPU timer a thread gets when perf-task-clock can't give it an event
 * of its own (perf.c): hence this header.
 */
#ifndef SP_SAMPLER_POSIX_H
#define SP_SAMPLER_POSIX_H

struct sp_thread;

extern const struct sp_source sp_posix_source;

/* Hands t (the calling thread's slot) to posix-cputimer and arms it. 0 or -errno. */
int sp_posix_take(struct sp_thread *t);

#endif
