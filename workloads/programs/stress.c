/*
 * stress.c - hostile targets for the sampler, one mode per run:
 *
 *   malloc     threads that do nothing but malloc/free
 *   fork       children that work and exit with status 7; parent checks
 *   churn      thousands of short threads created and joined
 *   vary       0.5 s of CPU in stacks whose depth steps through 100 to 2099
 *              frames, a new depth every ~20 us: a different deep stack in
 *              nearly every sample at 10 kHz
 *   churnmem   1 s of wall time creating and joining 4 threads at a time
 *              that do almost nothing; prints the process's peak RSS
 *              ("VmHWM KB") from /proc/self/status
 *   exec N     exec itself N times, then work
 *   block      block and unblock SIGPROF around work, in a loop
 *   blockall   the same with every signal (SIGTRAP too)
 *   ownprof    install its own SIGPROF handler and ITIMER_PROF; count ticks
 *   trap       use SIGTRAP itself while working: sigaction()/signal() answer
 *              what it set, its handler sees exactly its own 200 raise()s and
 *              200 int3 breakpoints (x86-64), SIG_IGN drops one, SA_RESETHAND
 *              resets; exits 0 when all of that holds
 *   trapdfl    work, then raise(SIGTRAP) with the default action: dies of
 *              SIGTRAP
 *   setxid     4 threads work while the main thread (root) changes its
 *              effective uid and gid and its groups (1,400 calls); glibc runs
 *              each change on every thread, stackprof's among them; exits
 *              0 when every call succeeded, 77 when not root
 *   badcfi     spin 0.5 s of CPU in code whose CFI says its frame is 1 MiB
 *              tall: a sample there cannot be unwound, and must be counted
 *              as an unwind error rather than followed off the stack
 *   errno      check errno survives samples
 *   segv|abort|thread_exit|sleep   crash, abort, _exit(3) from a thread, sleep
 *   exit N     work, then exit with status N
 *
 * Each mode bounds its own runtime and exits 0 when its check passes.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <grp.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "workloads/programs/thread_cpu.h"

static volatile double sink;

__attribute__((noinline)) static void work(double secs)
{
	double end = cpu_seconds() + secs;
	while (cpu_seconds() < end) {
		double x = 0;
		for (long i = 0; i < 20000; i++)
			x += (double)i * 0.5;
		sink += x;
	}
}

static void *malloc_thread(void *arg)
{
	double end = cpu_seconds() + 0.7;
	unsigned seed = (unsigned)(size_t)arg;
	void *keep[64] = {0};
	while (cpu_seconds() < end) {
		for (int i = 0; i < 64; i++) {
			free(keep[i]);
			keep[i] = malloc(16 + rand_r(&seed) % 4096);
		}
	}
	for (int i = 0; i < 64; i++)
		free(keep[i]);
	return NULL;
}

static void *short_thread(void *arg)
{
	work(0.0005);
	return NULL;
}

static void *tiny_thread(void *arg)
{
	volatile int x = 0;
	for (int i = 0; i < 1000; i++)
		x += i;
	return NULL;
}

/* Recurses to depth, then spins n iterations: the depth is the stack's shape. */
__attribute__((noinline)) static double vary_down(int depth, long n)
{
	volatile int frame = depth;
	double x = 0;
	if (depth > 1)
		x = vary_down(depth - 1, n);
	else
		for (long i = 0; i < n; i++)
			x += (double)i * 0.5;
	return x + frame;
}

static void *exit_thread(void *arg)
{
	work(0.3);
	_exit(3);
}

static volatile sig_atomic_t own_ticks;

static void own_handler(int sig)
{
	own_ticks++;
}

static volatile sig_atomic_t trap_raised, trap_int3, trap_other;

static void trap_handler(int sig, siginfo_t *si, void *uc)
{
	if (si->si_code == SI_TKILL || si->si_code == SI_USER)
		trap_raised++;
	else if (si->si_code == SI_KERNEL)
		trap_int3++;
	else
		trap_other++;
}

static void plain_handler(int sig)
{
	trap_raised++;
}

