/*
 * fds.c - stackprof's descriptors out of the program's way (fds.h), and the
 * program's close, close_range, closefrom, dup2 and dup3.
 */
#include "sampler/base/fds.h"
#include "sampler/base/real.h"
#include "sampler/base/syscall.h"
#include "sampler/base/sys.h"

#include <errno.h>
#include <pthread.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#ifndef CLOSE_RANGE_UNSHARE
#define CLOSE_RANGE_UNSHARE (1U << 1)
#endif

/* A section of ours gives up waiting for the program's calls after this:
 * one of them may be a close() that lingers on a socket. */
#define SP_FD_WAIT_NS 1000000000ull
/* A move waits this long for the holders of the old number (a write to
 * a slow disk) before it leaves the old number open and moves on. */
#define SP_FD_HOLD_WAIT_NS 5000000000ull

static int sp_floor = -1;
/* libunwind's memory-test pipe, and whether this thread is inside libunwind */
static struct sp_fd sp_unw_pipe[2];
static __thread int sp_in_libunwind SP_TLS;
static _Atomic(struct sp_fd *) *sp_reg; /* SP_FD_SPAN entries from sp_floor */
static _Atomic int sp_prog;		/* the program's calls inside their section */
static _Atomic int sp_ours;		/* a section of ours is open */
static pthread_mutex_t sp_sect_lock = PTHREAD_MUTEX_INITIALIZER;
static __thread sigset_t sp_sect_mask SP_TLS;
static __thread int sp_sect_depth SP_TLS; /* sections of ours open on this thread */

int sp_fds_init(void)
{
	if (sp_reg)
		return 0;
	struct rlimit rl;
	rlim_t lim = 1024;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < lim)
		lim = rl.rlim_cur;
	/* 64 numbers under the limit, or the upper half of a very low one */
	sp_floor = lim > 128 ? (int)lim - 64 : (int)lim / 2;
	if (sp_floor < 10)
		return -EMFILE;
	void *p = mmap(NULL, SP_FD_SPAN * sizeof(*sp_reg), PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return -errno;
	sp_reg = p;
	return 0;
}

int sp_fd_floor(void)
{
	return sp_floor;
}

int sp_fd_room(void)
{
	if (!sp_reg)
		return 0;
	struct rlimit rl;
	long lim = getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < (rlim_t)INT32_MAX
		       ? (long)rl.rlim_cur
		       : (long)sp_floor + SP_FD_SPAN;
	long room = lim - sp_floor;
	return room < 0 ? 0 : room > SP_FD_SPAN ? SP_FD_SPAN : (int)room;
}

/* The entry that owns number fd, or NULL. */
static struct sp_fd *sp_owner(int fd)
{
	if (!sp_reg || fd < sp_floor || fd >= sp_floor + SP_FD_SPAN)
		return NULL;
	return atomic_load(&sp_reg[fd - sp_floor]);
}

static void sp_set_owner(int fd, struct sp_fd *f)
{
	atomic_store(&sp_reg[fd - sp_floor], f);
}

static int sp_sys_close(int fd)
{
	return (int)syscall(SYS_close, fd);
}

/* libc's, resolved before any other constructor can run: dlsym on every
 * close() would cost the program a microsecond each, and may allocate */
static int (*sp_real_close)(int);
static int (*sp_real_dup2)(int, int);
static int (*sp_real_dup3)(int, int, int);

__attribute__((constructor(101))) static void sp_fds_resolve(void)
{
	sp_real_close = SP_REAL(close);
	sp_real_dup2 = SP_REAL(dup2);
	sp_real_dup3 = SP_REAL(dup3);
}

/* ---- sections --------------------------------------------------------- */

static void sp_prog_enter(void)
{
	for (;;) {
		atomic_fetch_add(&sp_prog, 1);
		if (!atomic_load(&sp_ours))
			return;
		atomic_fetch_sub(&sp_prog, 1);
		/* ours are a few system calls long, and never wait on the program */
		while (atomic_load(&sp_ours))
			sched_yield();
	}
}

