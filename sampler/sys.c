#include "sampler/sys.h"
#include "sampler/fds.h"
#include "sampler/sampler.h"

#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
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

void sp_log(const char *fmt, ...)
{
	if (sp_g.cfg.quiet)
		return;
	char buf[1024];
	int n = snprintf(buf, sizeof(buf), "stackprof[%d]: ", (int)getpid());
	va_list ap;
	va_start(ap, fmt);
	int m = vsnprintf(buf + n, sizeof(buf) - (size_t)n - 1, fmt, ap);
	va_end(ap);
	if (m < 0)
		return;
	n += m;
	if (n > (int)sizeof(buf) - 2)
		n = (int)sizeof(buf) - 2;
	buf[n++] = '\n';
	ssize_t r = write(STDERR_FILENO, buf, (size_t)n);
	(void)r;
}
