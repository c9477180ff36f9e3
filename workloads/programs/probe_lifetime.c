/*
 * probe_lifetime - programs whose life ends in unusual ways, or runs in
 * small stacks or under a seccomp filter (issue 30, points 3, 5 and 6).
 * Each one prints what it did; run alone and under stackprof, the output
 * and the exit status must be the same.
 *
 *   stacks [default32]   4 threads, a fork whose child starts 2 threads and
 *                        exits 3, then exit(0); default32 first sets the
 *                        default thread stack to 32 KiB
 *                        (pthread_setattr_default_np). Meant to run under
 *                        `ulimit -s 32` and `ulimit -s 64` too.
 *   pexit N              main starts N workers and leaves by pthread_exit;
 *                        the workers print in turn, the last one leaves by
 *                        pthread_exit, every line still in stdout's buffer,
 *                        and an atexit handler prints last: glibc's exit(0)
 *                        from the last thread must flush all of it.
 *   sysexit N            main starts N workers, then leaves by
 *                        syscall(SYS_exit, 5) after them: status 5.
 *   strict               SECCOMP_MODE_STRICT (read, write, exit, sigreturn
 *                        only), work, write, syscall(SYS_exit, 0).
 *   allow HOW            an allow-list filter (read, write, mmap, munmap,
 *                        brk, futex, rt_sigreturn, exit, exit_group; any
 *                        other call kills the process), then work and
 *                        exit(0). HOW: prctl, syscall (seccomp(2) through
 *                        syscall()), tsync (seccomp(2) with
 *                        SECCOMP_FILTER_FLAG_TSYNC, a thread running), fork
 *                        (a forked child installs it and exits 4; the
 *                        parent works on and waits for it).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

/* CPU work of a fixed size (no clock: none is allowed under strict mode);
 * about 0.1-0.3 s per unit on this machine */
__attribute__((noinline)) static unsigned long spin(int units)
{
	volatile unsigned long x = 0;
	for (long i = 0; i < units * 40000000L; i++)
		x += (unsigned long)i ^ (x >> 3);
	return x;
}

/* write(2) only: allowed everywhere */
static void say(const char *s)
{
	ssize_t r = write(1, s, strlen(s));
	(void)r;
}

static void *busy(void *arg)
{
	spin(1);
	return arg;
}

static int mode_stacks(int default32)
{
	if (default32) {
		pthread_attr_t a;
		pthread_attr_init(&a);
		pthread_attr_setstacksize(&a, 32 * 1024);
		if (pthread_setattr_default_np(&a) != 0) {
			fprintf(stderr, "pthread_setattr_default_np failed\n");
			return 2;
		}
		pthread_attr_destroy(&a);
	}
	pthread_t t[4];
	for (int i = 0; i < 4; i++)
		if (pthread_create(&t[i], NULL, busy, NULL) != 0)
			return 2;
	for (int i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	printf("threads done\n");
	fflush(stdout);
	pid_t pid = fork();
	if (pid == 0) {
		pthread_t c[2];
		for (int i = 0; i < 2; i++)
			if (pthread_create(&c[i], NULL, busy, NULL) != 0)
				exit(2);
		for (int i = 0; i < 2; i++)
			pthread_join(c[i], NULL);
		printf("child done\n");
		exit(3);
	}
	int st = 0;
	if (pid < 0 || waitpid(pid, &st, 0) != pid)
		return 2;
	printf("child status %d\n", WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
	spin(1);
	printf("parent done\n");
	return 0;
}

/* ---- pthread_exit and SYS_exit ------------------------------------------ */

static pthread_mutex_t turn_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t turn_cond = PTHREAD_COND_INITIALIZER;
static int turn, n_workers;
static pid_t tids[16];

static void bye(void)
{
	printf("atexit ran\n");
}

static void *worker(void *arg)
{
	int i = (int)(long)arg;
	tids[i] = (pid_t)syscall(SYS_gettid);
	spin(1);
	pthread_mutex_lock(&turn_lock);
	while (turn != i)
		pthread_cond_wait(&turn_cond, &turn_lock);
	printf("worker %d\n", i); /* stays in stdout's buffer */
	turn++;
	pthread_cond_broadcast(&turn_cond);
	pthread_mutex_unlock(&turn_lock);
	if (i == n_workers - 1)
		pthread_exit(NULL); /* the last program thread */
	return NULL;
}

static int start_workers(int n)
{
	if (n > 16)
		return -1;
	n_workers = n;
	for (int i = 0; i < n; i++) {
		pthread_t t;
		if (pthread_create(&t, NULL, worker, (void *)(long)i) != 0)
			return -1;
		pthread_detach(t);
	}
	return 0;
}

static int mode_pexit(int n)
{
	atexit(bye);
	printf("main starts %d workers, and leaves\n", n);
	if (start_workers(n) < 0)
		return 2;
	pthread_exit(NULL);
}

static int mode_sysexit(int n)
{
	printf("main starts %d workers\n", n);
	fflush(stdout);
	if (start_workers(n) < 0)
		return 2;
	spin(1);
	/* after the workers, so that main is the last thread */
	pthread_mutex_lock(&turn_lock);
	while (turn != n)
		pthread_cond_wait(&turn_cond, &turn_lock);
	pthread_mutex_unlock(&turn_lock);
	/* the kernel gives the process the status of its last thread to
	 * exit: wait until the workers' tasks are gone */
	for (int i = 0; i < n; i++)
		while (syscall(SYS_tgkill, getpid(), tids[i], 0) == 0)
			usleep(1000);
	fflush(stdout);
	say("main leaves by SYS_exit\n");
	for (;;)
		syscall(SYS_exit, 5);
}

/* ---- seccomp ------------------------------------------------------------ */

static int mode_strict(void)
{
	printf("entering strict mode\n");
	fflush(stdout);
	if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_STRICT, 0, 0, 0) != 0) {
		printf("strict mode refused: %s\n", strerror(errno));
		return 1;
	}
	spin(2);
	say("strict work done\n");
	for (;;)
		syscall(SYS_exit, 0);
}

