/*
 * sigmask.h - the program's signal mask, as the program sees it.
 *
 * The timer's signal (SIGTRAP under perf-sigtrap, SIGPROF under the other
 * timers) is stackprof's. A program may block it like any other signal
 * (every signal blocked, then sigwait or a signalfd: a common shutdown
 * design), and may inherit it blocked (across exec, from the thread that
 * created it). Were it really blocked, the timer's signals would pile up
 * pending, and the program's sigwait, signalfd or ppoll would take them.
 * So it is never blocked for real where the program asks: stackprof keeps,
 * per thread, the program's view of the two signals (blocked or not), and
 * the kernel's mask is the program's with the timer's signal open:
 *
 * - sigprocmask/pthread_sigmask change and report the program's view; the
 *   kernel gets the program's mask without the timer's signal;
 * - a thread starts with the view of the mask it was created with (its
 *   creator's, or pthread_attr_setsigmask_np's), and the main thread with
 *   the one it inherited across exec; exec hands the view to the new image
 *   as a real mask;
 * - a signal of the program's own (raise, kill, its own timer), sent while
 *   its view blocks it, is held by the handler (its siginfo kept, the
 *   signal blocked for real, one instance left pending, which carries it),
 *   so that it waits for the program as it would alone;
 * - sigwait, sigwaitinfo and sigtimedwait swallow a signal of the timer's
 *   that got there anyway (a mask set by raw system call, or a signal's
 *   handler's sa_mask) and wait on for the time left; a signalfd never
 *   holds the timer's signal;
 * - a wait with a mask of its own (ppoll, pselect, epoll_pwait(2), sigsuspend)
 *   has the timer's signal blocked during the wait, unless the program has
 *   a handler of its own for it: a sample never ends a wait.
 *
 * The thread is sampled all along, whatever its view blocks: `xz -T2`'s
 * workers, started with every signal blocked, still are.
 */
#ifndef SP_SAMPLER_SIGMASK_H
#define SP_SAMPLER_SIGMASK_H

#include <pthread.h>
#include <signal.h>
#include <stdbool.h>

#include "sampler/base/sigsafe.h"

#include "sampler/base/syscall.h" /* sp_sigmask_own, pthread_sigmask */

/* The program's pthread_sigmask: changes and reports its view, and keeps
 * the timer's signal open in the kernel's mask. 0 or an errno value.
 * Signal-safe. */
SP_SIGSAFE int sp_mask_program(int how, const sigset_t *set, sigset_t *old);

/* Whether the handler is done with sig: a signal of the program's own,
 * sent while its view blocks sig, is held (blocked for real as the handler
 * returns, through uc's mask). Once the program opened it, the instance
 * delivered gets the held one's siginfo in *si, for the handler to pass
 * on. Signal-safe. */
SP_SIGSAFE bool sp_mask_keep_pending(int sig, siginfo_t *si, void *uc);

/* The view a thread created now with attr (NULL: the creator's mask)
 * starts with; the new thread passes it to sp_mask_thread_begin before it
 * attaches. */
unsigned sp_mask_child_view(const pthread_attr_t *attr);
void sp_mask_thread_begin(unsigned view);

/* On a thread being attached, before the timer's signal is opened: what
 * its real mask blocks becomes its view (the mask inherited across exec,
 * or set by the creator). */
void sp_mask_adopt(void);

/* Around exec: the new image inherits the view as its real mask; a failed
 * exec opens the timer's signal again. */
void sp_mask_before_exec(void);
void sp_mask_after_failed_exec(void);

#endif
