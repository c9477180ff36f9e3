/*
 * probe_stderr.c - programs that give fd 2 another meaning, or leave a
 * profiler few descriptors, as issue 30 (points 1 and 15) found. Each prints
 * what it saw on stdout and writes a data file whose bytes are all its own:
 * run alone and profiled, both must be the same.
 *
 * usage: probe_stderr MODE FILE
 *   close FILE   closes stderr, opens FILE (which gets fd 2, as the kernel
 *                gives the lowest free number), takes SIGPROF with a handler
 *                of its own, forks a child that works, works, gives SIGPROF
 *                back and writes its last line: FILE must hold only those
 *                lines (a profiler that logs to "fd 2" writes into it)
 *   dup2 FILE    the same, but FILE is dup2'ed over a stderr that was open
 *                (a program's own log, on purpose)
 *   keep FILE    stderr untouched, FILE at another number: the same work
 *   nofile FILE  lowers RLIMIT_NOFILE to 16, forks a child that works and
 *                exits, works; writes FILE
 *
 * Work is CPU time (CLOCK_THREAD_CPUTIME_ID), so a profiler has something
 * to sample all along.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t prof_seen;
static volatile unsigned long sink;

static void on_prof(int sig)
{
	(void)sig;
	prof_seen++;
}

static double cpu_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

__attribute__((noinline)) void probe_work(double seconds)
{
	double end = cpu_s() + seconds;
	while (cpu_s() < end)
		for (int i = 0; i < 10000; i++)
			sink += (unsigned long)i * 2654435761u;
}

static int put(int fd, const char *s)
{
	size_t n = strlen(s);
	return write(fd, s, n) == (ssize_t)n ? 0 : -1;
}

/* Forks a child that works for a moment and exits normally (destructors
 * run: a profiler finishes its child's profile and may log). */
static int work_with_child(void)
{
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		probe_work(0.2);
		exit(0);
	}
	probe_work(0.3);
	int st;
	if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
		return -1;
	return 0;
}

static int take_prof(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_prof;
	sigemptyset(&sa.sa_mask);
	return sigaction(SIGPROF, &sa, NULL);
}

static int give_prof_back(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = SIG_DFL;
	sigemptyset(&sa.sa_mask);
	return sigaction(SIGPROF, &sa, NULL);
}

static int data_mode(const char *mode, const char *file)
{
	int fd;
	if (!strcmp(mode, "close")) {
		close(2);
		fd = open(file, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (fd != 2) {
			printf("probe: %s opened as fd %d, not 2\n", file, fd);
			return 1;
		}
	} else if (!strcmp(mode, "dup2")) {
		int tmp = open(file, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (tmp < 0 || dup2(tmp, 2) != 2) {
			printf("probe: cannot dup2 %s over fd 2\n", file);
			return 1;
		}
		close(tmp);
		fd = 2;
	} else {
		fd = open(file, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (fd < 0) {
			printf("probe: cannot open %s\n", file);
			return 1;
		}
	}
	int bad = put(fd, "probe data: first line\n");
	bad |= take_prof();
	bad |= put(fd, "probe data: SIGPROF is ours\n");
	bad |= work_with_child();
	bad |= give_prof_back();
	probe_work(0.1);
	bad |= put(fd, "probe data: last line\n");
	printf("probe %s: %s\n", mode, bad ? "FAILED" : "ok");
	return bad ? 1 : 0;
}

static int nofile_mode(const char *file)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
		return 1;
	rl.rlim_cur = 16;
	if (setrlimit(RLIMIT_NOFILE, &rl) < 0) {
		printf("probe nofile: cannot lower RLIMIT_NOFILE\n");
		return 1;
	}
	int bad = work_with_child();
	int fd = open(file, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	bad |= fd < 0 || put(fd, "probe data: under RLIMIT_NOFILE 16\n");
	if (fd >= 0)
		close(fd);
	printf("probe nofile: %s\n", bad ? "FAILED" : "ok");
	return bad ? 1 : 0;
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: probe_stderr close|dup2|keep|nofile FILE\n");
		return 2;
	}
	if (!strcmp(argv[1], "nofile"))
		return nofile_mode(argv[2]);
	if (!strcmp(argv[1], "close") || !strcmp(argv[1], "dup2") || !strcmp(argv[1], "keep"))
		return data_mode(argv[1], argv[2]);
	fprintf(stderr, "probe_stderr: unknown mode %s\n", argv[1]);
	return 2;
}
