/*
 * hostile.c - programs that do to their process what daemons, sandboxes,
 * coroutine libraries and thread pools do, each of which a profiler inside
 * the process could disturb (issue 13). Every mode checks its own result
 * and exits 0 only if the program saw exactly what it would see alone.
 *
 * usage: hostile MODE [FILE]
 *   closerange FILE  close_range(3, ~0U), then write a known file while working
 *   closeloop FILE   close() every fd from 3 to the limit, then the same
 *   closefrom FILE   closefrom(3), then the same
 *   dup2all FILE     dup2 a log over every fd from 3 to 1023 (or the limit),
 *                    then log
 *   rawclose FILE    close_range(3, ~0U) by raw syscall (not seen by an
 *                    interposer), then dup its file over every fd up to 1023
 *   threadexit FILE  threads that exit while the main thread writes a file it
 *                    opened after closing every fd
 *   sigign           SIGPROF ignored for a moment, then given back (SIG_DFL);
 *                    then 1.2 s of CPU
 *   sigsave          SIGPROF set to a handler for a moment, then the saved
 *                    action restored; then 1.2 s of CPU
 *   procfd           closes every fd listed in /proc/self/fd but 0-2, as
 *                    daemons do, then writes a file and checks its content
 *   coro KIB DEPTH   ucontext coroutines on KIB KiB stacks, each recursing
 *                    DEPTH frames deep and working there, for 1 s of CPU
 *   altstack         a SIGUSR1 handler on a 16 KiB sigaltstack recurses 50
 *                    deep and works there, raised again and again
 *   cancel DLIB      threads with PTHREAD_CANCEL_ASYNCHRONOUS cancelled while
 *                    they work, then 50 dlopen/dlclose rounds of DLIB; prints
 *                    how long the rounds took
 *   threads N M      N threads that wait (and work a little), then M files
 *                    opened while they live: every open must succeed
 *   seccomp KILL|ERRNO CMD...  installs a seccomp filter that kills the
 *                    process (or fails with EPERM) on perf_event_open, then
 *                    works and execs CMD under it, as a sandbox launcher does
 *   vfork            vfork + exec /bin/true, many times, while working
 *   clone            clone() children without CLONE_THREAD (with and without
 *                    CLONE_VM) that work and exit, while working
 *   iouring          reads through io_uring that block, so the kernel starts
 *                    io-wq worker threads in the process; a wait cut short
 *                    (EINTR) is waited again, as a correct program does
 *   eintr N          N rounds of 0.5 ms of work, each ended by a short wait
 *                    in nanosleep, poll, epoll_wait or io_uring_enter in turn,
 *                    none retried; prints how many of each returned EINTR
 *                    (none, alone)
 *
 * Work is CPU time (CLOCK_THREAD_CPUTIME_ID), so a profiler has something
 * to sample all along.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <sched.h>
#include <linux/filter.h>
#include <linux/io_uring.h>
#include <linux/time_types.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <ucontext.h>
#include <time.h>
#include <unistd.h>

#include "workloads/programs/thread_cpu.h"

#ifndef CLOSE_RANGE_UNSHARE
#define CLOSE_RANGE_UNSHARE 2
#endif

static volatile double sink;

__attribute__((noinline)) void hostile_work(double secs)
{
	double end = cpu_seconds() + secs;
	while (cpu_seconds() < end) {
		double x = 0;
		for (long i = 0; i < 20000; i++)
			x += (double)i * 0.5;
		sink += x;
	}
}

static int fd_limit(void)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur > 65536)
		return 65536;
	return (int)rl.rlim_cur;
}

/* Line k of the known file: 38 bytes. */
static void line_of(int k, char *buf)
{
	snprintf(buf, 40, "line %06d of the program's own file\n", k);
}

#define N_LINES	 100
#define LINE_LEN 38

/* Writes N_LINES lines to fd, working between them so that samples (and
 * the profiler's flushes) fall in between. Every write must succeed. */
static int write_lines(int fd, double work_per_line)
{
	char buf[40];
	for (int k = 0; k < N_LINES; k++) {
		line_of(k, buf);
		if (write(fd, buf, LINE_LEN) != LINE_LEN) {
			fprintf(stderr, "hostile: write %d to fd %d failed: %s\n", k, fd,
				strerror(errno));
			return 1;
		}
		hostile_work(work_per_line);
	}
	return 0;
}

