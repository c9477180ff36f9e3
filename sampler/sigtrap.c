/*
 * sigtrap.c - sharing SIGTRAP with the program (sigtrap.h).
 */
#include "sigsafe.h"
#include "sigtrap.h"
#include "sigstack.h"
#include "interpose.h"
#include "sampler.h"
#include "sys.h"
#include "timer.h"

#include <errno.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef TRAP_PERF
#define TRAP_PERF 6
#endif

/*
 * The program's action: two copies, each under a sequence count, and the
 * index of the current one. Setters (normal context) are serialized by a
 * mutex and fill the copy not in use; the handler reads the current copy
 * and checks its count, and so never waits on a setter. SA_RESETHAND,
 * applied by the handler, is a flag beside them: set for the generation
 * the handler read, so a newer action set meanwhile is not reset.
 */
static struct {
	_Atomic uint32_t seq;
	struct sigaction act;
} sp_app[2];
/* generation << 1 | index of the current copy */
static _Atomic uint64_t sp_app_cur;
/* generation + 1 of an action reset to SIG_DFL by SA_RESETHAND, or 0 */
static _Atomic uint64_t sp_app_reset;
static pthread_mutex_t sp_app_lock = PTHREAD_MUTEX_INITIALIZER;
static _Atomic bool sp_shared;
static void (*sp_trap_handler)(int, siginfo_t *, void *);
/* libc's sigaction, resolved at install: the handler may need it, and dlsym is not signal-safe */
static __typeof__(&sigaction) sp_real_sigaction;

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

bool sp_trap_shared(void)
{
	return atomic_load_explicit(&sp_shared, memory_order_acquire);
}

static void sp_app_set(const struct sigaction *act)
{
	/* a handler of the program's that sets SIGTRAP while this thread holds
	 * the lock would wait for itself: no signals meanwhile */
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	pthread_mutex_lock(&sp_app_lock);
	uint64_t cur = atomic_load(&sp_app_cur);
	uint64_t gen = (cur >> 1) + 1;
	int next = (int)(gen & 1);
	atomic_fetch_add(&sp_app[next].seq, 1); /* odd: being written */
	sp_app[next].act = *act;
	atomic_fetch_add(&sp_app[next].seq, 1);
	atomic_store(&sp_app_cur, gen << 1 | (uint64_t)next);
	pthread_mutex_unlock(&sp_app_lock);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
}

/* The program's action and its generation. Signal-safe: a setter that
 * rewrote the copy meanwhile (twice, since it alternates) makes it read
 * again; a few tries always find a whole copy unless setters run without
 * pause, and the last read is then as good as any. */
SP_SIGSAFE static struct sigaction sp_app_get(uint64_t *gen)
{
	struct sigaction a;
	for (int tries = 0;; tries++) {
		uint64_t cur = atomic_load(&sp_app_cur);
		int i = (int)(cur & 1);
		uint32_t s0 = atomic_load(&sp_app[i].seq);
		a = sp_app[i].act;
		atomic_thread_fence(memory_order_acquire);
		if (((s0 & 1) == 0 && atomic_load(&sp_app[i].seq) == s0) || tries == 8) {
			*gen = cur >> 1;
			break;
		}
	}
	if (atomic_load(&sp_app_reset) == *gen + 1)
		a = sp_plain_action(SIG_DFL);
	return a;
}

static int sp_trap_take(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = sp_trap_handler;
	sa.sa_flags = SA_SIGINFO | SA_RESTART | SA_ONSTACK; /* sigstack.h */
	sigfillset(&sa.sa_mask);
	if (sp_real_sigaction(SIGTRAP, &sa, NULL) < 0)
		return -errno;
	atomic_store_explicit(&sp_shared, true, memory_order_release);
	return 0;
}

int sp_trap_install(void (*handler)(int, siginfo_t *, void *))
{
	struct sigaction old;
	sp_real_sigaction = SP_REAL(sigaction);
	if (sp_real_sigaction(SIGTRAP, NULL, &old) < 0)
		return -errno;
	sp_app_set(&old); /* SIG_IGN survives exec; keep it as the program's */
	sp_trap_handler = handler;
	return sp_trap_take();
}

int sp_trap_sigaction(const struct sigaction *act, struct sigaction *old)
{
	uint64_t gen;
	struct sigaction prev = sp_app_get(&gen);
	if (act)
		sp_app_set(act);
	if (old)
		*old = prev;
	return 0;
}

void sp_trap_forward(int sig, siginfo_t *si, void *ucv)
{
	ucontext_t *uc = ucv;
	uint64_t gen;
	struct sigaction a = sp_app_get(&gen);
	if (a.sa_handler == SIG_IGN)
		return;
	if (a.sa_handler == SIG_DFL) {
		/* the default action is a core dump: give it back to the kernel
		 * and send the signal again; it lands, unblocked, on return */
		struct sigaction dfl = sp_plain_action(SIG_DFL);
		sp_real_sigaction(SIGTRAP, &dfl, NULL);
		atomic_store_explicit(&sp_shared, false, memory_order_release);
		sigdelset(&uc->uc_sigmask, SIGTRAP);
		syscall(SYS_tgkill, getpid(), sp_gettid(), SIGTRAP);
		return;
	}
	if (a.sa_flags & SA_RESETHAND)
		atomic_store(&sp_app_reset, gen + 1);
	/* the mask the kernel would have set for the program's handler */
	sigset_t mask = uc->uc_sigmask;
	for (int s = 1; s < NSIG; s++)
		if (sigismember(&a.sa_mask, s) == 1)
			sigaddset(&mask, s);
	if (!(a.sa_flags & SA_NODEFER))
		sigaddset(&mask, SIGTRAP);
	pthread_sigmask(SIG_SETMASK, &mask, NULL);
	/* on the stack the kernel would have used for the program's action;
	 * sa_handler and sa_sigaction share their storage, and the extra
	 * arguments are harmless to a one-argument handler */
	sp_sigstack_call_program(a.sa_sigaction, sig, si, ucv, (a.sa_flags & SA_ONSTACK) != 0);
}

void sp_trap_atfork(int phase)
{
	if (phase == 0)
		pthread_mutex_lock(&sp_app_lock);
	else if (phase == 1)
		pthread_mutex_unlock(&sp_app_lock);
	else
		pthread_mutex_init(&sp_app_lock, NULL);
}

void sp_trap_before_exec(void)
{
	/* handlers reset at exec but SIG_IGN is inherited: hand it over. Any
	 * other setting stays ours, so a sample still in flight is harmless. */
	uint64_t gen;
	if (sp_trap_shared() && sp_app_get(&gen).sa_handler == SIG_IGN) {
		struct sigaction ign = sp_plain_action(SIG_IGN);
		sp_real_sigaction(SIGTRAP, &ign, NULL);
	}
}

void sp_trap_after_failed_exec(void)
{
	if (sp_trap_shared())
		sp_trap_take();
}