static void sp_prog_leave(void)
{
	atomic_fetch_sub(&sp_prog, 1);
}

bool sp_fd_begin(void)
{
	/* nested (sp_log from inside a section): the outer one holds already */
	if (sp_sect_depth++ > 0)
		return true;
	sigset_t all;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &sp_sect_mask);
	pthread_mutex_lock(&sp_sect_lock);
	atomic_store(&sp_ours, 1);
	uint64_t start = sp_now_ns();
	for (int i = 0; atomic_load(&sp_prog) != 0; i++) {
		if (i > 100)
			sched_yield();
		if ((i & 1023) == 1023 && sp_now_ns() - start > SP_FD_WAIT_NS) {
			sp_fd_end();
			return false;
		}
	}
	return true;
}

void sp_fd_end(void)
{
	if (--sp_sect_depth > 0)
		return;
	atomic_store(&sp_ours, 0);
	pthread_mutex_unlock(&sp_sect_lock);
	pthread_sigmask(SIG_SETMASK, &sp_sect_mask, NULL);
}

/* ---- stackprof's descriptors ------------------------------------------ */

int sp_fd_keep(struct sp_fd *f, int fd)
{
	if (fd < 0)
		return fd;
	if (!sp_reg) {
		sp_sys_close(fd);
		return -ENOSYS;
	}
	int nfd = fcntl(fd, F_DUPFD_CLOEXEC, sp_floor);
	/* EINVAL: the program lowered RLIMIT_NOFILE under floor since */
	int e = errno == EINVAL ? EMFILE : errno;
	sp_sys_close(fd);
	if (nfd < 0)
		return -e;
	if (nfd >= sp_floor + SP_FD_SPAN) {
		sp_sys_close(nfd);
		return -EMFILE;
	}
	sp_set_owner(nfd, f);
	atomic_store(&f->users, 0);
	atomic_store(&f->fd, nfd);
	return nfd;
}

int sp_fd_open(struct sp_fd *f, const char *path, int flags, mode_t mode)
{
	if (!sp_fd_begin())
		return -EAGAIN;
	int fd = (int)syscall(SYS_openat, AT_FDCWD, path, flags | O_CLOEXEC, mode);
	int rc = fd < 0 ? -errno : sp_fd_keep(f, fd);
	/* O_EXCL: the file is ours, made just now; it can't be kept, so it goes */
	if (fd >= 0 && rc < 0 && (flags & (O_CREAT | O_EXCL)) == (O_CREAT | O_EXCL))
		unlink(path);
	sp_fd_end();
	return rc;
}

/* Waits until no one holds the number f had before it was changed. */
static bool sp_wait_holders(struct sp_fd *f)
{
	uint64_t start = sp_now_ns();
	for (int i = 0; atomic_load(&f->users) != 0; i++) {
		if (i > 100)
			sched_yield();
		if ((i & 1023) == 1023 && sp_now_ns() - start > SP_FD_HOLD_WAIT_NS)
			return false;
	}
	return true;
}

/* Inside a section: drops f's number from the registry and closes it. */
static void sp_fd_drop_number(struct sp_fd *f)
{
	int fd = atomic_exchange(&f->fd, -1);
	if (fd < 0 || sp_owner(fd) != f)
		return;
	if (sp_wait_holders(f))
		sp_sys_close(fd);
	/* else a holder is stuck in a system call on it: leaking one
	 * number is better than closing it under that call */
	sp_set_owner(fd, NULL);
}

void sp_fd_close(struct sp_fd *f)
{
	if (!f || atomic_load(&f->fd) <= 0)
		return;
	bool sect = sp_fd_begin();
	/* without the section the number stays registered (and open): the
	 * program can't be handed it by a close of its own meanwhile */
	if (sect) {
		sp_fd_drop_number(f);
		sp_fd_end();
	}
}

