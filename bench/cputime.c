/*
 * cputime.c - runs a command and writes what the whole process cost: the
 * user and system CPU time of the child and everything it waited for, from
 * wait4()'s rusage (microseconds, where bash's `times` gives milliseconds
 * and /usr/bin/time hundredths), and the wall time. Used by
 * bench/overhead.sh --process.
 *
 *   cputime FILE CMD [ARGS...]
 *
 * FILE gets one line: "cpu_s user_s sys_s wall_s status" (status as
 * wait4 gives it). CMD's stdin, stdout and stderr are left alone; cputime
 * exits with CMD's exit code, or 128 + the signal that ended it.
 *
 * Build: cc -O2 -o cputime cputime.c
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double cputime_tv(struct timeval tv)
{
	return (double)tv.tv_sec + (double)tv.tv_usec / 1e6;
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: cputime FILE CMD [ARGS...]\n");
		return 2;
	}
	FILE *out = fopen(argv[1], "w");
	if (!out) {
		perror(argv[1]);
		return 2;
	}
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	pid_t pid = fork();
	if (pid < 0) {
		perror("fork");
		return 2;
	}
	if (pid == 0) {
		fclose(out);
		execvp(argv[2], argv + 2);
		perror(argv[2]);
		_exit(127);
	}
	int status;
	struct rusage ru;
	if (wait4(pid, &status, 0, &ru) < 0) {
		perror("wait4");
		return 2;
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	double user = cputime_tv(ru.ru_utime), sys = cputime_tv(ru.ru_stime);
	double wall = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	fprintf(out, "%.6f %.6f %.6f %.6f %d\n", user + sys, user, sys, wall, status);
	if (fclose(out) != 0) {
		perror(argv[1]);
		return 2;
	}
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return WEXITSTATUS(status);
}
