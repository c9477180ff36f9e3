/*
 * signals.c - installing the handler, and the program's own SIGPROF: the
 * sigaction() and signal() interposers step aside when the program takes
 * SIGPROF and step back in when it gives it back (signals.h).
 */
#include "sampler/base/sigsafe.h"
#include "sampler/life/signals.h"
#include "sampler/life/api.h"
#include "sampler/capture/handler.h"
#include "sampler/life/interpose.h"
#include "sampler/core/sampler.h"
#include "sampler/capture/sigmask.h"
#include "sampler/capture/sigshare.h"
#include "sampler/base/sys.h"
#include "sampler/life/termsig.h"
#include "sampler/core/source.h"
#include "sampler/writer/writer.h"

#include <errno.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

/* one change of side at a time: two threads may call sigaction at once */
static pthread_mutex_t sp_side_lock = PTHREAD_MUTEX_INITIALIZER;

static bool sp_is_ours(const struct sigaction *act)
{
	return (act->sa_flags & SA_SIGINFO) && act->sa_sigaction == sp_handler;
}

/* SIGPROF is ours only while a source that sends it runs; SIGTRAP is
 * shared (sigshare.c). */
static bool sp_prof_is_ours(void)
{
	return atomic_load(&sp_g.enabled) && (sp_sources_signals() & (1ull << SIGPROF)) &&
	       !atomic_load(&sp_g.stopping);
}

static struct sigaction sp_our_action(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = sp_handler;
	sa.sa_flags = SA_SIGINFO | SA_RESTART | SA_ONSTACK;
	sa.sa_mask = sp_handler_mask();
	return sa;
}

/*
 * A timer signal of ours may already be pending on this thread when the
 * program's action takes over: take it now, and send again one that was
 * the program's own, so its handler sees only its own signals.
 */
static void sp_take_pending(int signo)
{
	sigset_t set, old;
	sigemptyset(&set);
	sigaddset(&set, signo);
	pthread_sigmask(SIG_BLOCK, &set, &old);
	struct timespec zero = {0, 0};
	siginfo_t si;
	bool theirs = false;
	while (sigtimedwait(&set, &si, &zero) == signo)
		theirs |= si.si_code != SI_TIMER && si.si_code != POLL_IN && si.si_code != POLL_HUP;
	if (theirs)
		syscall(SYS_tgkill, getpid(), sp_gettid(), signo);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
}

/* The program takes SIGPROF (a handler of its own, or SIG_IGN): stop
 * sampling and let it have the signal. Called with sp_side_lock held. */
static void sp_step_aside(void)
{
	if (sp_aside_set(true))
		return;
	atomic_store(&sp_g.sampling, false);
	sp_sources_pause();
	sp_take_pending(SIGPROF);
	sp_log("the program takes SIGPROF; stackprof steps aside and stops sampling until it "
	       "gives SIGPROF back");
	sp_writer_flush_now();
}

/* The program gives SIGPROF back: sample again as the API and schedule say. */
static void sp_step_in(void)
{
	if (!sp_aside_set(false))
		return;
	sp_log("the program gave SIGPROF back; stackprof samples again");
	sp_api_resync();
}

/*
 * The program's sigaction(SIGPROF, act, old). SIG_DFL or stackprof's own
 * action (saved by a program that changed SIGPROF for a while) gives the
 * signal back: stackprof's handler is installed instead and sampling goes
 * on. Anything else is the program's.
 */
static int sp_prof_sigaction(const struct sigaction *act, struct sigaction *old)
{
	pthread_mutex_lock(&sp_side_lock);
	struct sigaction ours = sp_our_action();
	bool back = act->sa_handler == SIG_DFL || sp_is_ours(act);
	if (!back)
		sp_step_aside();
	int rc = SP_REAL(sigaction)(SIGPROF, back ? &ours : act, old);
	int e = errno;
	if (back && rc == 0)
		sp_step_in();
	pthread_mutex_unlock(&sp_side_lock);
	errno = e;
	return rc;
}

SP_EXPORT int sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
	if (sp_share_active(sig))
		return sp_share_sigaction(sig, act, old);
	if (sig == SIGPROF && act && sp_prof_is_ours())
		return sp_prof_sigaction(act, old);
	if (sp_term_is(sig))
		return sp_term_sigaction(sig, act, old);
	return SP_REAL(sigaction)(sig, act, old);
}

SP_EXPORT sighandler_t signal(int sig, sighandler_t handler)
{
	if (sp_share_active(sig) || (sig == SIGPROF && sp_prof_is_ours()) || sp_term_is(sig)) {
		/* glibc's signal(): BSD semantics */
		struct sigaction sa, old;
		memset(&sa, 0, sizeof(sa));
		sa.sa_handler = handler;
		sa.sa_flags = SA_RESTART;
		sigaddset(&sa.sa_mask, sig);
		if (sigaction(sig, &sa, &old) < 0)
			return SIG_ERR;
		return old.sa_handler;
	}
	return SP_REAL(signal)(sig, handler);
}

int sp_handler_install(void)
{
	sigset_t mask = sp_handler_mask();
	uint64_t sigs = sp_sources_signals();
	bool cpu_prof = sp_g.cpu->signo == SIGPROF;
	if (sigs & (1ull << SIGTRAP)) {
		int err = sp_share_install(SIGTRAP, sp_handler, &mask);
		if (err || !(sigs & (1ull << SIGPROF)))
			return err;
	}
	struct sigaction old;
	if (SP_REAL(sigaction)(SIGPROF, NULL, &old) == 0 && old.sa_handler != SIG_DFL &&
	    old.sa_handler != SIG_IGN) {
		if (cpu_prof)
			return -EBUSY;
		/* the CPU timer sends SIGTRAP: only the sources beside it that
		 * want SIGPROF go without */
		sp_sources_refuse(SIGPROF);
		return 0;
	}
	struct sigaction sa = sp_our_action();
	return SP_REAL(sigaction)(SIGPROF, &sa, NULL) < 0 ? -errno : 0;
}
