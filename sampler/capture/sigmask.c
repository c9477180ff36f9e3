/*
 * sigmask.c - the program's view of its signal mask (sigmask.h).
 */
#define SP_SIGMASK_IMPL
#include "sampler/capture/sigmask.h"
#include "sampler/base/real.h"
#include "sampler/core/sampler.h"
#include "sampler/capture/sigshare.h"
#include "sampler/base/sys.h"
#include "sampler/core/source.h"

#include <errno.h>
#include <poll.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* The signals a timer of stackprof's may send, as bits of a view. */
static const int sp_tracked[] = {SIGTRAP, SIGPROF};
#define SP_N_TRACKED 2

SP_SIGSAFE static unsigned sp_bit(int sig)
{
	return sig == SIGTRAP ? 1u : sig == SIGPROF ? 2u : 0u;
}

/* Per thread: which of them the program's view blocks; which hold a
 * signal of the program's own, sent while the view blocked it (its siginfo
 * in sp_held_info); and which are blocked for real meanwhile. */
static __thread unsigned sp_view SP_TLS;
static __thread unsigned sp_held SP_TLS;
static __thread unsigned sp_held_real SP_TLS;
static __thread siginfo_t sp_held_info[SP_N_TRACKED] SP_TLS;

SP_SIGSAFE static int sp_idx(int sig)
{
	return sig == SIGTRAP ? 0 : 1;
}
/* those exec blocked for the new image, opened again if it fails */
static __thread unsigned sp_exec_blocked SP_TLS;

/* Whether sig is a running source's signal now: its signals must never
 * reach the program. */
SP_SIGSAFE static bool sp_managed(int sig)
{
	if (!atomic_load_explicit(&sp_g.enabled, memory_order_relaxed) || !sp_sources_send(sig))
		return false;
	return sig == SIGTRAP ? sp_share_active(SIGTRAP) : !sp_stepped_aside();
}

SP_SIGSAFE static unsigned sp_bits_of(const sigset_t *m)
{
	unsigned b = 0;
	for (int i = 0; i < SP_N_TRACKED; i++)
		if (sigismember(m, sp_tracked[i]) == 1)
			b |= sp_bit(sp_tracked[i]);
	return b;
}

/* The kernel's mask of the calling thread. */
static void sp_real_mask(sigset_t *m)
{
	sigemptyset(m);
	sp_sigmask_own(SIG_BLOCK, NULL, m);
}

int sp_mask_program(int how, const sigset_t *set, sigset_t *old)
{
	if (set && how != SIG_BLOCK && how != SIG_UNBLOCK && how != SIG_SETMASK)
		return EINVAL;
	sigset_t cur;
	sigemptyset(&cur);
	unsigned view = sp_view;
	if (!set) {
		int err = sp_sigmask_own(SIG_BLOCK, NULL, &cur);
		if (err)
			return err;
	} else {
		unsigned want = sp_bits_of(set);
		unsigned nv = want; /* SIG_SETMASK */
		if (how == SIG_BLOCK)
			nv = view | want;
		else if (how == SIG_UNBLOCK)
			nv = view & ~want;
		sigset_t k = *set;
		for (int i = 0; i < SP_N_TRACKED; i++) {
			int s = sp_tracked[i];
			unsigned b = sp_bit(s);
			if (how == SIG_UNBLOCK)
				continue; /* opening it is always fine */
			if ((sp_held & b) && (nv & b))
				sigaddset(&k, s); /* the program's own waits for it, blocked */
			else if (sp_managed(s))
				sigdelset(&k, s);
		}
		/* the view first: a held signal the program opens is delivered
		 * as the call returns, and must find it open */
		sp_view = nv;
		int err = sp_sigmask_own(how, &k, old ? &cur : NULL);
		if (err) {
			sp_view = view;
			return err;
		}
		if (how != SIG_UNBLOCK)
			sp_held_real = sp_held & nv;
	}
	if (old) {
		/* blocked for real (a handler's sa_mask, a raw system call) or in the view */
		*old = cur;
		for (int i = 0; i < SP_N_TRACKED; i++)
			if (view & sp_bit(sp_tracked[i]))
				sigaddset(old, sp_tracked[i]);
	}
	return 0;
}

SP_EXPORT int pthread_sigmask(int how, const sigset_t *set, sigset_t *old)
{
	return sp_mask_program(how, set, old);
}

/*
 * libunwind brackets every table lookup and every internal lock with two
 * sigprocmask() calls: ~6 system calls per frame, 190 us a sample on a
 * 80-frame torch stack. Our handler already runs with every signal blocked
 * (its sa_mask), so inside it those calls change nothing and are answered
 * here without entering the kernel (the handler reaches it: in capture/). The program's calls
 * change its view of the mask (sigmask.h).
 */
