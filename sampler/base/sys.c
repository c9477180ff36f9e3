#include "sampler/base/sys.h"
#include "sampler/base/fds.h"
#include "sampler/base/syscall.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

uint64_t sp_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint64_t sp_thread_cpu_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

pid_t sp_gettid(void)
{
	return (pid_t)syscall(SYS_gettid);
}

ssize_t sp_read_small(const char *path, char *buf, size_t size)
{
	buf[0] = '\0';
	struct sp_fd f = {0};
	int fd = sp_fd_open(&f, path, O_RDONLY, 0);
	if (fd < 0)
		return -1;
	ssize_t n = read(fd, buf, size - 1);
	sp_fd_close(&f);
	if (n < 0)
		return -1;
	buf[n] = '\0';
	return n;
}

/*
 * stackprof's own duplicate of the stderr the process started with, at a
 * high number hidden from the program (fds.h). Messages go there, never to
 * whatever fd 2 names later: a program may close stderr and have its data
 * file handed number 2, or dup2 its own log over it. Made before any other
 * constructor of ours can log; close-on-exec, so a new image takes its own;
 * a fork child shares it. Its file's identity is checked before each
 * message: a program that closes by raw system call (unseen by fds.c) and
 * opens a file of its own may have been handed the number.
 */
static struct sp_fd sp_log_fd;
static dev_t sp_log_dev;
static ino_t sp_log_ino;
static bool sp_log_known;

/* Whether fd names the file the process started with as stderr. */
static bool sp_log_is_stderr(int fd)
{
	struct stat st;
	return sp_log_known && fstat(fd, &st) == 0 && st.st_dev == sp_log_dev &&
	       st.st_ino == sp_log_ino;
}

__attribute__((constructor(102))) static void sp_log_open(void)
{
	/* stderr closed at start: stackprof has nowhere to speak, and says nothing */
	struct stat st;
	if (fstat(STDERR_FILENO, &st) < 0 || sp_fds_init() < 0 || !sp_fd_begin())
		return;
	sp_log_dev = st.st_dev;
	sp_log_ino = st.st_ino;
	sp_log_known = true;
	int fd = fcntl(STDERR_FILENO, F_DUPFD_CLOEXEC, 3);
	if (fd >= 0)
		sp_fd_keep(&sp_log_fd, fd); /* none: too few descriptors */
	sp_fd_end();
}

void sp_log_close(void)
{
	sp_fd_close(&sp_log_fd);
	sp_log_known = false;
}

/* The number to write a message to, or -1: stackprof's duplicate (held:
 * *held is set), else fd 2 while it still names the very file the process
 * started with as stderr (the duplicate was given up to a program that
 * took every number), else none. */
static int sp_log_target(bool *held)
{
	int fd = sp_fd_hold(&sp_log_fd);
	if (fd >= 0 && sp_log_is_stderr(fd)) {
		*held = true;
		return fd;
	}
	if (fd >= 0) {
		/* closed behind our back and reused: the program's number now */
		sp_fd_drop(&sp_log_fd);
		sp_fd_abandon(&sp_log_fd);
	}
	*held = false;
	return sp_log_is_stderr(STDERR_FILENO) ? STDERR_FILENO : -1;
}

bool sp_log_quiet;

void sp_log(const char *fmt, ...)
{
	if (sp_log_quiet)
		return;
	int saved = errno;
	char buf[1024];
	int n = snprintf(buf, sizeof(buf), "stackprof[%d]: ", (int)getpid());
	va_list ap;
	va_start(ap, fmt);
	int m = vsnprintf(buf + n, sizeof(buf) - (size_t)n - 1, fmt, ap);
	va_end(ap);
	if (m < 0)
		goto out;
	n += m;
	if (n > (int)sizeof(buf) - 2)
		n = (int)sizeof(buf) - 2;
	buf[n++] = '\n';
	bool held;
	int fd = sp_log_target(&held);
	if (fd < 0)
		goto out; /* stderr is gone, or fd 2 is something else now */
	/* the original stderr may be a pipe whose reader is gone while the
	 * program writes elsewhere: a SIGPIPE of ours must not end it */
	sigset_t pipe_set, old, pending;
	sigemptyset(&pipe_set);
	sigaddset(&pipe_set, SIGPIPE);
	pthread_sigmask(SIG_BLOCK, &pipe_set, &old);
	bool was_pending = sigpending(&pending) == 0 && sigismember(&pending, SIGPIPE);
	ssize_t r = write(fd, buf, (size_t)n);
	if (r < 0 && errno == EPIPE && !was_pending) {
		/* the kernel's call, not sigtimedwait(): that is the program's
		 * (capture/sigmask.c interposes it), and a wait that can't
		 * block needs none of its care for the timer's signal */
		struct timespec zero = {0, 0};
		sp_syscall(SYS_rt_sigtimedwait, &pipe_set, NULL, &zero, _NSIG / 8);
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (held)
		sp_fd_drop(&sp_log_fd);
out:
	errno = saved;
}
