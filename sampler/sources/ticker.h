/*
 * ticker.h - the sampler-thread timer (STACKPROF_TIMER=thread): one thread
 * of ours wakes at the sampling rate, reads the CPU clock of every sampled
 * thread, and sends SIGPROF (tgkill) to each that is running at that moment.
 *
 * Why another timer: POSIX CPU timers fire from the kernel tick (250 Hz
 * here), and perf_event's task clock needs perf_event_paranoid <= 2, which
 * stock Debian kernels (3) and Docker's default seccomp profile refuse. The
 * ticker needs neither, so rates above the tick work in any container. In
 * a VM it is also cheaper for the sampled thread: the wake-up's timer
 * interrupt lands on the ticker's CPU, and the sampled thread takes only
 * the signal's inter-processor interrupt (docs/BENCHMARKS.md).
 *
 * Why it is not the default: that interrupt takes ~20 us to arrive in this
 * VM, and a system call the thread makes meanwhile delivers the signal
 * first, so samples slide to system call sites (docs/SAMPLER.md has the
 * measured bias). Timers on the sampled thread's own CPU have no such lag.
 *
 * Its costs are its own: a wake-up per period, and one or two clock reads
 * (system calls) per sampled thread each wake-up. The wake-ups are
 * jittered by +-50% of the period, so a program thread that wakes on a
 * timer of the same period is not always missed or always hit.
 *
 * A thread is signalled only when a second read of its clock shows it is
 * on a CPU, or when it was busy and /proc says it is runnable (the ticker
 * itself took its CPU): a thread asleep in a system call is left alone, as
 * a CPU-time timer would leave it. None of this is signal-safe; the handler
 * only reads the thread's own CPU clock for the weight.
 */
#ifndef SP_SAMPLER_TICKER_H
#define SP_SAMPLER_TICKER_H

#include <stdint.h>

struct sp_thread;

/* Starts the ticker thread (every signal blocked). 0 or -errno. */
int sp_ticker_start(uint64_t period_ns);

/* Stops and joins it (at exit, and around calls that want the program's
 * threads only); sp_ticker_start starts it again. */
void sp_ticker_stop(void);

/* The calling thread (t is its own slot) is to be sampled. 0 or -errno. */
int sp_ticker_arm(struct sp_thread *t);

/* Stops or restarts sampling t. After sp_ticker_pause or sp_ticker_disarm
 * returns, no signal of the ticker is sent to t's thread. */
void sp_ticker_pause(struct sp_thread *t);
void sp_ticker_resume(struct sp_thread *t);
void sp_ticker_disarm(struct sp_thread *t);

/* Fork hooks: 0 before fork, 1 in the parent, 2 in the child (which then
 * has no ticker thread until sp_ticker_start). */
void sp_ticker_atfork(int phase);

#endif
