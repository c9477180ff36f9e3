/*
 * interpose.c - the libc functions this library replaces: dlclose, the exec
 * family, sigaction/signal for SIGPROF, the calls that want the program's
 * threads only (uid/gid changes, unshare, setns), and the fork hooks.
 * pthread_create is in thread.c, dl_iterate_phdr in modules.c.
 *
 * dlopen is deliberately NOT interposed: glibc resolves a bare library name
 * against the RUNPATH of dlopen's caller, found from its return address, and
 * a wrapper would make that caller us. New modules are picked up instead by
 * the writer, which polls glibc's load counter every drain (20 ms).
 */
#include "handler.h"
#include "modules.h"
#include "sampler.h"
#include "ticker.h"
#include "timer.h"

#include <dlfcn.h>
#include <errno.h>
#include <grp.h>
#include <sched.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

extern char **environ;

void *sp_real_sym(const char *name)
{
	return dlsym(RTLD_NEXT, name);
}

void *sp_real_dlopen(const char *file, int mode)
{
	return SP_REAL(dlopen)(file, mode);
}

/* ---- timers across exec ------------------------------------------------- */

void sp_timers_pause_all(void)
{
	uint32_t n = atomic_load(&sp_g.n_slots);
	for (uint32_t i = 0; i < n; i++) {
		struct sp_thread *t = &sp_g.threads[i];
		if (atomic_load(&t->state) == SP_SLOT_LIVE)
			sp_g.timer->pause(t);
	}
	if (!sp_g.timer->per_thread)
		sp_timer_stop_itimer();
}

void sp_timers_resume_all(void)
{
	uint32_t n = atomic_load(&sp_g.n_slots);
	for (uint32_t i = 0; i < n; i++) {
		struct sp_thread *t = &sp_g.threads[i];
		if (atomic_load(&t->state) == SP_SLOT_LIVE)
			sp_g.timer->resume(t, sp_g.period_ns);
	}
	if (!sp_g.timer->per_thread)
		sp_timer_start_itimer(sp_g.period_ns);
}

/*
 * Before exec: stop the timers, take any pending sample signal (the new
 * image starts with SIGPROF at its default action, which kills; a SIGTRAP
 * that is the program's own is sent again), and flush so the profile reads
 * as complete.
 */
static bool sp_exec_hooks(void)
{
	/* a vfork/posix_spawn child shares our memory but is another process:
	 * it must not touch the parent's timers or writer */
	return atomic_load(&sp_g.enabled) && getpid() == sp_g.pid;
}

static void sp_before_exec(void)
{
	if (!sp_exec_hooks())
		return;
	sp_timers_pause_all();
	int signo = sp_g.timer->signo;
	sigset_t set, old;
	sigemptyset(&set);
	sigaddset(&set, signo);
	pthread_sigmask(SIG_BLOCK, &set, &old);
	struct timespec zero = {0, 0};
	siginfo_t si;
	bool theirs = false;
	while (sigtimedwait(&set, &si, &zero) == signo)
		theirs |= signo == SIGTRAP && !sp_trap_is_ours(&si);
	if (theirs)
		syscall(SYS_tgkill, getpid(), sp_gettid(), SIGTRAP);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (signo == SIGTRAP)
		sp_trap_before_exec();
	sp_writer_exec_flush();
}

static void sp_after_failed_exec(void)
{
	if (!sp_exec_hooks())
		return;
	sp_trap_after_failed_exec();
	if (!atomic_load(&sp_g.stopping) && atomic_load(&sp_g.sampling) && !sp_stepped_aside())
		sp_timers_resume_all();
}

SP_EXPORT int execve(const char *path, char *const argv[], char *const envp[])
{
	sp_before_exec();
	int rc = SP_REAL(execve)(path, argv, envp);
	int e = errno;
	sp_after_failed_exec();
	errno = e;
	return rc;
}

SP_EXPORT int execv(const char *path, char *const argv[])
{
	sp_before_exec();
	int rc = SP_REAL(execv)(path, argv);
	int e = errno;
	sp_after_failed_exec();
	errno = e;
	return rc;
}

SP_EXPORT int execvp(const char *file, char *const argv[])
{
	sp_before_exec();
	int rc = SP_REAL(execvp)(file, argv);
	int e = errno;
	sp_after_failed_exec();
	errno = e;
	return rc;
}