SP_SIGSAFE SP_EXPORT int sigprocmask(int how, const sigset_t *set, sigset_t *old)
{
	if (sp_in_unwind) {
		if (old)
			sigfillset(old);
		return 0;
	}
	int e = sp_mask_program(how, set, old);
	if (e) {
		errno = e;
		return -1;
	}
	return 0;
}

/*
 * Keeps one sig pending for a held signal of the program's: the kernel
 * keeps one standard signal pending at a time, so if a sample of ours is
 * pending already, it stands for the program's (whichever instance is
 * taken or delivered first carries sp_held_info), and a sample that comes
 * later merges into it. Signal-safe.
 */
SP_SIGSAFE static void sp_token(int sig)
{
	int e = errno;
	syscall(SYS_rt_tgsigqueueinfo, getpid(), sp_gettid(), sig, &sp_held_info[sp_idx(sig)]);
	errno = e;
}

bool sp_mask_keep_pending(int sig, siginfo_t *si, void *ucv)
{
	unsigned b = sp_bit(sig);
	if (!((sp_view | sp_held) & b))
		return false; /* nearly every signal ends here */
	ucontext_t *uc = ucv;
	if (!(sp_view & b)) {
		/* the program opened it: this instance carries its own, which
		 * the handler passes on (its own SIGPROF is a sample, as always) */
		sp_held &= ~b;
		*si = sp_held_info[sp_idx(sig)];
		return false;
	}
	if (sp_held & b) {
		/* one of its own waits already: this one merges into it */
		sigaddset(&uc->uc_sigmask, sig);
		sp_token(sig);
		return true;
	}
	if (sp_source_sent(sp_self, sig, si))
		return false;
	if (sig == SIGTRAP && si->si_code > 0)
		return false; /* a breakpoint or a trace trap: not a signal that waits */
	/* the handler runs with every signal blocked: it stays pending, and
	 * blocked as the handler returns */
	sp_held_info[sp_idx(sig)] = *si;
	sp_held |= b;
	sp_held_real |= b;
	sigaddset(&uc->uc_sigmask, sig);
	sp_token(sig);
	return true;
}

/* After the program took its held signal, or waited with a mask that
 * delivered it: the timer's signal is open again. */
static void sp_release(void)
{
	for (int i = 0; i < SP_N_TRACKED; i++) {
		int s = sp_tracked[i];
		unsigned b = sp_bit(s);
		if (!(sp_held_real & b) || (sp_held & b))
			continue;
		sp_held_real &= ~b;
		if (sp_managed(s)) {
			sigset_t one;
			sigemptyset(&one);
			sigaddset(&one, s);
			sp_sigmask_own(SIG_UNBLOCK, &one, NULL);
		}
	}
}

/* ---- threads and exec --------------------------------------------------- */

unsigned sp_mask_child_view(const pthread_attr_t *attr)
{
	sigset_t m;
	if (attr && pthread_attr_getsigmask_np(attr, &m) == 0)
		return sp_bits_of(&m);
	sp_real_mask(&m);
	return sp_view | sp_bits_of(&m);
}

void sp_mask_thread_begin(unsigned view)
{
	sp_view = view;
}

void sp_mask_adopt(void)
{
	sigset_t m;
	sp_real_mask(&m);
	sp_view |= sp_bits_of(&m);
}

void sp_mask_before_exec(void)
{
	sigset_t m;
	sigemptyset(&m);
	sp_exec_blocked = 0;
	for (int i = 0; i < SP_N_TRACKED; i++)
		if (sp_view & sp_bit(sp_tracked[i])) {
			sigaddset(&m, sp_tracked[i]);
			sp_exec_blocked |= sp_bit(sp_tracked[i]);
		}
	if (sp_exec_blocked)
		sp_sigmask_own(SIG_BLOCK, &m, NULL);
}

void sp_mask_after_failed_exec(void)
{
	sigset_t m;
	sigemptyset(&m);
	for (int i = 0; i < SP_N_TRACKED; i++)
		if ((sp_exec_blocked & sp_bit(sp_tracked[i])) &&
		    !(sp_held & sp_bit(sp_tracked[i])) && sp_managed(sp_tracked[i]))
			sigaddset(&m, sp_tracked[i]);
	sp_exec_blocked = 0;
	sp_sigmask_own(SIG_UNBLOCK, &m, NULL);
}

/* ---- waits for signals ------------------------------------------------- */

