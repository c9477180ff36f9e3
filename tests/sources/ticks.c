/*
 * ticks.c - a toy event source with a signal of its own, the example of
 * one: at every stackprof_step() it queues SIGPROF to the calling thread
 * with its own cookie, and the signal handler hands that signal to it (its
 * owns op) among the other started sources, the CPU timer included, even
 * when that timer sends SIGPROF too (posix-cputimer). Each sample is kind
 * user, weight 1, captured in the handler like a CPU sample. It is this
 * one file: no edit to the handler or to another source.
 * tests/CMakeLists.txt builds it into libstackprof-ticks.so; t0064 runs it.
 * Its owns op runs in the handler; unit/sigsafe checks the library's own
 * sources only, so a source in sampler/sources/ lists it in sigsafe.h.
 */
#include "format/profile.h"
#include "sampler/base/sys.h"
#include "sampler/core/source.h"

#include <signal.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define SP_TICKS_COOKIE 0x5449434b53ul /* "TICKS" */

static void sp_ticks_step(long step)
{
	(void)step;
	siginfo_t si;
	memset(&si, 0, sizeof(si));
	si.si_signo = SIGPROF;
	si.si_code = SI_QUEUE;
	si.si_pid = getpid();
	si.si_uid = getuid();
	si.si_value.sival_ptr = (void *)SP_TICKS_COOKIE;
	syscall(SYS_rt_tgsigqueueinfo, getpid(), sp_gettid(), SIGPROF, &si);
}

/* ours: queued, with the cookie. Signal-safe. */
SP_SIGSAFE static bool sp_ticks_owns(const struct sp_thread *t, const siginfo_t *si)
{
	(void)t;
	return si->si_code == SI_QUEUE && si->si_value.sival_ptr == (void *)SP_TICKS_COOKIE;
}

/* no weight op: each sample weighs 1 */
static const struct sp_source sp_ticks = {
    .name = "ticks",
    .kind = SP_EVENT_USER,
    .signo = SIGPROF,
    .step = sp_ticks_step,
    .owns = sp_ticks_owns,
};

__attribute__((constructor(SP_SOURCE_PRIORITY))) static void sp_ticks_register(void)
{
	sp_source_register(&sp_ticks);
}