void sp_fd_abandon(struct sp_fd *f)
{
	if (!f || atomic_load(&f->fd) <= 0 || !sp_fd_begin())
		return;
	int fd = atomic_exchange(&f->fd, -1);
	if (fd > 0 && sp_owner(fd) == f)
		sp_set_owner(fd, NULL);
	sp_fd_end();
}

void sp_fd_forget(struct sp_fd *f)
{
	/* the child has one thread: no section is needed, and the number is
	 * closed as it is (the open file or event lives on in the parent) */
	int fd = f ? atomic_exchange(&f->fd, -1) : -1;
	if (fd <= 0 || sp_owner(fd) != f)
		return;
	sp_set_owner(fd, NULL);
	sp_sys_close(fd);
}

int sp_fd_hold(struct sp_fd *f)
{
	atomic_fetch_add(&f->users, 1);
	int fd = atomic_load(&f->fd);
	if (fd <= 0) {
		atomic_fetch_sub(&f->users, 1);
		return -1;
	}
	return fd;
}

void sp_fd_drop(struct sp_fd *f)
{
	atomic_fetch_sub(&f->users, 1);
}

/*
 * The program wants number fd, which is stackprof's: give stackprof's
 * descriptor another high number first. Not in a program section.
 */
static void sp_fd_move(int fd)
{
	if (!sp_fd_begin())
		return;
	struct sp_fd *f = sp_owner(fd);
	if (f && atomic_load(&f->fd) == fd) {
		int nfd = fcntl(fd, F_DUPFD_CLOEXEC, sp_floor);
		if (nfd >= sp_floor + SP_FD_SPAN) {
			sp_sys_close(nfd);
			nfd = -1;
		}
		if (nfd >= 0) {
			sp_set_owner(nfd, f);
			atomic_store(&f->fd, nfd);
			/* a holder that read fd before the store still uses it */
			if (sp_wait_holders(f)) {
				sp_set_owner(fd, NULL);
				sp_sys_close(fd);
			}
		} else {
			/* nowhere to move it: stackprof gives the number up */
			sp_fd_drop_number(f);
			sp_log("the program takes descriptor %d and leaves no other free up to "
			       "RLIMIT_NOFILE: stackprof gives its own up",
			       fd);
		}
	}
	sp_fd_end();
}

void sp_fds_atfork(int phase)
{
	if (phase == 0) {
		pthread_mutex_lock(&sp_sect_lock);
	} else if (phase == 1) {
		pthread_mutex_unlock(&sp_sect_lock);
	} else {
		/* the program's calls in flight were other threads' */
		pthread_mutex_init(&sp_sect_lock, NULL);
		atomic_store(&sp_prog, 0);
		atomic_store(&sp_ours, 0);
	}
}

void sp_fd_libunwind(int on)
{
	sp_in_libunwind = on;
}

static bool sp_is_unw_pipe(const struct sp_fd *f)
{
	return f == &sp_unw_pipe[0] || f == &sp_unw_pipe[1];
}

/* ---- the program's calls ---------------------------------------------- */

SP_EXPORT int pipe2(int fds[2], int flags)
{
	if (!sp_in_libunwind)
		return (int)syscall(SYS_pipe2, fds, flags);
	/* libunwind's memory-test pipe: stackprof's, high and registered */
	int p[2], rc = -1;
	if (!sp_fd_begin()) {
		errno = EAGAIN;
		return -1;
	}
	if (syscall(SYS_pipe2, p, flags | O_CLOEXEC) == 0) {
		int a = sp_fd_keep(&sp_unw_pipe[0], p[0]);
		int b = sp_fd_keep(&sp_unw_pipe[1], p[1]);
		if (a >= 0 && b >= 0) {
			fds[0] = a;
			fds[1] = b;
			rc = 0;
		} else {
			sp_fd_drop_number(&sp_unw_pipe[0]);
			sp_fd_drop_number(&sp_unw_pipe[1]);
			errno = EMFILE;
		}
	}
	sp_fd_end();
	return rc;
}