/* The file holds exactly the N_LINES lines: nothing more, nothing less. */
static int check_file(const char *path)
{
	FILE *f = fopen(path, "r");
	if (!f) {
		fprintf(stderr, "hostile: cannot reopen %s: %s\n", path, strerror(errno));
		return 1;
	}
	char want[40], got[4096];
	size_t n = fread(got, 1, sizeof(got), f);
	fclose(f);
	if (n != N_LINES * LINE_LEN) {
		fprintf(stderr, "hostile: %s has %zu bytes, not %d\n", path, n, N_LINES * LINE_LEN);
		return 1;
	}
	for (int k = 0; k < N_LINES; k++) {
		line_of(k, want);
		if (memcmp(got + k * LINE_LEN, want, LINE_LEN)) {
			fprintf(stderr, "hostile: line %d of %s is not the program's\n", k, path);
			return 1;
		}
	}
	return 0;
}

/* The program's own files: several, as a daemon's logs, so that they take
 * every low number a profiler could have held before the close. */
#define N_FILES 4

/* Opens FILE.0..FILE.3, writes the lines to each in turn, closes, checks. */
static int own_file(const char *path)
{
	char name[N_FILES][4096];
	int fd[N_FILES], rc = 0;
	for (int i = 0; i < N_FILES; i++) {
		snprintf(name[i], sizeof(name[i]), "%s.%d", path, i);
		fd[i] = open(name[i], O_WRONLY | O_CREAT | O_TRUNC, 0600);
		if (fd[i] < 0) {
			fprintf(stderr, "hostile: open %s: %s\n", name[i], strerror(errno));
			return 1;
		}
	}
	char buf[40];
	for (int k = 0; k < N_LINES && !rc; k++) {
		line_of(k, buf);
		for (int i = 0; i < N_FILES; i++)
			if (write(fd[i], buf, LINE_LEN) != LINE_LEN) {
				fprintf(stderr, "hostile: write to fd %d failed: %s\n", fd[i],
					strerror(errno));
				rc = 1;
			}
		hostile_work(0.005);
	}
	for (int i = 0; i < N_FILES; i++) {
		if (close(fd[i]) < 0) {
			fprintf(stderr, "hostile: close %d: %s\n", fd[i], strerror(errno));
			rc = 1;
		}
		rc |= check_file(name[i]);
	}
	return rc;
}

static int mode_dup2all(const char *path)
{
	int log = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	if (log < 0)
		return 1;
	int lim = fd_limit() < 1024 ? fd_limit() : 1024;
	for (int fd = 3; fd < lim; fd++)
		if (fd != log && dup2(log, fd) < 0) {
			fprintf(stderr, "hostile: dup2(%d, %d): %s\n", log, fd, strerror(errno));
			return 1;
		}
	int rc = write_lines(log, 0.005);
	for (int fd = 3; fd < lim; fd++)
		close(fd);
	return rc | check_file(path);
}

static int mode_rawclose(const char *path)
{
	hostile_work(0.3);
	syscall(SYS_close_range, 3, ~0U, 0);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	if (fd < 0)
		return 1;
	/* every number a profiler could have held now names our file */
	for (int k = 3; k < 1024 && k < fd_limit(); k++)
		if (k != fd)
			syscall(SYS_dup2, fd, k);
	int rc = write_lines(fd, 0.005);
	syscall(SYS_close_range, 3, ~0U, 0);
	return rc | check_file(path);
}

static void *exiting_thread(void *arg)
{
	hostile_work(0.05 + 0.01 * (double)(size_t)arg);
	return NULL;
}

static int mode_threadexit(const char *path)
{
	pthread_t t[16];
	for (size_t i = 0; i < 16; i++)
		if (pthread_create(&t[i], NULL, exiting_thread, (void *)i))
			return 1;
	hostile_work(0.02);
	close_range(3, ~0U, 0);
	int rc = own_file(path);
	for (int i = 0; i < 16; i++)
		pthread_join(t[i], NULL);
	return rc;
}

static int mode_procfd(const char *path)
{
	hostile_work(0.3);
	DIR *d = opendir("/proc/self/fd");
	if (!d)
		return 1;
	int keep = dirfd(d), fds[8192], n = 0;
	struct dirent *e;
	while ((e = readdir(d)) && n < 8192) {
		int fd = atoi(e->d_name);
		if (e->d_name[0] != '.' && fd > 2 && fd != keep)
			fds[n++] = fd;
	}
	closedir(d);
	for (int i = 0; i < n; i++)
		close(fds[i]); /* a descriptor a profiler hides fails with EBADF: fine */
	return own_file(path);
}