SP_EXPORT int execvpe(const char *file, char *const argv[], char *const envp[])
{
	sp_before_exec();
	int rc = SP_REAL(execvpe)(file, argv, envp);
	int e = errno;
	sp_after_failed_exec();
	errno = e;
	return rc;
}

SP_EXPORT int fexecve(int fd, char *const argv[], char *const envp[])
{
	sp_before_exec();
	int rc = SP_REAL(fexecve)(fd, argv, envp);
	int e = errno;
	sp_after_failed_exec();
	errno = e;
	return rc;
}

/* execl* collect their arguments into a vector, as glibc does. */
static char **sp_collect_args(const char *arg0, va_list ap, char ***envp)
{
	size_t n = 1, cap = 16;
	char **argv = malloc(cap * sizeof(char *));
	if (!argv)
		return NULL;
	argv[0] = (char *)arg0;
	for (;;) {
		char *a = arg0 ? va_arg(ap, char *) : NULL;
		if (n + 1 >= cap) {
			char **b = realloc(argv, (cap *= 2) * sizeof(char *));
			if (!b) {
				free(argv);
				return NULL;
			}
			argv = b;
		}
		argv[n++] = a;
		if (!a)
			break;
	}
	if (envp)
		*envp = va_arg(ap, char **);
	return argv;
}

SP_EXPORT int execl(const char *path, const char *arg, ...)
{
	va_list ap;
	va_start(ap, arg);
	char **argv = sp_collect_args(arg, ap, NULL);
	va_end(ap);
	if (!argv) {
		errno = ENOMEM;
		return -1;
	}
	int rc = execve(path, argv, environ);
	free(argv);
	return rc;
}

SP_EXPORT int execle(const char *path, const char *arg, ...)
{
	char **envp = NULL;
	va_list ap;
	va_start(ap, arg);
	char **argv = sp_collect_args(arg, ap, &envp);
	va_end(ap);
	if (!argv) {
		errno = ENOMEM;
		return -1;
	}
	int rc = execve(path, argv, envp);
	free(argv);
	return rc;
}

SP_EXPORT int execlp(const char *file, const char *arg, ...)
{
	va_list ap;
	va_start(ap, arg);
	char **argv = sp_collect_args(arg, ap, NULL);
	va_end(ap);
	if (!argv) {
		errno = ENOMEM;
		return -1;
	}
	int rc = execvp(file, argv);
	free(argv);
	return rc;
}

/* ---- dlclose -------------------------------------------------------------- */

/*
 * A module may be unmapped by dlclose while a handler on another thread is
 * reading its unwind tables. So: raise modules_changing (new handlers skip
 * their sample and count it), wait until no handler is in flight, close,
 * rebuild the snapshot, lower the flag.
 */
SP_EXPORT int dlclose(void *handle)
{
	if (!atomic_load(&sp_g.enabled))
		return SP_REAL(dlclose)(handle);
	atomic_fetch_add(&sp_g.modules_changing, 1);
	for (int i = 0; atomic_load(&sp_g.inflight) != 0; i++) {
		if (i > 100)
			sched_yield();
		if (i > 100000)
			break; /* a handler can't take 100k yields; don't hang the target */
	}
	int rc = SP_REAL(dlclose)(handle);
	int e = errno;
	sp_modules_refresh();
	atomic_fetch_sub(&sp_g.modules_changing, 1);
	errno = e;
	return rc;
}

/* ---- calls that want the program's threads only ------------------------- */

/*
 * glibc applies a uid, gid or groups change to every thread (its setxid
 * broadcast) and aborts the process if one thread's change fails. A program
 * that raised capabilities on its own thread only (setpriv: capset, then
 * setresgid) would die of our writer thread, which has none. And the kernel
 * refuses unshare(CLONE_NEWUSER), or setns into a user or mount namespace,
 * to a process with other threads. So around these calls stackprof's own
 * threads are joined and started again afterwards, and the program makes
 * them as it would without stackprof. Calls from several threads at once
 * share one parking; a signal handler that makes one inside our own
 * parking on the same thread passes straight through.
 */
static pthread_mutex_t sp_park_lock = PTHREAD_MUTEX_INITIALIZER;
static int sp_parked;
static _Atomic pid_t sp_park_owner;

