/*
 * exitcall.c - processes that end with _exit() or _Exit(), which run no
 * destructors, one case per run:
 *
 *   self _exit|_Exit N   work 0.6 s in self_work(), then end with status N
 *   fork _exit|_Exit|exit N
 *                        a forked child works 0.6 s in child_work() and ends
 *                        with status N; the parent checks that status and
 *                        exits with it
 *   sigterm plain|altstack
 *                        a forked child works (malloc and arithmetic) until
 *                        the parent sends it SIGTERM, whose handler calls
 *                        _exit(6); plain: an ordinary handler (SIGTERM
 *                        blocked while it runs); altstack: SA_NODEFER on the
 *                        child's own sigaltstack (nothing blocked). The
 *                        parent checks status 6 and exits with it
 *   smallstack N [exit]  a thread on a 32 KiB stack (256 KiB of PROT_NONE
 *                        under it) works 0.6 s in small_work() and ends
 *                        the process with _exit(N), or exit(N) (which
 *                        runs the destructors on that thread)
 *   vfork N              N vfork children that call _exit(0) (or _Exit(0),
 *                        every other one) at once, then the parent works
 *                        0.6 s in after_vfork(); exits 0 if each ended with 0
 *
 * Work is this thread's CPU time. Each process that works prints
 * "WHO PID CPU_US" (WHO: self, child, parent, after, small) on stdout with write(), which
 * _exit does not lose, so a test can compare its profile with what it
 * measured. Every run is bounded: a child nobody signals ends after 20 s.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "workloads/programs/thread_cpu.h"

static volatile double sink;

/* Burns secs of this thread's CPU; returns how much it burned. */
__attribute__((noinline)) static double spin(double secs)
{
	double start = cpu_seconds(), now = start;
	while (now - start < secs) {
		double x = 0;
		for (long i = 0; i < 20000; i++)
			x += (double)i * 0.5;
		sink += x;
		now = cpu_seconds();
	}
	return now - start;
}

__attribute__((noinline)) double self_work(void)
{
	return spin(0.6);
}

__attribute__((noinline)) double child_work(void)
{
	return spin(0.6);
}

__attribute__((noinline)) double parent_work(void)
{
	return spin(0.2);
}

__attribute__((noinline)) double after_vfork(void)
{
	return spin(0.6);
}

static void report(const char *who, double secs)
{
	char line[96];
	int n = snprintf(line, sizeof(line), "%s %d %.0f\n", who, (int)getpid(), secs * 1e6);
	if (write(STDOUT_FILENO, line, (size_t)n) != n)
		_exit(99);
}

static void end_with(const char *how, int status)
{
	if (!strcmp(how, "_exit"))
		_exit(status);
	if (!strcmp(how, "_Exit"))
		_Exit(status);
	exit(status);
}

/* Waits for pid; its exit status, or -1 if it did not exit. */
static int wait_status(pid_t pid)
{
	int st;
	if (waitpid(pid, &st, 0) < 0 || !WIFEXITED(st))
		return -1;
	return WEXITSTATUS(st);
}

static int mode_fork(const char *how, int status)
{
	report("parent", parent_work());
	pid_t pid = fork();
	if (pid < 0)
		return 1;
	if (pid == 0) {
		report("child", child_work());
		end_with(how, status);
	}
	int got = wait_status(pid);
	if (got != status) {
		fprintf(stderr, "exitcall fork: the child ended with %d, not %d\n", got, status);
		return 1;
	}
	return got;
}

static void on_term(int sig)
{
	_exit(6);
}

/* Malloc-heavy work: SIGTERM often lands inside malloc, holding its lock. */
__attribute__((noinline)) void busy_until_signalled(int ready_fd)
{
	double start = cpu_seconds();
	int told = 0;
	unsigned seed = 1;
	void *keep[64] = {0};
	while (cpu_seconds() - start < 20) {
		for (int i = 0; i < 64; i++) {
			free(keep[i]);
			keep[i] = malloc(16 + rand_r(&seed) % 8192);
		}
		sink += spin(0.001);
		if (!told && cpu_seconds() - start > 0.3) {
			told = write(ready_fd, "r", 1) == 1;
			close(ready_fd);
		}
	}
}