SP_EXPORT int pipe(int fds[2])
{
	return pipe2(fds, 0);
}

SP_EXPORT int close(int fd)
{
	if (sp_in_libunwind) {
		/* libunwind closes only its own pipe; a number it lost is not its */
		struct sp_fd *f = sp_owner(fd);
		if (f && sp_is_unw_pipe(f)) {
			sp_fd_close(f);
			return 0;
		}
		errno = EBADF;
		return -1;
	}
	sp_prog_enter();
	int rc;
	if (sp_owner(fd)) {
		/* not open, as far as the program can know */
		errno = EBADF;
		rc = -1;
	} else {
		rc = sp_real_close ? sp_real_close(fd) : sp_sys_close(fd);
	}
	int e = errno;
	sp_prog_leave();
	errno = e;
	return rc;
}

/* close_range(2) on [lo, hi] minus stackprof's numbers. */
static int sp_close_range(unsigned lo, unsigned hi, unsigned flags)
{
	sp_prog_enter();
	int rc = 0, e = 0;
	unsigned from = lo;
	if (sp_reg && hi >= (unsigned)sp_floor && lo < (unsigned)(sp_floor + SP_FD_SPAN)) {
		unsigned a = lo > (unsigned)sp_floor ? lo : (unsigned)sp_floor;
		unsigned b = hi < (unsigned)(sp_floor + SP_FD_SPAN - 1)
				 ? hi
				 : (unsigned)(sp_floor + SP_FD_SPAN - 1);
		for (unsigned fd = a; fd <= b; fd++) {
			if (!sp_owner((int)fd))
				continue;
			if (fd > from && syscall(SYS_close_range, from, fd - 1, flags) < 0 && !e) {
				rc = -1;
				e = errno;
			}
			/* after an unshare the table is the process's own already */
			flags &= ~CLOSE_RANGE_UNSHARE;
			from = fd + 1;
		}
	}
	if (from <= hi && from >= lo && syscall(SYS_close_range, from, hi, flags) < 0 && !e) {
		rc = -1;
		e = errno;
	}
	sp_prog_leave();
	errno = e;
	return rc;
}

SP_EXPORT int close_range(unsigned int lo, unsigned int hi, int flags)
{
	if (lo > hi) {
		errno = EINVAL;
		return -1;
	}
	return sp_close_range(lo, hi, (unsigned)flags);
}

SP_EXPORT void closefrom(int lo)
{
	if (lo < 0)
		lo = 0;
	int e = errno;
	if (sp_close_range((unsigned)lo, ~0U, 0) < 0 && errno == ENOSYS) {
		/* kernels before 5.9: close what the table can hold */
		struct rlimit rl;
		long max = getrlimit(RLIMIT_NOFILE, &rl) == 0 ? (long)rl.rlim_cur : 1024;
		for (long fd = lo; fd < max; fd++)
			close((int)fd);
	}
	errno = e;
}

/* dup2/dup3 onto new: stackprof's descriptor there moves first (or is
 * given up when there is nowhere to move it), never overwritten. */
static int sp_dup_onto(int old, int new, int flags, bool three)
{
	for (;;) {
		sp_prog_enter();
		if (sp_owner(old)) {
			sp_prog_leave();
			errno = EBADF;
			return -1;
		}
		if (!sp_owner(new)) {
			int rc;
			if (three)
				rc = sp_real_dup3 ? sp_real_dup3(old, new, flags)
						  : (int)syscall(SYS_dup3, old, new, flags);
			else
				rc = sp_real_dup2 ? sp_real_dup2(old, new)
						  : (int)syscall(SYS_dup2, old, new);
			int e = errno;
			sp_prog_leave();
			errno = e;
			return rc;
		}
		sp_prog_leave();
		sp_fd_move(new);
	}
}

SP_EXPORT int dup2(int old, int new)
{
	return sp_dup_onto(old, new, 0, false);
}

SP_EXPORT int dup3(int old, int new, int flags)
{
	return sp_dup_onto(old, new, flags, true);
}
