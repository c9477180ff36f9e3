/*
 * sigshare.c - signals shared with the program (sigshare.h).
 */
#include "sampler/capture/sigshare.h"
#include "sampler/capture/handler.h"
#include "sampler/base/real.h"
#include "sampler/core/sampler.h"
#include "sampler/base/sigsafe.h"
#include "sampler/capture/sigstack.h"
#include "sampler/base/sys.h"
#include "sampler/core/source.h"

#include <errno.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef TRAP_PERF
#define TRAP_PERF 6
#endif

/*
 * Per shared signal, the program's action: two copies, each under a
 * sequence count, and the index of the current one. Setters (normal
 * context) are serialized by a mutex and fill the copy not in use; the
 * handler reads the current copy and checks its count, and so never waits
 * on a setter. SA_RESETHAND, applied by the handler, is a flag beside them:
 * set for the generation the handler read, so a newer action set meanwhile
 * is not reset.
 */
struct sp_share {
	int sig;
	struct {
		_Atomic uint32_t seq;
		struct sigaction act;
	} app[2];
	/* generation << 1 | index of the current copy */
	_Atomic uint64_t cur;
	/* generation + 1 of an action reset to SIG_DFL by SA_RESETHAND, or 0 */
	_Atomic uint64_t reset;
	_Atomic bool active;
	void (*handler)(int, siginfo_t *, void *);
	sigset_t mask;
};

static struct sp_share sp_shares[] = {{.sig = SIGTRAP}, {.sig = SIGSEGV}, {.sig = SIGBUS}};
#define SP_N_SHARES (sizeof(sp_shares) / sizeof(sp_shares[0]))

static pthread_mutex_t sp_share_lock = PTHREAD_MUTEX_INITIALIZER;
/* libc's sigaction, resolved at install: the handler may need it, and dlsym is not signal-safe */
static __typeof__(&sigaction) sp_real_sigaction;

SP_SIGSAFE static struct sp_share *sp_share_of(int sig)
{
	for (size_t i = 0; i < SP_N_SHARES; i++)
		if (sp_shares[i].sig == sig)
			return &sp_shares[i];
	return NULL;
}

/* An action with no flags and an empty mask: SIG_DFL or SIG_IGN. */
SP_SIGSAFE static struct sigaction sp_plain_action(void (*handler)(int))
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = handler;
	return sa;
}

bool sp_trap_is_ours(const siginfo_t *si)
{
	return si->si_code == TRAP_PERF && sp_si_perf_data(si) == SP_TRAP_COOKIE;
}

bool sp_share_active(int sig)
{
	struct sp_share *s = sp_share_of(sig);
	return s && atomic_load_explicit(&s->active, memory_order_acquire);
}

static void sp_app_set(struct sp_share *s, const struct sigaction *act)
{
	/* a handler of the program's that sets the signal while this thread
	 * holds the lock would wait for itself: no signals meanwhile */
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	pthread_mutex_lock(&sp_share_lock);
	uint64_t cur = atomic_load(&s->cur);
	uint64_t gen = (cur >> 1) + 1;
	int next = (int)(gen & 1);
	atomic_fetch_add(&s->app[next].seq, 1); /* odd: being written */
	s->app[next].act = *act;
	atomic_fetch_add(&s->app[next].seq, 1);
	atomic_store(&s->cur, gen << 1 | (uint64_t)next);
	pthread_mutex_unlock(&sp_share_lock);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
}

/* The program's action and its generation. Signal-safe: a setter that
 * rewrote the copy meanwhile (twice, since it alternates) makes it read
 * again; a few tries always find a whole copy unless setters run without
 * pause, and the last read is then as good as any. */
SP_SIGSAFE static struct sigaction sp_app_get(struct sp_share *s, uint64_t *gen)
{
	struct sigaction a;
	for (int tries = 0;; tries++) {
		uint64_t cur = atomic_load(&s->cur);
		int i = (int)(cur & 1);
		uint32_t s0 = atomic_load(&s->app[i].seq);
		a = s->app[i].act;
		atomic_thread_fence(memory_order_acquire);
		if (((s0 & 1) == 0 && atomic_load(&s->app[i].seq) == s0) || tries == 8) {
			*gen = cur >> 1;
			break;
		}
	}
	if (atomic_load(&s->reset) == *gen + 1)
		a = sp_plain_action(SIG_DFL);
	return a;
}

bool sp_share_handled(int sig)
{
	struct sp_share *s = sp_share_of(sig);
	if (!s || !atomic_load_explicit(&s->active, memory_order_acquire))
		return false;
	uint64_t gen;
	struct sigaction a = sp_app_get(s, &gen);
	return a.sa_handler != SIG_DFL && a.sa_handler != SIG_IGN;
}