#define ALLOW(nr)                                                                                  \
	BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (nr), 0, 1),                                           \
	    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)

static int install_allow_list(const char *how)
{
	struct sock_filter f[] = {
	    BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
	    ALLOW(SYS_read),
	    ALLOW(SYS_write),
	    ALLOW(SYS_mmap),
	    ALLOW(SYS_munmap),
	    ALLOW(SYS_brk),
	    ALLOW(SYS_futex),
	    ALLOW(SYS_madvise), /* a thread's exit: its stack, */
	    ALLOW(SYS_rseq),	/* and its rseq area */
	    ALLOW(SYS_rt_sigprocmask),
	    ALLOW(SYS_set_robust_list),
	    ALLOW(SYS_rt_sigreturn),
	    ALLOW(SYS_exit),
	    ALLOW(SYS_exit_group),
	    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
	};
	struct sock_fprog prog = {.len = sizeof(f) / sizeof(f[0]), .filter = f};
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
		return -1;
	if (!strcmp(how, "prctl"))
		return prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog, 0, 0);
	unsigned flags = !strcmp(how, "tsync") ? SECCOMP_FILTER_FLAG_TSYNC : 0;
	return (int)syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, flags, &prog);
}

static volatile int stop_spinner, spinning;

static void *spinner(void *arg)
{
	spinning = 1;
	while (!stop_spinner)
		spin(1);
	return arg;
}

static int mode_allow(const char *how)
{
	printf("installing an allow-list filter by %s\n", how);
	fflush(stdout);
	if (!strcmp(how, "fork")) {
		pid_t pid = fork();
		if (pid == 0) {
			if (install_allow_list("syscall") != 0)
				_exit(2);
			spin(2);
			say("child under the filter done\n");
			exit(4);
		}
		spin(2);
		int st = 0;
		if (pid < 0 || waitpid(pid, &st, 0) != pid)
			return 2;
		printf("child status %d\n", WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
		return 0;
	}
	pthread_t t;
	int thread = !strcmp(how, "tsync");
	if (thread && pthread_create(&t, NULL, spinner, NULL) != 0)
		return 2;
	while (thread && !spinning)
		; /* its start's system calls are made before the filter */
	if (install_allow_list(how) != 0) {
		printf("filter refused: %s\n", strerror(errno));
		return 1;
	}
	spin(2);
	if (thread) {
		stop_spinner = 1;
		pthread_join(t, NULL); /* futex only */
	}
	printf("work under the filter done\n");
	return 0; /* exit: stdio's flush is a write, then exit_group */
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";
	int n = argc > 2 ? atoi(argv[2]) : 0;
	if (!strcmp(mode, "stacks"))
		return mode_stacks(argc > 2 && !strcmp(argv[2], "default32"));
	if (!strcmp(mode, "pexit"))
		return mode_pexit(n);
	if (!strcmp(mode, "sysexit"))
		return mode_sysexit(n);
	if (!strcmp(mode, "strict"))
		return mode_strict();
	if (!strcmp(mode, "allow") && argc > 2)
		return mode_allow(argv[2]);
	fprintf(stderr, "usage: probe_lifetime stacks [default32] | pexit N | sysexit N | strict | "
			"allow prctl|syscall|tsync|fork\n");
	return 2;
}
