/*
 * handler_cost.c - the driver of bench/handler-cost.sh: a fixed amount of
 * work done at the bottom of a stack of known depth, timed with the thread's
 * own CPU clock.
 *
 *   handler_cost DEPTH ITERS
 *
 * recurses DEPTH - 1 times through a noinline function (one real frame each:
 * a volatile local and work after the call keep the compiler from turning
 * the recursion into a loop or a tail call), then runs ITERS iterations of a
 * floating-point loop, and prints
 *
 *   depth D iters N thread_cpu_ns T process_cpu_ns P
 *
 * T is CLOCK_THREAD_CPUTIME_ID around the recursion and the loop: the work,
 * plus whatever signal delivery and a profiler's handler added to this
 * thread. P is CLOCK_PROCESS_CPUTIME_ID over the same span, which also holds
 * a profiler's helper threads (stackprof's writer). Running it with and
 * without a profiler and dividing the difference by the samples taken gives
 * the cost of one sample.
 *
 * HC_ALARM=SECONDS in the environment stops the run after that much wall
 * time (SIGALRM, default action): a profiler whose handler takes a whole
 * sampling period would otherwise keep the driver busy for ever.
 *
 * Build: cc -O2 -g -fno-omit-frame-pointer -o handler_cost handler_cost.c
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))

static volatile double hc_sink;

static long long hc_now(clockid_t clk)
{
	struct timespec ts;
	clock_gettime(clk, &ts);
	return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* The work: no calls, so every sample's leaf is here, at the bottom of the stack. */
static NOINLINE double hc_spin(long n)
{
	double x = 0;
	for (long i = 0; i < n; i++)
		x += (double)i * 0.5;
	return x;
}

NOINLINE double hc_recurse(int depth, long n)
{
	volatile int frame = depth; /* a stack slot: this call keeps its frame */
	double r;
	if (depth <= 1)
		r = hc_spin(n);
	else
		r = hc_recurse(depth - 1, n);
	return r + frame;
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: handler_cost DEPTH ITERS\n");
		return 2;
	}
	int depth = atoi(argv[1]);
	long iters = atol(argv[2]);
	if (depth < 1 || depth > 100000 || iters < 1) {
		fprintf(stderr, "handler_cost: DEPTH must be 1..100000 and ITERS positive\n");
		return 2;
	}
	const char *lim = getenv("HC_ALARM");
	if (lim && atoi(lim) > 0)
		alarm((unsigned)atoi(lim));
	long long t0 = hc_now(CLOCK_THREAD_CPUTIME_ID), p0 = hc_now(CLOCK_PROCESS_CPUTIME_ID);
	hc_sink = hc_recurse(depth, iters);
	long long t1 = hc_now(CLOCK_THREAD_CPUTIME_ID), p1 = hc_now(CLOCK_PROCESS_CPUTIME_ID);
	printf("depth %d iters %ld thread_cpu_ns %lld process_cpu_ns %lld\n", depth, iters, t1 - t0,
	       p1 - p0);
	return 0;
}