static int mode_sigterm(const char *kind)
{
	int p[2];
	if (pipe(p) < 0)
		return 1;
	pid_t pid = fork();
	if (pid < 0)
		return 1;
	if (pid == 0) {
		close(p[0]);
		struct sigaction sa;
		memset(&sa, 0, sizeof(sa));
		sa.sa_handler = on_term;
		if (!strcmp(kind, "altstack")) {
			static char stack[64 * 1024];
			stack_t ss = {.ss_sp = stack, .ss_size = sizeof(stack)};
			if (sigaltstack(&ss, NULL) < 0)
				_exit(98);
			sa.sa_flags = SA_NODEFER | SA_ONSTACK;
		}
		if (sigaction(SIGTERM, &sa, NULL) < 0)
			_exit(97);
		busy_until_signalled(p[1]);
		_exit(1); /* never signalled */
	}
	close(p[1]);
	char c;
	if (read(p[0], &c, 1) != 1) {
		fprintf(stderr, "exitcall sigterm: the child never got ready\n");
		return 1;
	}
	kill(pid, SIGTERM);
	int got = wait_status(pid);
	if (got != 6) {
		fprintf(stderr, "exitcall sigterm: the child ended with %d, not 6\n", got);
		return 1;
	}
	return got;
}

__attribute__((noinline)) double small_work(void)
{
	return spin(0.6);
}

static bool small_exit;

static void *small_main(void *arg)
{
	report("small", small_work());
	if (small_exit)
		exit(*(int *)arg);
	_exit(*(int *)arg);
}

static int mode_smallstack(int status, bool use_exit)
{
	small_exit = use_exit;
	/* 256 KiB of PROT_NONE under it: an overflow faults, even one that
	 * moves the stack pointer past a single guard page in one step */
	size_t guard = 256 * 1024, size = 32 * 1024;
	char *p =
	    mmap(NULL, guard + size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED || mprotect(p, guard, PROT_NONE) < 0)
		return 1;
	pthread_attr_t attr;
	pthread_t t;
	if (pthread_attr_init(&attr) || pthread_attr_setstack(&attr, p + guard, size) ||
	    pthread_create(&t, &attr, small_main, &status))
		return 1;
	pthread_join(t, NULL);
	return 1; /* never reached: the thread ends the process */
}

/* Its own function, so that no variable of the loop lives across vfork. */
__attribute__((noinline)) static int vfork_once(int i)
{
	pid_t pid = vfork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		if (i % 2)
			_Exit(0);
		_exit(0);
	}
	return wait_status(pid);
}

static int mode_vfork(int n)
{
	report("parent", parent_work());
	for (int i = 0; i < n; i++) {
		int got = vfork_once(i);
		if (got != 0) {
			fprintf(stderr, "exitcall vfork: child %d ended with %d\n", i, got);
			return 1;
		}
	}
	report("after", after_vfork());
	return 0;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";
	if (!strcmp(mode, "self") && argc > 3) {
		report("self", self_work());
		end_with(argv[2], atoi(argv[3]));
	}
	if (!strcmp(mode, "fork") && argc > 3)
		return mode_fork(argv[2], atoi(argv[3]));
	if (!strcmp(mode, "sigterm") && argc > 2)
		return mode_sigterm(argv[2]);
	if (!strcmp(mode, "smallstack") && argc > 2)
		return mode_smallstack(atoi(argv[2]), argc > 3 && !strcmp(argv[3], "exit"));
	if (!strcmp(mode, "vfork") && argc > 2)
		return mode_vfork(atoi(argv[2]));
	fprintf(stderr, "usage: exitcall MODE ... (see the source)\n");
	return 2;
}
