/*
 * exitsig.c - a program that ends itself with a signal still leaves a
 * complete profile.
 *
 * Python, after an uncaught KeyboardInterrupt (Ctrl-C), resets SIGINT to
 * SIG_DFL and kill(getpid(), SIGINT)s itself, so that its parent sees it
 * die of the signal (bpo-1054041, Python 3.8+); shells and servers do the
 * same with SIGTERM or SIGHUP. The process then dies without running
 * destructors, and its profile would end without its final record, read as
 * "truncated" although nothing went wrong. So the calls a process uses to
 * signal itself finish the profile first, the way the destructor does
 * (sp_finish), with the signal recorded in the final stats.
 *
 * Only when that signal ends the process right away: SIGINT, SIGTERM,
 * SIGHUP or SIGQUIT, sent to this process, with the action SIG_DFL, not
 * blocked in the calling thread (a handler that re-raises its own signal
 * has it blocked until it returns, and our own handlers block every
 * signal, so neither finishes anything here), and not from a pid
 * namespace's init, which survives its own signals. Never for SIGKILL,
 * SIGSEGV, SIGABRT and the other signals of a crash: those profiles are
 * cut off at the last flush, as before. Not async-signal-safe, like the
 * destructor's path it takes.
 */
#include "sampler/life/interpose.h"
#include "sampler/life/main.h"
#include "sampler/core/sampler.h"

#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <string.h>
#include <unistd.h>

/* Whether sig, sent to this process now, ends it at once. */
static bool sp_ends_process(int sig)
{
	if (sig != SIGINT && sig != SIGTERM && sig != SIGHUP && sig != SIGQUIT)
		return false;
	if (!atomic_load(&sp_g.enabled) || atomic_load(&sp_g.stopping) || getpid() != sp_g.pid ||
	    getpid() == 1)
		return false;
	struct sigaction sa;
	sigset_t mask;
	if (sigaction(sig, NULL, &sa) < 0 || (sa.sa_flags & SA_SIGINFO) || sa.sa_handler != SIG_DFL)
		return false;
	if (pthread_sigmask(SIG_BLOCK, NULL, &mask) != 0 || sigismember(&mask, sig))
		return false;
	return true;
}

static void sp_before_self_signal(int sig)
{
	int e = errno;
	if (sp_ends_process(sig))
		sp_finish_aside(sig, true);
	errno = e;
}

/*
 * The real functions, looked up in the constructor: dlsym is not
 * async-signal-safe, and a program may first raise() from a signal
 * handler. A call before our constructor ran looks them up then.
 */
static int (*sp_real_kill)(pid_t, int);
static int (*sp_real_killpg)(pid_t, int);
static int (*sp_real_raise)(int);
static int (*sp_real_pthread_kill)(pthread_t, int);
static int (*sp_real_tgkill)(pid_t, pid_t, int);

__attribute__((constructor)) static void sp_exitsig_init(void)
{
	sp_real_kill = SP_REAL(kill);
	sp_real_killpg = SP_REAL(killpg);
	sp_real_raise = SP_REAL(raise);
	sp_real_pthread_kill = SP_REAL(pthread_kill);
	sp_real_tgkill = SP_REAL(tgkill);
}

SP_EXPORT int kill(pid_t pid, int sig)
{
	if (pid == getpid() || pid == 0 || (pid < -1 && -pid == getpgrp()))
		sp_before_self_signal(sig);
	if (!sp_real_kill)
		sp_real_kill = SP_REAL(kill);
	return sp_real_kill(pid, sig);
}

SP_EXPORT int killpg(pid_t pgrp, int sig)
{
	if (pgrp == 0 || pgrp == getpgrp())
		sp_before_self_signal(sig);
	if (!sp_real_killpg)
		sp_real_killpg = SP_REAL(killpg);
	return sp_real_killpg(pgrp, sig);
}

SP_EXPORT int raise(int sig)
{
	sp_before_self_signal(sig);
	if (!sp_real_raise)
		sp_real_raise = SP_REAL(raise);
	return sp_real_raise(sig);
}

SP_EXPORT int pthread_kill(pthread_t thread, int sig)
{
	if (pthread_equal(thread, pthread_self()))
		sp_before_self_signal(sig);
	if (!sp_real_pthread_kill)
		sp_real_pthread_kill = SP_REAL(pthread_kill);
	return sp_real_pthread_kill(thread, sig);
}

SP_EXPORT int tgkill(pid_t tgid, pid_t tid, int sig)
{
	if (tgid == getpid())
		sp_before_self_signal(sig);
	if (!sp_real_tgkill)
		sp_real_tgkill = SP_REAL(tgkill);
	return sp_real_tgkill(tgid, tid, sig);
}