static int sp_share_take(struct sp_share *s)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = s->handler;
	sa.sa_flags = SA_SIGINFO | SA_RESTART | SA_ONSTACK; /* sigstack.h */
	sa.sa_mask = s->mask;
	if (sp_real_sigaction(s->sig, &sa, NULL) < 0)
		return -errno;
	atomic_store_explicit(&s->active, true, memory_order_release);
	return 0;
}

int sp_share_install(int sig, void (*handler)(int, siginfo_t *, void *), const sigset_t *mask)
{
	struct sp_share *s = sp_share_of(sig);
	if (!s)
		return -EINVAL;
	if (atomic_load(&s->active))
		return 0;
	struct sigaction old;
	sp_real_sigaction = SP_REAL(sigaction);
	if (sp_real_sigaction(sig, NULL, &old) < 0)
		return -errno;
	sp_app_set(s, &old); /* SIG_IGN survives exec; keep it as the program's */
	s->handler = handler;
	s->mask = *mask;
	return sp_share_take(s);
}

int sp_share_sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
	struct sp_share *s = sp_share_of(sig);
	uint64_t gen;
	struct sigaction prev = sp_app_get(s, &gen);
	if (act)
		sp_app_set(s, act);
	if (old)
		*old = prev;
	return 0;
}

/* A signal the kernel raised for an instruction (a fault, a breakpoint
 * past which the program counter already moved is not one: SIGTRAP is
 * sent again instead). */
SP_SIGSAFE static bool sp_is_fault(int sig, const siginfo_t *si)
{
	return (sig == SIGSEGV || sig == SIGBUS) && si->si_code > 0;
}

void sp_share_forward(int sig, siginfo_t *si, void *ucv)
{
	ucontext_t *uc = ucv;
	struct sp_share *s = sp_share_of(sig);
	uint64_t gen;
	struct sigaction a = sp_app_get(s, &gen);
	bool fault = sp_is_fault(sig, si);
	enum sp_fault_whose whose = fault ? sp_handler_fault(uc) : SP_FAULT_PROGRAM;
	if (whose == SP_FAULT_AGAIN)
		return; /* it comes again, where it was raised */
	if (a.sa_handler == SIG_IGN && !fault)
		return;
	/* Our own code's fault is never handed to the program's handler, nor
	 * taken for its own and survived: the process dies of it as of any
	 * library's crash, with a core that shows where */
	if (a.sa_handler == SIG_DFL || a.sa_handler == SIG_IGN || whose == SP_FAULT_OURS) {
		/* the default action is a core dump: give it back to the kernel;
		 * a fault happens again as this handler returns, a sent signal is
		 * sent again and lands, unblocked, on return */
		struct sigaction dfl = sp_plain_action(SIG_DFL);
		sp_real_sigaction(sig, &dfl, NULL);
		atomic_store_explicit(&s->active, false, memory_order_release);
		sigdelset(&uc->uc_sigmask, sig);
		if (!fault)
			syscall(SYS_tgkill, getpid(), sp_gettid(), sig);
		return;
	}
	if (a.sa_flags & SA_RESETHAND)
		atomic_store(&s->reset, gen + 1);
	/* the mask the kernel would have set for the program's handler */
	sigset_t mask = uc->uc_sigmask;
	for (int n = 1; n < NSIG; n++)
		if (sigismember(&a.sa_mask, n) == 1)
			sigaddset(&mask, n);
	if (!(a.sa_flags & SA_NODEFER))
		sigaddset(&mask, sig);
	pthread_sigmask(SIG_SETMASK, &mask, NULL);
	/* on the stack the kernel would have used for the program's action;
	 * sa_handler and sa_sigaction share their storage, and the extra
	 * arguments are harmless to a one-argument handler */
	sp_sigstack_call_program(a.sa_sigaction, sig, si, ucv, (a.sa_flags & SA_ONSTACK) != 0);
}

void sp_share_atfork(int phase)
{
	if (phase == 0)
		pthread_mutex_lock(&sp_share_lock);
	else if (phase == 1)
		pthread_mutex_unlock(&sp_share_lock);
	else
		pthread_mutex_init(&sp_share_lock, NULL);
}

void sp_share_before_exec(void)
{
	/* handlers reset at exec but SIG_IGN is inherited: hand it over. Any
	 * other setting stays ours, so a sample still in flight is harmless. */
	for (size_t i = 0; i < SP_N_SHARES; i++) {
		struct sp_share *s = &sp_shares[i];
		uint64_t gen;
		if (atomic_load(&s->active) && sp_app_get(s, &gen).sa_handler == SIG_IGN) {
			struct sigaction ign = sp_plain_action(SIG_IGN);
			sp_real_sigaction(s->sig, &ign, NULL);
		}
	}
}

void sp_share_after_failed_exec(void)
{
	for (size_t i = 0; i < SP_N_SHARES; i++)
		if (atomic_load(&sp_shares[i].active))
			sp_share_take(&sp_shares[i]);
}