#define TRAP_CHECK(c)                                                                              \
	do {                                                                                       \
		if (!(c)) {                                                                        \
			fprintf(stderr, "stress trap: %s failed\n", #c);                           \
			return 1;                                                                  \
		}                                                                                  \
	} while (0)

static int trap_mode(void)
{
	struct sigaction sa, q;
	TRAP_CHECK(sigaction(SIGTRAP, NULL, &q) == 0 && q.sa_handler == SIG_DFL);
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = trap_handler;
	sa.sa_flags = SA_SIGINFO;
	TRAP_CHECK(sigaction(SIGTRAP, &sa, NULL) == 0);
	TRAP_CHECK(sigaction(SIGTRAP, NULL, &q) == 0 && (q.sa_flags & SA_SIGINFO) &&
		   q.sa_sigaction == trap_handler);
	for (int i = 0; i < 200; i++) {
		work(0.002);
		raise(SIGTRAP);
#if defined(__x86_64__) || defined(__i386__)
		__asm__ volatile("int3");
#else
		trap_int3++;
#endif
	}
	printf("trap: raised %d int3 %d other %d\n", (int)trap_raised, (int)trap_int3,
	       (int)trap_other);
	TRAP_CHECK(trap_raised == 200 && trap_int3 == 200 && trap_other == 0);

	TRAP_CHECK((uintptr_t)signal(SIGTRAP, SIG_IGN) == (uintptr_t)trap_handler);
	raise(SIGTRAP);
	work(0.1);
	TRAP_CHECK(trap_raised == 200);

	/* SA_RESETHAND: the first one runs the handler, then the default is back */
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = plain_handler;
	sa.sa_flags = SA_RESETHAND;
	TRAP_CHECK(sigaction(SIGTRAP, &sa, &q) == 0 && q.sa_handler == SIG_IGN);
	raise(SIGTRAP);
	TRAP_CHECK(trap_raised == 201);
	TRAP_CHECK(sigaction(SIGTRAP, NULL, &q) == 0 && q.sa_handler == SIG_DFL);
	work(0.1);
	return 0;
}

static void *work_thread(void *arg)
{
	work(0.4);
	return arg;
}

/* The main thread's uid, gid and groups changes, each run by glibc on every
 * thread, while workers are sampled. */
static int setxid_mode(void)
{
	if (geteuid() != 0)
		return 77;
	pthread_t t[4];
	for (int i = 0; i < 4; i++)
		if (pthread_create(&t[i], NULL, work_thread, NULL))
			return 1;
	int bad = 0;
	for (int i = 0; i < 200; i++) {
		gid_t g = (gid_t)(i % 7);
		bad |= setegid(65534) != 0 || seteuid(65534) != 0;
		bad |= seteuid(0) != 0 || setegid(0) != 0;
		bad |= setgroups(1, &g) != 0;
		bad |= setresgid(0, 0, 0) != 0 || setresuid(0, 0, 0) != 0;
	}
	for (int i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	if (bad)
		fprintf(stderr, "stress setxid: a uid/gid change failed: %s\n", strerror(errno));
	return bad;
}

/* Spins with a CFA rule of rsp + 1 MiB: off the top of any thread's stack. */
__attribute__((noinline)) static void bad_cfi_spin(void)
{
	double end = cpu_seconds() + 0.5;
	while (cpu_seconds() < end) {
		long n = 2000000;
		__asm__ volatile(".cfi_remember_state\n\t"
				 ".cfi_def_cfa_offset 1048576\n"
				 "1:\n\t"
				 "dec %0\n\t"
				 "jnz 1b\n\t"
				 ".cfi_restore_state"
				 : "+r"(n));
	}
}

static int run_threads(void *(*fn)(void *), int n)
{
	pthread_t t[16];
	for (int i = 0; i < n; i++)
		if (pthread_create(&t[i], NULL, fn, (void *)(size_t)i))
			return 1;
	for (int i = 0; i < n; i++)
		pthread_join(t[i], NULL);
	return 0;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";
	if (!strcmp(mode, "malloc"))
		return run_threads(malloc_thread, 4);
	if (!strcmp(mode, "fork")) {
		for (int i = 0; i < 4; i++) {
			pid_t pid = fork();
			if (pid < 0)
				return 1;
			if (pid == 0) {
				work(0.2);
				exit(7);
			}
			work(0.05);
			int st;
			if (waitpid(pid, &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 7) {
				fprintf(stderr, "stress fork: child status %d\n", st);
				return 1;
			}
		}
		return 0;
	}
	if (!strcmp(mode, "churn")) {
		for (int i = 0; i < 300; i++)
			if (run_threads(short_thread, 8))
				return 1;
		return 0;
	}
	if (!strcmp(mode, "vary")) {
		double end = cpu_seconds() + 0.5;
		for (int d = 0; cpu_seconds() < end; d = (d + 1) % 2000)
			sink += vary_down(100 + d, 10000);
		return 0;
	}
	if (!strcmp(mode, "churnmem")) {
		struct timespec t0, t;
		clock_gettime(CLOCK_MONOTONIC, &t0);
		do {
			if (run_threads(tiny_thread, 4))
				return 1;
			clock_gettime(CLOCK_MONOTONIC, &t);
		} while ((t.tv_sec - t0.tv_sec) * 1000000000L + (t.tv_nsec - t0.tv_nsec) <
			 1000000000L);
		FILE *f = fopen("/proc/self/status", "r");
		char line[256];
		while (f && fgets(line, sizeof(line), f))
			if (!strncmp(line, "VmHWM:", 6))
				printf("VmHWM %ld\n", strtol(line + 6, NULL, 10));
		if (f)
			fclose(f);
		return 0;
	}
	if (!strcmp(mode, "exec")) {
		int n = argc > 2 ? atoi(argv[2]) : 0;
		work(0.1);
		if (n > 0) {
			char next[16];
			snprintf(next, sizeof(next), "%d", n - 1);
			execl("/proc/self/exe", argv[0], "exec", next, (char *)NULL);
			perror("execl");
			return 1;
		}
		return 0;
	}
	if (!strcmp(mode, "block")) {
		sigset_t s;
		sigemptyset(&s);
		sigaddset(&s, SIGPROF);
		for (int i = 0; i < 200; i++) {
			sigprocmask(SIG_BLOCK, &s, NULL);
			work(0.002);
			sigprocmask(SIG_UNBLOCK, &s, NULL);
			work(0.002);
		}
		return 0;
	}
	if (!strcmp(mode, "blockall")) {
		sigset_t s, old;
		sigfillset(&s);
		for (int i = 0; i < 200; i++) {
			pthread_sigmask(SIG_BLOCK, &s, &old);
			work(0.002);
			pthread_sigmask(SIG_SETMASK, &old, NULL);
			work(0.002);
		}
		return 0;
	}
	if (!strcmp(mode, "trap"))
		return trap_mode();
	if (!strcmp(mode, "trapdfl")) {
		work(0.5);
		raise(SIGTRAP);
		return 0;
	}
	if (!strcmp(mode, "ownprof")) {
		work(0.2);
		struct sigaction sa;
		memset(&sa, 0, sizeof(sa));
		sa.sa_handler = own_handler;
		sigaction(SIGPROF, &sa, NULL);
		struct itimerval it = {{0, 10000}, {0, 10000}};
		setitimer(ITIMER_PROF, &it, NULL);
		/* until 10 ticks came, within 3 s of CPU: on a busy machine the
		 * kernel fires this 10 ms ITIMER_PROF far less often than every
		 * 10 ms of CPU, alone as profiled (hostile sigsave saw 0-9 in
		 * 0.2 s where a quiet machine gives 20) */
		for (double end = cpu_seconds() + 3.0; own_ticks < 10 && cpu_seconds() < end;)
			work(0.01);
		work(0.2);
		memset(&it, 0, sizeof(it));
		setitimer(ITIMER_PROF, &it, NULL);
		printf("ownprof: %d ticks\n", (int)own_ticks);
		return own_ticks >= 10 ? 0 : 1;
	}
	if (!strcmp(mode, "badcfi")) {
		bad_cfi_spin();
		return 0;
	}
	if (!strcmp(mode, "setxid"))
		return setxid_mode();
	if (!strcmp(mode, "errno")) {
		double end = cpu_seconds() + 1.0;
		while (cpu_seconds() < end) {
			errno = 12345;
			for (volatile long i = 0; i < 200000; i++)
				;
			/* errno is memory the handler may write: without this the
			 * compiler, seeing no call since the store, folds the check */
			__asm__ volatile("" ::: "memory");
			if (errno != 12345) {
				fprintf(stderr, "stress errno: errno changed to %d\n", errno);
				return 1;
			}
		}
		return 0;
	}
	if (!strcmp(mode, "segv")) {
		work(0.6);
		volatile int *p = NULL;
		return *p;
	}
	if (!strcmp(mode, "abort")) {
		work(0.6);
		abort();
	}
	if (!strcmp(mode, "thread_exit")) {
		pthread_t t;
		pthread_create(&t, NULL, exit_thread, NULL);
		work(5);
		return 0;
	}
	if (!strcmp(mode, "sleep")) {
		work(0.6);
		sleep(30);
		return 0;
	}
	if (!strcmp(mode, "exit")) {
		work(0.2);
		return argc > 2 ? atoi(argv[2]) : 0;
	}
	fprintf(stderr, "usage: stress MODE (see the source)\n");
	return 2;
}