static bool sp_park(void)
{
	/* not set up, shutting down (exit stops the threads itself), or a
	 * vfork child, which must not touch our threads */
	if (!atomic_load(&sp_g.enabled) || atomic_load(&sp_g.stopping) || getpid() != sp_g.pid)
		return false;
	pid_t me = sp_gettid();
	if (pthread_mutex_trylock(&sp_park_lock) != 0) {
		if (atomic_load(&sp_park_owner) == me)
			return false;
		pthread_mutex_lock(&sp_park_lock);
	}
	atomic_store(&sp_park_owner, me);
	if (sp_parked++ == 0) {
		if (sp_g.timer->stop)
			sp_g.timer->stop();
		sp_writer_park();
	}
	atomic_store(&sp_park_owner, 0);
	pthread_mutex_unlock(&sp_park_lock);
	return true;
}

static void sp_unpark(void)
{
	pthread_mutex_lock(&sp_park_lock);
	atomic_store(&sp_park_owner, sp_gettid());
	if (--sp_parked == 0 && !atomic_load(&sp_g.stopping)) {
		sp_writer_unpark();
		if (sp_g.timer->start)
			sp_g.timer->start(sp_g.period_ns);
	}
	atomic_store(&sp_park_owner, 0);
	pthread_mutex_unlock(&sp_park_lock);
}

#define SP_PARKED_CALL(name, params, args)                                                         \
	SP_EXPORT int name params                                                                  \
	{                                                                                          \
		bool parked = sp_park();                                                           \
		int rc = SP_REAL(name) args;                                                       \
		int saved_errno = errno;                                                           \
		if (parked)                                                                        \
			sp_unpark();                                                               \
		errno = saved_errno;                                                               \
		return rc;                                                                         \
	}

SP_PARKED_CALL(setuid, (uid_t uid), (uid))
SP_PARKED_CALL(setgid, (gid_t gid), (gid))
SP_PARKED_CALL(seteuid, (uid_t uid), (uid))
SP_PARKED_CALL(setegid, (gid_t gid), (gid))
SP_PARKED_CALL(setreuid, (uid_t r, uid_t e), (r, e))
SP_PARKED_CALL(setregid, (gid_t r, gid_t e), (r, e))
SP_PARKED_CALL(setresuid, (uid_t r, uid_t e, uid_t s), (r, e, s))
SP_PARKED_CALL(setresgid, (gid_t r, gid_t e, gid_t s), (r, e, s))
SP_PARKED_CALL(setgroups, (size_t n, const gid_t *groups), (n, groups))
SP_PARKED_CALL(unshare, (int flags), (flags))
SP_PARKED_CALL(setns, (int fd, int nstype), (fd, nstype))

/* ---- the target's own SIGPROF ------------------------------------------- */

static _Atomic bool sp_stepped_aside_flag;

bool sp_stepped_aside(void)
{
	return atomic_load(&sp_stepped_aside_flag);
}

/* The target installs its own SIGPROF handler: stop sampling, let it have the signal. */
static void sp_step_aside(void)
{
	if (atomic_exchange(&sp_stepped_aside_flag, true) || !atomic_load(&sp_g.enabled))
		return;
	atomic_store(&sp_g.sampling, false);
	sp_timers_pause_all();
	sp_log("the program installs its own SIGPROF handler; stackprof steps aside and "
	       "stops sampling (the profile keeps what came before)");
	sp_writer_flush_now();
}

static bool sp_is_ours(const struct sigaction *act)
{
	return (act->sa_flags & SA_SIGINFO) && act->sa_sigaction == sp_handler;
}

/* SIGPROF is ours only while a SIGPROF timer runs; SIGTRAP is shared (sigtrap.c). */
static bool sp_prof_is_ours(void)
{
	return atomic_load(&sp_g.enabled) && sp_g.timer && sp_g.timer->signo == SIGPROF;
}

SP_EXPORT int sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
	if (sig == SIGTRAP && sp_trap_shared())
		return sp_trap_sigaction(act, old);
	if (sig == SIGPROF && act && sp_prof_is_ours() && !sp_is_ours(act))
		sp_step_aside();
	return SP_REAL(sigaction)(sig, act, old);
}

SP_EXPORT sighandler_t signal(int sig, sighandler_t handler)
{
	if (sig == SIGTRAP && sp_trap_shared()) {
		/* glibc's signal(): BSD semantics */
		struct sigaction sa, old;
		memset(&sa, 0, sizeof(sa));
		sa.sa_handler = handler;
		sa.sa_flags = SA_RESTART;
		sigaddset(&sa.sa_mask, SIGTRAP);
		sp_trap_sigaction(&sa, &old);
		return old.sa_handler;
	}
	if (sig == SIGPROF && sp_prof_is_ours())
		sp_step_aside();
	return SP_REAL(signal)(sig, handler);
}