static __typeof__(&sigtimedwait) sp_real_sigtimedwait;
static __typeof__(&signalfd) sp_real_signalfd;
static __typeof__(&ppoll) sp_real_ppoll;
static __typeof__(&pselect) sp_real_pselect;
static __typeof__(&epoll_pwait) sp_real_epoll_pwait;
static __typeof__(&epoll_pwait2) sp_real_epoll_pwait2;
static __typeof__(&sigsuspend) sp_real_sigsuspend;

/* Before any other constructor of this library: these may be called from
 * a program's signal handler, where dlsym is no place to be. */
__attribute__((constructor(101))) static void sp_sigmask_resolve(void)
{
	sp_real_sigtimedwait = SP_REAL(sigtimedwait);
	sp_real_signalfd = SP_REAL(signalfd);
	sp_real_ppoll = SP_REAL(ppoll);
	sp_real_pselect = SP_REAL(pselect);
	sp_real_epoll_pwait = SP_REAL(epoll_pwait);
	sp_real_epoll_pwait2 = SP_REAL(epoll_pwait2);
	sp_real_sigsuspend = SP_REAL(sigsuspend);
}

#define SP_REAL_ONCE(name) (sp_real_##name ? sp_real_##name : (sp_real_##name = SP_REAL(name)))

static uint64_t sp_ts_ns(const struct timespec *ts)
{
	return (uint64_t)ts->tv_sec * 1000000000u + (uint64_t)ts->tv_nsec;
}

/* Whether a wait may have the timer's signal s blocked while it waits: a
 * sample pending as it ends is taken after it. Not when the program
 * handles s itself (it may wait for it), nor when one of its own waits. */
static bool sp_wait_blocks(int s)
{
	return sp_managed(s) && !(sp_held & sp_bit(s)) &&
	       !(s == SIGTRAP && sp_share_handled(SIGTRAP));
}

/* A wait for signals that are not the timer's: the timer's blocked
 * meanwhile, so that a sample does not end it with EINTR. */
static int sp_wait_other(const sigset_t *set, siginfo_t *info, const struct timespec *tmo)
{
	__typeof__(&sigtimedwait) real = SP_REAL_ONCE(sigtimedwait);
	sigset_t ours;
	sigemptyset(&ours);
	for (int i = 0; i < SP_N_TRACKED; i++)
		if (sp_wait_blocks(sp_tracked[i]))
			sigaddset(&ours, sp_tracked[i]);
	if (sp_bits_of(&ours) == 0)
		return real(set, info, tmo);
	sigset_t old;
	sp_sigmask_own(SIG_BLOCK, &ours, &old);
	int sig = real(set, info, tmo);
	int e = errno;
	sp_sigmask_own(SIG_SETMASK, &old, NULL);
	errno = e;
	return sig;
}

/* Whether a wait for set leaves no signal open that could run a handler
 * (glibc's own two aside): every signal blocked, every one waited for. */
static bool sp_wait_all(const sigset_t *set)
{
	sigset_t r;
	sp_real_mask(&r);
	for (int n = 1; n < NSIG; n++)
		if (n != SIGKILL && n != SIGSTOP && n != SP_SIGCANCEL && n != SP_SIGSETXID &&
		    sigismember(set, n) != 1 && sigismember(&r, n) != 1)
			return false;
	return true;
}

/*
 * sigtimedwait that never returns a signal of the timer's: one that is
 * taken (its signal blocked for real meanwhile, or in the wait's set while
 * it came) is dropped, and the wait goes on for the time left.
 */
static int sp_wait(const sigset_t *set, siginfo_t *info, const struct timespec *tmo)
{
	__typeof__(&sigtimedwait) real = SP_REAL_ONCE(sigtimedwait);
	if (sigismember(set, SIGTRAP) != 1 && sigismember(set, SIGPROF) != 1)
		return sp_wait_other(set, info, tmo);
	uint64_t end = tmo ? sp_now_ns() + sp_ts_ns(tmo) : 0;
	struct timespec left;
	if (tmo)
		left = *tmo;
	bool no_handler = sp_wait_all(set);
	for (;;) {
		siginfo_t si;
		int sig = real(set, &si, tmo ? &left : NULL);
		if (sig > 0 && (sp_held & sp_bit(sig))) {
			/* the instance pending for the program's own carries it */
			si = sp_held_info[sp_idx(sig)];
			sp_held &= ~sp_bit(sig);
			if (si.si_code == SI_TKILL)
				si.si_code = SI_USER; /* as glibc's sigtimedwait folds it */
		}
		const struct sp_source *src =
		    sig > 0 && sp_bit(sig) ? sp_source_sent(sp_self, sig, &si) : NULL;
		bool again = src != NULL;
		sp_source_taken(src, sp_self);
		/* woken for a process-directed sample (itimer-prof) that another
		 * thread took first: EINTR, though no handler can have run */
		again |= sig < 0 && errno == EINTR && no_handler;
		if (again) {
			if (tmo) {
				uint64_t now = sp_now_ns();
				if (now >= end) {
					errno = EAGAIN;
					return -1;
				}
				left.tv_sec = (time_t)((end - now) / 1000000000u);
				left.tv_nsec = (long)((end - now) % 1000000000u);
			}
			continue;
		}
		if (sig > 0) {
			if (info)
				*info = si;
			int e = errno;
			sp_release();
			errno = e;
		}
		return sig;
	}
}

