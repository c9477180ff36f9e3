/*
 * chain.c - a known call shape for end-to-end tests (perf's leafloop idea):
 *
 *   main -> chain_a -> chain_b -> chain_c -> leaf_spin      (noinline chain)
 *   main -> chain_sort -> qsort (libc) -> cmp_cb -> leaf_spin (callback through libc)
 *   main -> chain_inl, where inl_helper is always_inline     (an inlined frame)
 *   main -> chain_signal -> raise (libc) -> [signal frame] -> on_signal -> leaf_spin
 *                                          (a signal handler's work, unwound
 *                                           through the kernel's signal frame)
 *
 * Every function is noinline except the always_inline helper, and the run is
 * bounded by a CPU-time budget (argv[1] seconds, default 1).
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define NOINLINE __attribute__((noinline))

volatile double chain_sink;

NOINLINE void leaf_spin(long n)
{
	double x = 0;
	for (long i = 0; i < n; i++)
		x += (double)i * 0.5;
	chain_sink += x;
}

NOINLINE void chain_c(void)
{
	leaf_spin(200000);
}

NOINLINE void chain_b(void)
{
	chain_c();
}

NOINLINE void chain_a(void)
{
	chain_b();
}

NOINLINE int cmp_cb(const void *a, const void *b)
{
	leaf_spin(2000);
	return *(const int *)a - *(const int *)b;
}

NOINLINE void chain_sort(void)
{
	int v[64];
	for (int i = 0; i < 64; i++)
		v[i] = (i * 37) % 64;
	qsort(v, 64, sizeof(v[0]), cmp_cb);
}

static inline __attribute__((always_inline)) void inl_helper(long n)
{
	double x = 0;
	for (long i = 0; i < n; i++)
		x += (double)i * 0.25;
	chain_sink += x;
}

NOINLINE void chain_inl(void)
{
	inl_helper(200000);
}

NOINLINE void on_signal(int sig)
{
	leaf_spin(200000);
}

NOINLINE void chain_signal(void)
{
	raise(SIGUSR1);
}

static double cpu_seconds(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	double budget = argc > 1 ? atof(argv[1]) : 1.0;
	double end = cpu_seconds() + budget;
	signal(SIGUSR1, on_signal);
	while (cpu_seconds() < end) {
		chain_a();
		chain_sort();
		chain_inl();
		chain_signal();
	}
	printf("chain: done\n");
	return 0;
}