/*
 * libunwind brackets every table lookup and every internal lock with two
 * sigprocmask() calls: ~6 system calls per frame, 190 us a sample on a
 * 80-frame torch stack. Our handler already runs with every signal blocked
 * (its sa_mask), so inside it those calls change nothing and are answered
 * here without entering the kernel.
 */
SP_EXPORT int sigprocmask(int how, const sigset_t *set, sigset_t *old)
{
	if (sp_in_unwind) {
		if (old)
			sigfillset(old);
		return 0;
	}
	static int (*real)(int, const sigset_t *, sigset_t *);
	if (!real)
		real = SP_REAL(sigprocmask);
	return real(how, set, old);
}

int sp_handler_install(void)
{
	if (sp_g.timer->signo == SIGTRAP)
		return sp_trap_install(sp_handler);
	struct sigaction sa, old;
	memset(&sa, 0, sizeof(sa));
	if (SP_REAL(sigaction)(SIGPROF, NULL, &old) == 0 && old.sa_handler != SIG_DFL &&
	    old.sa_handler != SIG_IGN)
		return -EBUSY;
	sa.sa_sigaction = sp_handler;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	/* every signal waits the few microseconds the handler takes: no other
	 * handler can interrupt us inside libunwind's locks */
	sigfillset(&sa.sa_mask);
	return SP_REAL(sigaction)(SIGPROF, &sa, NULL) < 0 ? -errno : 0;
}

/* ---- fork ------------------------------------------------------------------ */

/*
 * Every lock of ours is taken before fork (in the writer's order: sp_g.lock,
 * modules, ranges, schedule), so that no data they guard is half-written in
 * the child. The child re-initializes them rather than unlocking: a condition
 * variable copied while the parent's writer waited on it still counts that
 * waiter, and a broadcast in the child would wait for it forever.
 */
static void sp_fork_prepare(void)
{
	pthread_mutex_lock(&sp_park_lock);
	pthread_mutex_lock(&sp_g.lock);
	sp_modules_atfork(0);
	sp_api_atfork(0);
	sp_ticker_atfork(0);
}

static void sp_fork_parent(void)
{
	sp_ticker_atfork(1);
	sp_api_atfork(1);
	sp_modules_atfork(1);
	pthread_mutex_unlock(&sp_g.lock);
	pthread_mutex_unlock(&sp_park_lock);
}

/* The child profiles itself into its own file; the parent's threads are gone. */
static void sp_fork_child(void)
{
	sp_ticker_atfork(2);
	sp_api_atfork(2);
	sp_modules_atfork(2);
	pthread_mutex_init(&sp_g.lock, NULL);
	pthread_cond_init(&sp_g.wake, NULL);
	pthread_mutex_init(&sp_park_lock, NULL);
	sp_parked = 0; /* the child starts threads of its own */
	if (!atomic_load(&sp_g.enabled))
		return;
	struct sp_thread *self = sp_self;
	uint32_t n = atomic_load(&sp_g.n_slots);
	for (uint32_t i = 0; i < n; i++) {
		struct sp_thread *t = &sp_g.threads[i];
		if (t == self)
			continue;
		sp_ring_release(&t->ring);
		atomic_store(&t->state, SP_SLOT_FREE);
	}
	atomic_store(&sp_g.inflight, 0);
	sp_writer_forget();
	sp_g.pid = getpid();
	sp_g.start_mono_ns = sp_now_ns();
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	sp_g.start_real_ns = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
	if (self) {
		/* POSIX timers are not inherited, so there is nothing to delete;
		 * a perf fd is, and still counts the parent: close it */
		self->armed = self->perf_fd >= 0;
		sp_g.timer->disarm(self);
		sp_self = NULL;
		sp_ring_release(&self->ring);
		atomic_store(&self->state, SP_SLOT_FREE);
	}
	if (sp_writer_start() < 0) {
		atomic_store(&sp_g.enabled, false);
		return;
	}
	if (sp_g.timer->start)
		sp_g.timer->start(sp_g.period_ns);
	sp_thread_attach();
}

int sp_fork_init(void)
{
	return -pthread_atfork(sp_fork_prepare, sp_fork_parent, sp_fork_child);
}
