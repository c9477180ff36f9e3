/*
 * termsig.c - SIGTERM, SIGINT and SIGHUP at their default action end the
 * process only once its profile is finished (termsig.h).
 */
#include "sampler/life/termsig.h"
#include "sampler/life/interpose.h"
#include "sampler/core/sampler.h"
#include "sampler/life/signals.h"
#include "sampler/base/sys.h"
#include "sampler/writer/writer.h"

#include <errno.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

static const int sp_term_sigs[] = {SIGTERM, SIGINT, SIGHUP};
#define SP_N_TERM (sizeof(sp_term_sigs) / sizeof(sp_term_sigs[0]))

/* libc's sigaction, resolved at install */
static __typeof__(&sigaction) sp_term_real;
static _Atomic bool sp_term_ready;
/* the SIG_DFL action as the program last set it (its flags and mask), to
 * answer with while ours stands in for it; racy only as the program's own
 * concurrent sigaction calls are */
static struct sigaction sp_term_view[SP_N_TERM];

static int sp_term_index(int sig)
{
	for (size_t i = 0; i < SP_N_TERM; i++)
		if (sp_term_sigs[i] == sig)
			return (int)i;
	return -1;
}

bool sp_term_is(int sig)
{
	return sp_term_index(sig) >= 0 && atomic_load(&sp_term_ready);
}

/* sa_handler and sa_sigaction share their storage */
static bool sp_term_is_ours(const struct sigaction *sa)
{
	return sa->sa_handler == sp_term_handler;
}

/* Whether this process may take a signal now: set up, not ending, not a
 * vfork child (its parent's memory), and not a pid namespace's init (a
 * container's first process), which the kernel keeps alive through these
 * signals at their default action: ours would only end its profile. */
static bool sp_term_may_take(void)
{
	return atomic_load(&sp_g.enabled) && !atomic_load(&sp_g.stopping) && getpid() == sp_g.pid &&
	       getpid() != 1;
}

static int sp_term_take(int sig)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	/* a plain handler, not SA_SIGINFO: it needs only the number, and so
	 * still works if the program reinstalls it through an interface that
	 * we don't see (sysv_signal, a raw system call) */
	sa.sa_handler = sp_term_handler;
	sa.sa_flags = SA_RESTART;
	sa.sa_mask = sp_handler_mask(); /* no other handler of ours or the program's meanwhile */
	return sp_term_real(sig, &sa, NULL);
}

void sp_term_install(void)
{
	sp_term_real = SP_REAL(sigaction);
	for (size_t i = 0; i < SP_N_TERM && sp_term_may_take(); i++) {
		struct sigaction cur;
		if (sp_term_real(sp_term_sigs[i], NULL, &cur) == 0 && cur.sa_handler == SIG_DFL) {
			sp_term_view[i] = cur;
			sp_term_take(sp_term_sigs[i]);
		}
	}
	atomic_store(&sp_term_ready, true);
}

int sp_term_sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
	int i = sp_term_index(sig);
	struct sigaction cur;
	/* the kernel's action says whether ours stands: a program that set one
	 * through a call we don't see has it */
	if (sp_term_real(sig, NULL, &cur) < 0)
		return -1;
	struct sigaction prev = sp_term_is_ours(&cur) ? sp_term_view[i] : cur;
	if (act) {
		bool take = act->sa_handler == SIG_DFL && sp_term_may_take();
		if ((take ? sp_term_take(sig) : sp_term_real(sig, act, NULL)) < 0)
			return -1;
		if (take)
			sp_term_view[i] = *act;
	}
	if (old)
		*old = prev;
	return 0;
}

/* The kernel's struct sigaction, for rt_sigaction: libc's sigaction is
 * ours to interpose, and SIG_DFL needs no restorer. */
struct sp_ksigaction {
	void (*handler)(int);
	unsigned long flags;
	void (*restorer)(void);
	uint64_t mask;
};

void sp_term_handler(int sig)
{
	int e = errno;
	if (getpid() == sp_g.pid && atomic_load(&sp_g.enabled) && !atomic_load(&sp_g.stopping))
		sp_writer_end_for_signal(sig, (uint64_t)SP_TERM_WAIT_MS * 1000000u);
	/* die of it as alone: the default action, the signal again (pending,
	 * as it is blocked in its handler), then unblocked */
	struct sp_ksigaction dfl;
	memset(&dfl, 0, sizeof(dfl));
	dfl.handler = SIG_DFL;
	syscall(SYS_rt_sigaction, sig, &dfl, NULL, sizeof(dfl.mask));
	syscall(SYS_tgkill, getpid(), sp_gettid(), sig);
	sigset_t set;
	memset(&set, 0, sizeof(set));
	sigaddset(&set, sig);
	pthread_sigmask(SIG_UNBLOCK, &set, NULL);
	errno = e; /* not reached */
}