/* ---- small stacks ------------------------------------------------------ */

/* A frame of about 128 bytes that the compiler can't fold away. */
__attribute__((noinline)) int hostile_deep(int depth, double secs)
{
	volatile char pad[96];
	pad[0] = (char)depth;
	if (depth <= 1) {
		hostile_work(secs);
		return pad[0];
	}
	return hostile_deep(depth - 1, secs) + pad[0];
}

static ucontext_t coro_main, coro_ctx;
static int coro_depth;
static volatile int coro_done;

static void coro_body(void)
{
	for (;;) {
		hostile_deep(coro_depth, 0.002);
		swapcontext(&coro_ctx, &coro_main);
	}
}

/* kib KiB of stack with a guard page under it: an overflow is a SIGSEGV,
 * not a silent write into the heap. */
static char *guarded_stack(int kib)
{
	size_t page = 4096, len = (size_t)kib * 1024;
	char *p =
	    mmap(NULL, len + page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED || mprotect(p, page, PROT_NONE) < 0)
		return NULL;
	return p + page;
}

static int mode_coro(int kib, int depth)
{
	char *stack = guarded_stack(kib);
	if (!stack || getcontext(&coro_ctx) < 0)
		return 1;
	coro_ctx.uc_stack.ss_sp = stack;
	coro_ctx.uc_stack.ss_size = (size_t)kib * 1024;
	coro_ctx.uc_link = &coro_main;
	coro_depth = depth;
	makecontext(&coro_ctx, coro_body, 0);
	double end = cpu_seconds() + 1.0;
	while (cpu_seconds() < end)
		swapcontext(&coro_main, &coro_ctx);
	printf("coro: %d KiB stacks, %d deep: ok\n", kib, depth);
	return 0;
}

static volatile int usr1_calls;

static void on_usr1(int sig)
{
	hostile_deep(50, 0.002);
	usr1_calls++;
}

static int mode_altstack(void)
{
	stack_t ss = {.ss_sp = guarded_stack(16), .ss_size = 16384, .ss_flags = 0};
	if (!ss.ss_sp || sigaltstack(&ss, NULL) < 0)
		return 1;
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_usr1;
	sa.sa_flags = SA_ONSTACK;
	sigaction(SIGUSR1, &sa, NULL);
	double end = cpu_seconds() + 1.0;
	while (cpu_seconds() < end)
		raise(SIGUSR1);
	stack_t now;
	sigaltstack(NULL, &now);
	bool same = now.ss_sp == ss.ss_sp && now.ss_size == ss.ss_size;
	printf("altstack: the handler ran; its stack is still the program's: %s\n",
	       same ? "yes" : "no");
	return same && usr1_calls > 0 ? 0 : 1;
}

/* ---- asynchronous cancellation ----------------------------------------- */

/* Deep enough that unwinding it keeps the handler busy for a while: a
 * cancellation often lands inside it. */
__attribute__((noinline)) void hostile_spin_deep(int depth)
{
	volatile char pad[32];
	pad[0] = (char)depth;
	if (depth > 1) {
		hostile_spin_deep(depth - 1);
		return;
	}
	while (depth > 0) {
		double x = 0;
		for (long i = 0; i < 1000; i++)
			x += (double)i * 0.5;
		sink += x + pad[0];
	}
}

static void *cancel_me(void *arg)
{
	pthread_setcanceltype(PTHREAD_CANCEL_ASYNCHRONOUS, NULL);
	hostile_spin_deep(300);
	return NULL;
}

