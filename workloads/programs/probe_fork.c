/*
 * probe_fork.c - fork and vfork in the cases that once hung or cut short a
 * profiled program, one case per run:
 *
 *   churn THREADS FORKS [LIB]
 *        THREADS threads keep starting short-lived threads (create, a
 *        little CPU, join; every fourth round also dlopen(LIB) and dlclose
 *        it) while the main thread forks FORKS children one after another.
 *        Each child works about 2 ms of CPU in child_work() and ends with
 *        status i % 4, through exit() (even i) or _exit() (odd i); with
 *        LIB, always through _exit(): glibc 2.36 does not reset its
 *        __exit_funcs_lock in a fork child, and dlclose holds it (running
 *        the library's destructors), so exit() in a child forked during a
 *        dlclose hangs in glibc, profiled or not. The
 *        parent waits for each and checks its status. Prints
 *        "forks FORKS ok" and exits 0 if every child ended as it should.
 *        A fork taken while another thread holds a lock that the child
 *        then needs hangs the child, and the parent with it.
 *   vfork CHILDREN return|exit
 *        the main thread works about 0.25 s in parent_work(), then starts
 *        CHILDREN vfork children that end at once with exit() (not
 *        _exit()): status 3 for every third one, 0 for the others; the
 *        parent checks each status, works 0.25 s more in parent_work(),
 *        and ends by returning from main or by calling exit(). Prints
 *        "vforks CHILDREN ok" and "cpu PID US", the CPU the parent measured
 *        in parent_work (the only line that differs from run to run).
 *        A vfork child's exit() runs the exit handlers and destructors in
 *        the memory it shares with its parent.
 *
 * Output goes through write(), never stdio, so no child can flush or lose
 * the parent's buffers. Every run is bounded (the children of churn and
 * vfork work for milliseconds; churn's threads stop when the forks end).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "workloads/programs/thread_cpu.h"

static volatile double sink;

/* Burns secs of this thread's CPU; returns how much it burned. */
__attribute__((noinline)) static double spin(double secs)
{
	double start = cpu_seconds(), now = start;
	while (now - start < secs) {
		double x = 0;
		for (long i = 0; i < 2000; i++)
			x += (double)i * 0.5;
		sink += x;
		now = cpu_seconds();
	}
	return now - start;
}

__attribute__((noinline)) double child_work(void)
{
	return spin(0.002);
}

__attribute__((noinline)) double parent_work(void)
{
	return spin(0.25);
}

__attribute__((noinline)) static void *short_thread(void *arg)
{
	(void)arg;
	spin(0.00005);
	return NULL;
}

__attribute__((format(printf, 1, 2))) static void say(const char *fmt, ...)
{
	char line[96];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (write(STDOUT_FILENO, line, (size_t)n) != n)
		_exit(99);
}

/* Waits for pid; its exit status, or -1 if it did not exit (said on stderr). */
static int wait_status(pid_t pid)
{
	int st;
	while (waitpid(pid, &st, 0) < 0)
		;
	if (WIFEXITED(st))
		return WEXITSTATUS(st);
	fprintf(stderr, "probe_fork: child %d ended by signal %d\n", (int)pid,
		WIFSIGNALED(st) ? WTERMSIG(st) : 0);
	return -1;
}

static atomic_bool stop;
static const char *lib;

__attribute__((noinline)) static void *churner(void *arg)
{
	(void)arg;
	for (unsigned round = 0; !atomic_load(&stop); round++) {
		void *h = NULL;
		if (lib && round % 4 == 0)
			h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
		pthread_t t;
		if (pthread_create(&t, NULL, short_thread, NULL) == 0)
			pthread_join(t, NULL);
		if (h)
			dlclose(h);
	}
	return NULL;
}

static int mode_churn(int threads, int forks)
{
	pthread_t th[64];
	if (threads > 64)
		threads = 64;
	int started = 0;
	for (; started < threads; started++)
		if (pthread_create(&th[started], NULL, churner, NULL) != 0)
			break;
	int bad = 0;
	for (int i = 0; i < forks; i++) {
		pid_t pid = fork();
		if (pid < 0) {
			bad++;
			continue;
		}
		if (pid == 0) {
			child_work();
			if (!lib && i % 2 == 0)
				exit(i % 4);
			_exit(i % 4);
		}
		int got = wait_status(pid);
		if (got != i % 4) {
			fprintf(stderr, "probe_fork: child %d (%d) ended with %d, not %d\n", i,
				(int)pid, got, i % 4);
			bad++;
		}
	}
	atomic_store(&stop, true);
	for (int i = 0; i < started; i++)
		pthread_join(th[i], NULL);
	if (bad) {
		say("forks %d: %d bad\n", forks, bad);
		return 1;
	}
	say("forks %d ok\n", forks);
	return 0;
}

/* A vfork child that ends at once with exit(status); its pid, or -1. */
__attribute__((noinline)) static pid_t vfork_exit(int status)
{
	pid_t pid = vfork();
	if (pid == 0)
		exit(status);
	return pid;
}

static int mode_vfork(int children, bool by_exit)
{
	double cpu = parent_work();
	int bad = 0;
	for (int i = 0; i < children; i++) {
		int want = i % 3 == 0 ? 3 : 0;
		pid_t pid = vfork_exit(want);
		if (pid < 0 || wait_status(pid) != want)
			bad++;
	}
	cpu += parent_work();
	if (bad)
		say("vforks %d: %d bad\n", children, bad);
	else
		say("vforks %d ok\n", children);
	say("cpu %ld %ld\n", (long)getpid(), (long)(cpu * 1e6));
	if (by_exit)
		exit(bad ? 1 : 0);
	return bad ? 1 : 0;
}

int main(int argc, char **argv)
{
	if (argc >= 4 && !strcmp(argv[1], "churn")) {
		lib = argc >= 5 ? argv[4] : NULL;
		return mode_churn(atoi(argv[2]), atoi(argv[3]));
	}
	if (argc >= 4 && !strcmp(argv[1], "vfork"))
		return mode_vfork(atoi(argv[2]), !strcmp(argv[3], "exit"));
	fprintf(stderr,
		"usage: probe_fork churn THREADS FORKS [LIB] | vfork CHILDREN return|exit\n");
	return 2;
}
