/*
 * interpose.c - the libc functions this library replaces around the
 * program's life: the exec family, dlclose, the calls that want the
 * program's threads only (uid/gid changes, unshare, setns), and fopen of
 * the files that count them (/proc/self/stat and status). The signal
 * interposers are in signals.c, pthread_create in thread.c,
 * dl_iterate_phdr in modules.c (interpose.h).
 */
#include "sampler/life/interpose.h"
#include "sampler/base/real.h"
#include "sampler/capture/modules.h"
#include "sampler/base/procstat.h"
#include "sampler/core/sampler.h"
#include "sampler/life/signals.h"
#include "sampler/capture/sigmask.h"
#include "sampler/capture/sigshare.h"
#include "sampler/base/sys.h"
#include "sampler/life/thread.h"
#include "sampler/core/source.h"
#include "sampler/writer/writer.h"

#include <dlfcn.h>
#include <errno.h>
#include <time.h>
#include <grp.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

extern char **environ;

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
	sp_mask_before_exec(); /* in a vfork child too: the mask is its own */
	if (!sp_exec_hooks())
		return;
	sp_sources_pause();
	sigset_t set, old;
	sp_sources_sigset(&set);
	pthread_sigmask(SIG_BLOCK, &set, &old);
	struct timespec zero = {0, 0};
	siginfo_t si;
	bool theirs = false;
	int signo;
	while ((signo = sigtimedwait(&set, &si, &zero)) > 0)
		theirs |= signo == SIGTRAP && !sp_trap_is_ours(&si);
	if (theirs)
		syscall(SYS_tgkill, getpid(), sp_gettid(), SIGTRAP);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	sp_share_before_exec();
	sp_writer_exec_flush();
}

static void sp_after_failed_exec(void)
{
	sp_mask_after_failed_exec();
	if (!sp_exec_hooks())
		return;
	sp_share_after_failed_exec();
	if (!atomic_load(&sp_g.stopping) && atomic_load(&sp_g.sampling) && !sp_stepped_aside())
		sp_sources_resume();
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
	/* stackprof's own CPU here, around the program's (its destructors) */
	uint64_t c0 = sp_thread_cpu_ns(), h0 = sp_self_handler_ns();
	/* named even if it lived less than one of the writer's pauses */
	sp_writer_record_modules();
	atomic_fetch_add(&sp_g.modules_changing, 1);
	/* never hang the program: after a second the close goes ahead */
	sp_modules_quiesce();
	uint64_t own = sp_own_cpu_since(c0, h0);
	int rc = SP_REAL(dlclose)(handle);
	int e = errno;
	c0 = sp_thread_cpu_ns();
	h0 = sp_self_handler_ns();
	sp_modules_refresh();
	atomic_fetch_sub(&sp_g.modules_changing, 1);
	atomic_fetch_add(&sp_g.aside_ns, own + sp_own_cpu_since(c0, h0));
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
	if (atomic_load(&sp_g.stopping)) {
		/* exit began meanwhile: its flush joins the writer, not us */
		pthread_mutex_unlock(&sp_park_lock);
		return false;
	}
	atomic_store(&sp_park_owner, me);
	if (sp_parked++ == 0) {
		sp_sources_park();
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
		sp_sources_unpark();
	}
	atomic_store(&sp_park_owner, 0);
	pthread_mutex_unlock(&sp_park_lock);
}

void sp_park_stop(void)
{
	/* a signal handler that ends the process on a thread inside the
	 * parking itself must not wait for its own lock */
	bool locked = false;
	if (atomic_load(&sp_park_owner) != sp_gettid()) {
		/* a parking takes microseconds: a second without the lock means
		 * its owner is stopped inside it, and exit goes ahead */
		struct timespec ms = {.tv_nsec = 1000000};
		for (int i = 0; i < 1000; i++) {
			if ((locked = pthread_mutex_trylock(&sp_park_lock) == 0))
				break;
			nanosleep(&ms, NULL);
		}
	}
	atomic_store(&sp_g.stopping, true);
	if (locked)
		pthread_mutex_unlock(&sp_park_lock);
}

void sp_park_atfork(int phase)
{
	if (phase == 0) {
		pthread_mutex_lock(&sp_park_lock);
	} else if (phase == 1) {
		pthread_mutex_unlock(&sp_park_lock);
	} else {
		pthread_mutex_init(&sp_park_lock, NULL);
		sp_parked = 0; /* the child starts threads of its own */
	}
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

/*
 * A program that reads its own thread count from /proc/self/stat or
 * /proc/self/status with fopen (CPython 3.12+ after os.fork(): procstat.h)
 * reads it without stackprof's threads. The file is read through, fixed,
 * and handed over as a memfd at the descriptor number the real file had;
 * anything unexpected hands over the real file instead.
 */
typedef FILE *sp_fopen_fn(const char *, const char *);
static _Atomic(sp_fopen_fn *) sp_real_fopen, sp_real_fopen64;

static FILE *sp_fopen_own(sp_fopen_fn *real, const char *path, const char *mode)
{
	int ours = atomic_load(&sp_g.own_threads);
	enum sp_procfile kind = SP_PROC_OTHER;
	if (ours > 0 && path && mode && !strpbrk(mode, "wa+"))
		kind = sp_procfile_of(path, getpid());
	FILE *f = real(path, mode);
	if (!f || kind == SP_PROC_OTHER)
		return f;
	int e = errno;
	char buf[8192];
	size_t len = fread(buf, 1, sizeof(buf) - 64, f);
	size_t fixed =
	    feof(f) && !ferror(f) ? sp_procstat_fix(buf, len, sizeof(buf), kind, ours) : 0;
	if (!fixed) {
		rewind(f);
		errno = e;
		return f;
	}
	fclose(f);
	int fd = memfd_create("stat", strchr(mode, 'e') ? MFD_CLOEXEC : 0);
	if (fd < 0)
		return real(path, mode);
	FILE *m = NULL;
	if (write(fd, buf, fixed) == (ssize_t)fixed && lseek(fd, 0, SEEK_SET) == 0)
		m = fdopen(fd, mode);
	if (!m) {
		close(fd);
		return real(path, mode);
	}
	errno = e;
	return m;
}

/* fopen is called often: the real one is looked up once */
static sp_fopen_fn *sp_fopen_real(_Atomic(sp_fopen_fn *) *cache, const char *name)
{
	sp_fopen_fn *fn = atomic_load_explicit(cache, memory_order_relaxed);
	if (!fn) {
		fn = (sp_fopen_fn *)sp_real_sym(name);
		atomic_store_explicit(cache, fn, memory_order_relaxed);
	}
	return fn;
}

SP_EXPORT FILE *fopen(const char *path, const char *mode)
{
	return sp_fopen_own(sp_fopen_real(&sp_real_fopen, "fopen"), path, mode);
}

SP_EXPORT FILE *fopen64(const char *path, const char *mode)
{
	return sp_fopen_own(sp_fopen_real(&sp_real_fopen64, "fopen64"), path, mode);
}