static double wall_seconds(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int mode_cancel(const char *lib)
{
	unsigned seed = 1;
	for (int i = 0; i < 2000; i++) {
		pthread_t t;
		if (pthread_create(&t, NULL, cancel_me, NULL))
			return 1;
		struct timespec d = {0, 100000 + rand_r(&seed) % 1000000};
		nanosleep(&d, NULL);
		pthread_cancel(t);
		pthread_join(t, NULL);
	}
	double t0 = wall_seconds();
	for (int i = 0; i < 50; i++) {
		void *h = dlopen(lib, RTLD_NOW);
		if (!h) {
			fprintf(stderr, "hostile: dlopen %s: %s\n", lib, dlerror());
			return 1;
		}
		dlclose(h);
	}
	printf("cancel: 2000 threads cancelled; 50 dlopen/dlclose rounds took %.3f s\n",
	       wall_seconds() - t0);
	return 0;
}

/* ---- resources -------------------------------------------------------- */

static pthread_barrier_t threads_go;

static void *waiting_thread(void *arg)
{
	hostile_work(0.002);
	pthread_barrier_wait(&threads_go);
	hostile_work(0.002);
	return NULL;
}

static int mode_threads(int n, int m)
{
	pthread_t *t = calloc((size_t)n, sizeof(*t));
	int *fds = calloc((size_t)m, sizeof(*fds));
	if (!t || !fds || pthread_barrier_init(&threads_go, NULL, (unsigned)n + 1))
		return 1;
	pthread_attr_t a;
	pthread_attr_init(&a);
	pthread_attr_setstacksize(&a, 64 * 1024);
	for (int i = 0; i < n; i++)
		if (pthread_create(&t[i], &a, waiting_thread, NULL)) {
			fprintf(stderr, "hostile: thread %d: cannot create\n", i);
			return 1;
		}
	int rc = 0;
	for (int i = 0; i < m; i++) {
		fds[i] = open("/dev/null", O_RDONLY);
		if (fds[i] < 0) {
			fprintf(stderr, "hostile: open #%d failed: %s\n", i + 1, strerror(errno));
			rc = 1;
			break;
		}
	}
	hostile_work(0.2);
	pthread_barrier_wait(&threads_go);
	for (int i = 0; i < n; i++)
		pthread_join(t[i], NULL);
	for (int i = 0; i < m; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	printf("threads: %d threads, %d files: %s\n", n, m, rc ? "failed" : "ok");
	return rc;
}

static int mode_seccomp(const char *how, char **cmd)
{
	unsigned ret = !strcmp(how, "KILL") ? SECCOMP_RET_KILL_PROCESS
					    : SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA);
	struct sock_filter f[] = {
	    BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
	    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_perf_event_open, 0, 1),
	    BPF_STMT(BPF_RET | BPF_K, ret),
	    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = {.len = sizeof(f) / sizeof(f[0]), .filter = f};
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) ||
	    prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog)) {
		fprintf(stderr, "hostile: seccomp: %s\n", strerror(errno));
		return 1;
	}
	/* threads made under the filter, then the program the sandbox runs */
	pthread_t t;
	if (pthread_create(&t, NULL, exiting_thread, (void *)(size_t)5) == 0)
		pthread_join(t, NULL);
	hostile_work(0.3);
	execv(cmd[0], cmd);
	fprintf(stderr, "hostile: exec %s: %s\n", cmd[0], strerror(errno));
	return 1;
}

/* One vfork child that execs /bin/true; its own function, so that no
 * variable of the loop lives across the vfork. */
