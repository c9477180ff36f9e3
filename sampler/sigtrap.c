/*
 * sigtrap.c - sharing SIGTRAP with the program while the perf-sigtrap timer
 * sends us SIGTRAP (TRAP_PERF) on every sample.
 *
 * The kernel's action for SIGTRAP stays our handler for the life of the
 * process. The program's own sigaction()/signal() calls for SIGTRAP are
 * answered from a copy kept here (libsigchain's idea): they read and set
 * what the program believes is installed. A SIGTRAP that is not ours (a
 * breakpoint, raise(), kill -TRAP) is then handled as that copy says: the
 * program's handler is called, an ignored one is dropped, and the default
 * action is restored and the signal sent again so that the process dies of
 * SIGTRAP with a core as it would have. Ours carry SP_TRAP_COOKIE in
 * si_perf_data and never reach the program.
 */
#include "sampler.h"
#include "timer.h"

#include <errno.h>
#include <sched.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef TRAP_PERF
#define TRAP_PERF 6
#endif

/* two copies and an index: the handler reads one whole while a setter fills the other */
static struct sigaction sp_app[2];
static _Atomic int sp_app_cur;
static _Atomic bool sp_app_lock;
static _Atomic bool sp_shared;
static void (*sp_trap_handler)(int, siginfo_t *, void *);
/* libc's sigaction, resolved at install: the handler may need it, and dlsym is not signal-safe */
static __typeof__(&sigaction) sp_real_sigaction;

/* An action with no flags and an empty mask: SIG_DFL or SIG_IGN. */
static struct sigaction sp_plain_action(void (*handler)(int))
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
	/* signals blocked while the lock is held: the handler also sets (for
	 * SA_RESETHAND) and must not spin on a lock its own thread holds */
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	while (atomic_exchange_explicit(&sp_app_lock, true, memory_order_acquire))
		sched_yield();
	int next = 1 - atomic_load_explicit(&sp_app_cur, memory_order_relaxed);
	sp_app[next] = *act;
	atomic_store_explicit(&sp_app_cur, next, memory_order_release);
	atomic_store_explicit(&sp_app_lock, false, memory_order_release);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
}

static struct sigaction sp_app_get(void)
{
	return sp_app[atomic_load_explicit(&sp_app_cur, memory_order_acquire)];
}

static int sp_trap_take(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = sp_trap_handler;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
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
	struct sigaction prev = sp_app_get();
	if (act)
		sp_app_set(act);
	if (old)
		*old = prev;
	return 0;
}

void sp_trap_forward(int sig, siginfo_t *si, void *ucv)
{
	ucontext_t *uc = ucv;
	struct sigaction a = sp_app_get();
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
	if (a.sa_flags & SA_RESETHAND) {
		struct sigaction dfl = sp_plain_action(SIG_DFL);
		sp_app_set(&dfl);
	}
	/* the mask the kernel would have set for the program's handler */
	sigset_t mask = uc->uc_sigmask;
	for (int s = 1; s < NSIG; s++)
		if (sigismember(&a.sa_mask, s) == 1)
			sigaddset(&mask, s);
	if (!(a.sa_flags & SA_NODEFER))
		sigaddset(&mask, SIGTRAP);
	pthread_sigmask(SIG_SETMASK, &mask, NULL);
	if (a.sa_flags & SA_SIGINFO)
		a.sa_sigaction(sig, si, ucv);
	else
		a.sa_handler(sig);
}

void sp_trap_before_exec(void)
{
	/* handlers reset at exec but SIG_IGN is inherited: hand it over. Any
	 * other setting stays ours, so a sample still in flight is harmless. */
	if (sp_trap_shared() && sp_app_get().sa_handler == SIG_IGN) {
		struct sigaction ign = sp_plain_action(SIG_IGN);
		sp_real_sigaction(SIGTRAP, &ign, NULL);
	}
}

void sp_trap_after_failed_exec(void)
{
	if (sp_trap_shared())
		sp_trap_take();
}