SP_EXPORT int sigtimedwait(const sigset_t *set, siginfo_t *info, const struct timespec *tmo)
{
	return sp_wait(set, info, tmo);
}

SP_EXPORT int sigwaitinfo(const sigset_t *set, siginfo_t *info)
{
	return sp_wait(set, info, NULL);
}

SP_EXPORT int sigwait(const sigset_t *set, int *sig)
{
	int s;
	do
		s = sp_wait(set, NULL, NULL);
	while (s < 0 && errno == EINTR);
	if (s < 0)
		return errno;
	*sig = s;
	return 0;
}

/* A signalfd never holds the timer's signal: with it, reading would take
 * the signals that did not find the thread open (or another thread's). */
SP_EXPORT int signalfd(int fd, const sigset_t *mask, int flags)
{
	__typeof__(&signalfd) real = SP_REAL_ONCE(signalfd);
	sigset_t m = *mask; /* NULL faults in libc too */
	for (int i = 0; i < SP_N_TRACKED; i++)
		if (sp_managed(sp_tracked[i]))
			sigdelset(&m, sp_tracked[i]);
	return real(fd, &m, flags);
}

/*
 * A wait with a mask of its own: while it waits, the program's view is
 * that mask, and the timer's signal is blocked (a sample pending as the
 * wait ends is taken after it), unless the program handles that signal
 * itself and may be waiting for it, or one of its own waits for it.
 */
struct sp_waitmask {
	unsigned view;
	sigset_t m;
};

static const sigset_t *sp_wait_enter(struct sp_waitmask *w, const sigset_t *mask)
{
	w->view = sp_view;
	if (!mask)
		return NULL;
	w->m = *mask;
	for (int i = 0; i < SP_N_TRACKED; i++)
		if (sp_wait_blocks(sp_tracked[i]))
			sigaddset(&w->m, sp_tracked[i]);
	sp_view = sp_bits_of(mask);
	return &w->m;
}

static void sp_wait_leave(struct sp_waitmask *w)
{
	int e = errno;
	sp_view = w->view;
	sp_release();
	errno = e;
}

SP_EXPORT int ppoll(struct pollfd *fds, nfds_t n, const struct timespec *tmo, const sigset_t *mask)
{
	__typeof__(&ppoll) real = SP_REAL_ONCE(ppoll);
	struct sp_waitmask w;
	int rc = real(fds, n, tmo, sp_wait_enter(&w, mask));
	sp_wait_leave(&w);
	return rc;
}

SP_EXPORT int pselect(int n, fd_set *r, fd_set *wr, fd_set *ex, const struct timespec *tmo,
		      const sigset_t *mask)
{
	__typeof__(&pselect) real = SP_REAL_ONCE(pselect);
	struct sp_waitmask w;
	int rc = real(n, r, wr, ex, tmo, sp_wait_enter(&w, mask));
	sp_wait_leave(&w);
	return rc;
}

SP_EXPORT int epoll_pwait(int epfd, struct epoll_event *ev, int max, int tmo, const sigset_t *mask)
{
	__typeof__(&epoll_pwait) real = SP_REAL_ONCE(epoll_pwait);
	struct sp_waitmask w;
	int rc = real(epfd, ev, max, tmo, sp_wait_enter(&w, mask));
	sp_wait_leave(&w);
	return rc;
}

SP_EXPORT int epoll_pwait2(int epfd, struct epoll_event *ev, int max, const struct timespec *tmo,
			   const sigset_t *mask)
{
	__typeof__(&epoll_pwait2) real = SP_REAL_ONCE(epoll_pwait2);
	struct sp_waitmask w;
	int rc = real(epfd, ev, max, tmo, sp_wait_enter(&w, mask));
	sp_wait_leave(&w);
	return rc;
}

SP_EXPORT int sigsuspend(const sigset_t *mask)
{
	__typeof__(&sigsuspend) real = SP_REAL_ONCE(sigsuspend);
	struct sp_waitmask w;
	int rc = real(sp_wait_enter(&w, mask));
	sp_wait_leave(&w);
	return rc;
}