__attribute__((noinline)) static int vfork_once(void)
{
	pid_t pid = vfork();
	if (pid == 0) {
		execl("/bin/true", "true", (char *)NULL);
		_exit(127);
	}
	int st;
	return pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

static int mode_vfork(void)
{
	for (int i = 0; i < 200; i++) {
		if (!vfork_once()) {
			fprintf(stderr, "hostile: vfork child %d failed\n", i);
			return 1;
		}
		hostile_work(0.004);
	}
	printf("vfork: 200 children ok\n");
	return 0;
}

static int clone_child(void *arg)
{
	hostile_work(0.02);
	return 7;
}

static int mode_clone(void)
{
	for (int i = 0; i < 40; i++) {
		char *stack = guarded_stack(256);
		int flags = (i & 1) ? (CLONE_VM | SIGCHLD) : SIGCHLD;
		pid_t pid = clone(clone_child, stack + 256 * 1024, flags, NULL);
		int st;
		if (pid < 0 || waitpid(pid, &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 7) {
			fprintf(stderr, "hostile: clone child %d failed\n", i);
			return 1;
		}
		hostile_work(0.01);
	}
	printf("clone: 40 children ok\n");
	return 0;
}

/* An io_uring and its three shared areas. */
struct ring {
	int fd;
	struct io_uring_params p;
	char *sq, *cq;
	struct io_uring_sqe *sqes;
};

/* 0, or -1 with errno set. */
static int ring_open(struct ring *r)
{
	memset(r, 0, sizeof(*r));
	r->fd = (int)syscall(SYS_io_uring_setup, 8, &r->p);
	if (r->fd < 0)
		return -1;
	size_t sq_len = r->p.sq_off.array + r->p.sq_entries * sizeof(unsigned);
	size_t cq_len = r->p.cq_off.cqes + r->p.cq_entries * sizeof(struct io_uring_cqe);
	r->sq = mmap(NULL, sq_len, PROT_READ | PROT_WRITE, MAP_SHARED, r->fd, IORING_OFF_SQ_RING);
	r->cq = mmap(NULL, cq_len, PROT_READ | PROT_WRITE, MAP_SHARED, r->fd, IORING_OFF_CQ_RING);
	r->sqes = mmap(NULL, r->p.sq_entries * sizeof(struct io_uring_sqe), PROT_READ | PROT_WRITE,
		       MAP_SHARED, r->fd, IORING_OFF_SQES);
	if (r->sq == MAP_FAILED || r->cq == MAP_FAILED || r->sqes == MAP_FAILED)
		return -1;
	return 0;
}

/* Queues *e and submits it (no wait). 0, or -1. */
static int ring_submit(struct ring *r, const struct io_uring_sqe *e)
{
	unsigned tail = *(unsigned *)(r->sq + r->p.sq_off.tail);
	unsigned idx = tail & *(unsigned *)(r->sq + r->p.sq_off.ring_mask);
	r->sqes[idx] = *e;
	((unsigned *)(r->sq + r->p.sq_off.array))[idx] = idx;
	__atomic_store_n((unsigned *)(r->sq + r->p.sq_off.tail), tail + 1, __ATOMIC_RELEASE);
	return syscall(SYS_io_uring_enter, r->fd, 1, 0, 0, NULL, 0) < 0 ? -1 : 0;
}

/* Waits for one completion (io_uring_enter with GETEVENTS: EINTR is the
 * caller's), and takes it: 0 with its result in *res, or -1 with errno. */
static int ring_wait(struct ring *r, int *res)
{
	if (syscall(SYS_io_uring_enter, r->fd, 0, 1, IORING_ENTER_GETEVENTS, NULL, 0) < 0)
		return -1;
	unsigned head = *(unsigned *)(r->cq + r->p.cq_off.head);
	struct io_uring_cqe *c = (struct io_uring_cqe *)(r->cq + r->p.cq_off.cqes) +
				 (head & *(unsigned *)(r->cq + r->p.cq_off.ring_mask));
	*res = c->res;
	__atomic_store_n((unsigned *)(r->cq + r->p.cq_off.head), head + 1, __ATOMIC_RELEASE);
	return 0;
}

static int mode_iouring(void)
{
	struct ring r;
	if (ring_open(&r) < 0) {
		printf("iouring: not available (%s)\n", strerror(errno));
		return 0;
	}
	int rounds = 0;
	for (int k = 0; k < 50; k++) {
		int pfd[2];
		if (pipe(pfd) < 0)
			return 1;
		char buf[16];
		/* a read of an empty pipe blocks: the kernel hands it to an io-wq worker */
		struct io_uring_sqe e = {.opcode = IORING_OP_READ,
					 .flags = IOSQE_ASYNC,
					 .fd = pfd[0],
					 .addr = (unsigned long)buf,
					 .len = sizeof(buf)};
		if (ring_submit(&r, &e) < 0)
			return 1;
		hostile_work(0.005);
		if (write(pfd[1], "0123456789abcdef", 16) != 16)
			return 1;
		int res, rc;
		while ((rc = ring_wait(&r, &res)) < 0 && errno == EINTR)
			;
		if (rc < 0)
			return 1;
		if (res == 16 && !memcmp(buf, "0123456789abcdef", 16))
			rounds++;
		close(pfd[0]);
		close(pfd[1]);
	}
	printf("iouring: %d of 50 reads right\n", rounds);
	return rounds == 50 ? 0 : 1;
}

/* A short wait of each kind, in turn; counts those cut short. */
static int mode_eintr(int n)
{
	struct ring r;
	bool uring = ring_open(&r) == 0;
	int ep = epoll_create1(EPOLL_CLOEXEC);
	if (ep < 0)
		return 1;
	unsigned cut[4] = {0, 0, 0, 0};
	for (int i = 0; i < n; i++) {
		hostile_work(0.0005);
		int rc = 0, res;
		switch (i % 4) {
		case 0: {
			struct timespec ts = {0, 20000};
			rc = nanosleep(&ts, NULL);
			break;
		}
		case 1:
			rc = poll(NULL, 0, 1);
			break;
		case 2: {
			struct epoll_event ev;
			rc = epoll_wait(ep, &ev, 1, 1);
			break;
		}
		case 3: {
			if (!uring)
				continue;
			struct __kernel_timespec ts = {0, 50000};
			struct io_uring_sqe e = {
			    .opcode = IORING_OP_TIMEOUT, .addr = (unsigned long)&ts, .len = 1};
			if (ring_submit(&r, &e) < 0)
				return 1;
			/* a wait cut short: the timeout's completion is still to come */
			while ((rc = ring_wait(&r, &res)) < 0 && errno == EINTR)
				cut[3]++;
			if (rc < 0)
				return 1;
			continue;
		}
		}
		if (rc < 0 && errno == EINTR)
			cut[i % 4]++;
		else if (rc < 0)
			return 1;
	}
	printf("eintr: nanosleep %u poll %u epoll_wait %u io_uring_enter %u\n", cut[0], cut[1],
	       cut[2], cut[3]);
	return 0;
}

static double process_cpu_seconds(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static volatile sig_atomic_t ticks;

static void on_prof(int sig)
{
	ticks++;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: hostile MODE [FILE]\n");
		return 2;
	}
	const char *mode = argv[1], *file = argc > 2 ? argv[2] : "hostile.out";
	if (!strcmp(mode, "closerange")) {
		hostile_work(0.3);
		if (close_range(3, ~0U, 0) < 0)
			return 1;
		return own_file(file);
	}
	if (!strcmp(mode, "closeloop")) {
		hostile_work(0.3);
		for (int fd = 3, lim = fd_limit(); fd < lim; fd++)
			close(fd);
		return own_file(file);
	}
	if (!strcmp(mode, "closefrom")) {
		hostile_work(0.3);
		closefrom(3);
		return own_file(file);
	}
	if (!strcmp(mode, "dup2all"))
		return mode_dup2all(file);
	if (!strcmp(mode, "rawclose"))
		return mode_rawclose(file);
	if (!strcmp(mode, "threadexit"))
		return mode_threadexit(file);
	if (!strcmp(mode, "procfd"))
		return mode_procfd(file);
	if (!strcmp(mode, "coro") && argc > 3)
		return mode_coro(atoi(argv[2]), atoi(argv[3]));
	if (!strcmp(mode, "altstack"))
		return mode_altstack();
	if (!strcmp(mode, "cancel") && argc > 2)
		return mode_cancel(argv[2]);
	if (!strcmp(mode, "threads") && argc > 3)
		return mode_threads(atoi(argv[2]), atoi(argv[3]));
	if (!strcmp(mode, "seccomp") && argc > 3)
		return mode_seccomp(argv[2], argv + 3);
	if (!strcmp(mode, "vfork"))
		return mode_vfork();
	if (!strcmp(mode, "clone"))
		return mode_clone();
	if (!strcmp(mode, "iouring"))
		return mode_iouring();
	if (!strcmp(mode, "eintr") && argc > 2)
		return mode_eintr(atoi(argv[2]));
	if (!strcmp(mode, "sigign")) {
		signal(SIGPROF, SIG_IGN);
		hostile_work(0.1);
		signal(SIGPROF, SIG_DFL);
		hostile_work(1.2);
		return 0;
	}
	if (!strcmp(mode, "sigsave")) {
		struct sigaction sa, old;
		memset(&sa, 0, sizeof(sa));
		sa.sa_handler = on_prof;
		sigaction(SIGPROF, &sa, &old);
		struct itimerval it = {{0, 10000}, {0, 10000}}, off;
		memset(&off, 0, sizeof(off));
		setitimer(ITIMER_PROF, &it, NULL);
		/* until 5 ticks came, within 2 s of CPU: on a busy machine the
		 * kernel fired this 10 ms ITIMER_PROF only 0-9 times in 0.2 s of
		 * CPU, alone as profiled (20 on a quiet one) */
		for (double end = process_cpu_seconds() + 2.0;
		     ticks < 5 && process_cpu_seconds() < end;)
			hostile_work(0.01);
		setitimer(ITIMER_PROF, &off, NULL);
		sigaction(SIGPROF, &old, NULL);
		hostile_work(1.2);
		/* its own profiling worked while it had the signal */
		fprintf(stderr, "sigsave: %d ticks of its own ITIMER_PROF\n", (int)ticks);
		return ticks >= 5 ? 0 : 1;
	}
	fprintf(stderr, "hostile: unknown mode %s\n", mode);
	return 2;
}
