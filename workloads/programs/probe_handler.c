/*
 * probe_handler - programs that meet the signal handler's entry in odd ways
 * (issue 30, points 4 and 8). Each prints a result that is the same on every
 * run, and exits 0 when it ran as it should.
 *
 *   rawclone N ITERS   N threads made with a raw clone(CLONE_VM |
 *                      CLONE_THREAD | CLONE_SIGHAND | ...) without
 *                      CLONE_SETTLS: they share the main thread's TLS (its
 *                      errno, its stackprof slot). Each computes a checksum
 *                      of ITERS rounds and leaves it in shared memory; the
 *                      main thread computes too, then waits for each with a
 *                      futex on the tid the kernel clears at its exit.
 *   cancel             a thread whose SIGTRAP handler leaves by siglongjmp
 *                      (three raise(SIGTRAP)), then waits at a cancellation
 *                      point and is cancelled: its join must report
 *                      PTHREAD_CANCELED.
 */
#define _GNU_SOURCE
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

/* Pure computation, no call into libc: a raw clone thread has no TLS of
 * its own, so it may not touch errno or anything else glibc keeps there. */
__attribute__((noinline)) uint64_t probe_spin(uint64_t seed, uint64_t iters)
{
	uint64_t x = seed | 1;
	for (uint64_t i = 0; i < iters; i++) {
		x = x * 6364136223846793005ull + 1442695040888963407ull;
		x ^= x >> 29;
		__asm__ volatile("" : "+r"(x));
	}
	return x;
}

#define RAW_MAX	  16
#define RAW_STACK (256 * 1024)

struct raw {
	uint64_t seed, iters, result;
	volatile pid_t tid; /* set by the kernel at clone, cleared at exit */
};

static int raw_child(void *arg)
{
	struct raw *r = arg;
	r->result = probe_spin(r->seed, r->iters);
	return 0; /* glibc's clone() ends the thread with SYS_exit */
}

static int mode_rawclone(int n, uint64_t iters)
{
	if (n < 1 || n > RAW_MAX)
		return 2;
	struct raw *rs = mmap(NULL, sizeof(struct raw) * RAW_MAX, PROT_READ | PROT_WRITE,
			      MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (rs == MAP_FAILED)
		return 1;
	int flags = CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND | CLONE_THREAD |
		    CLONE_SYSVSEM | CLONE_PARENT_SETTID | CLONE_CHILD_CLEARTID;
	for (int i = 0; i < n; i++) {
		char *stack = mmap(NULL, RAW_STACK, PROT_READ | PROT_WRITE,
				   MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
		if (stack == MAP_FAILED)
			return 1;
		rs[i].seed = 1000 + i;
		rs[i].iters = iters;
		if (clone(raw_child, stack + RAW_STACK, flags, &rs[i], &rs[i].tid, NULL,
			  &rs[i].tid) < 0) {
			perror("probe_handler: clone");
			return 1;
		}
	}
	uint64_t mine = probe_spin(7, iters);
	for (int i = 0; i < n; i++) {
		pid_t t;
		while ((t = rs[i].tid) != 0)
			syscall(SYS_futex, &rs[i].tid, FUTEX_WAIT, t, NULL, NULL, 0);
	}
	uint64_t sum = mine;
	for (int i = 0; i < n; i++)
		sum ^= rs[i].result * (uint64_t)(i + 3);
	/* the same numbers without any thread: what each must have found */
	uint64_t want = probe_spin(7, iters);
	for (int i = 0; i < n; i++)
		want ^= probe_spin(1000 + i, iters) * (uint64_t)(i + 3);
	printf("rawclone: %d threads, checksum %016llx, %s\n", n, (unsigned long long)sum,
	       sum == want ? "as computed alone" : "WRONG");
	return sum == want ? 0 : 1;
}

static sigjmp_buf cancel_jb;
static volatile int cancel_ready;

static void on_trap(int sig)
{
	(void)sig;
	siglongjmp(cancel_jb, 1);
}

static void *cancel_thread(void *arg)
{
	(void)arg;
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_trap;
	sigaction(SIGTRAP, &sa, NULL);
	volatile int left = 0;
	for (volatile int i = 0; i < 3; i++)
		if (sigsetjmp(cancel_jb, 1) == 0)
			raise(SIGTRAP);
		else
			left++;
	cancel_ready = left;
	/* usleep is a cancellation point: the cancel acts here at once */
	for (int i = 0; i < 5000; i++)
		usleep(1000);
	return (void *)1;
}

static int mode_cancel(void)
{
	pthread_t th;
	if (pthread_create(&th, NULL, cancel_thread, NULL) != 0)
		return 1;
	while (!cancel_ready)
		usleep(1000);
	pthread_cancel(th);
	void *ret;
	pthread_join(th, &ret);
	printf("cancel: the handler left by siglongjmp %d times; the thread %s\n", cancel_ready,
	       ret == PTHREAD_CANCELED ? "was cancelled" : "was NOT cancelled");
	return ret == PTHREAD_CANCELED ? 0 : 1;
}

int main(int argc, char **argv)
{
	if (argc >= 4 && !strcmp(argv[1], "rawclone"))
		return mode_rawclone(atoi(argv[2]), strtoull(argv[3], NULL, 10));
	if (argc >= 2 && !strcmp(argv[1], "cancel"))
		return mode_cancel();
	fprintf(stderr, "usage: probe_handler rawclone N ITERS | cancel\n");
	return 2;
}
