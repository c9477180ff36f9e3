/*
 * recurse.c - deep recursion: recurse(depth) calls itself depth times, then
 * spins at the bottom. `recurse 150` must unwind to main in full (perf's
 * 8 KB stack copy loses these); `recurse 700` is deeper than the default
 * max depth of 512 and must come out truncated and marked.
 * Built twice: with frame pointers and with -fomit-frame-pointer.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

volatile double recurse_sink;

static double cpu_seconds(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

__attribute__((noinline)) void recurse_bottom(double end)
{
	while (cpu_seconds() < end) {
		double x = 0;
		for (long i = 0; i < 100000; i++)
			x += (double)i * 0.5;
		recurse_sink += x;
	}
}

int recurse(int depth, double end);

/* Called through a volatile pointer so that -O2 can't turn the recursion into a loop. */
int (*volatile recurse_next)(int, double) = recurse;

__attribute__((noinline)) int recurse(int depth, double end)
{
	if (depth <= 1) {
		recurse_bottom(end);
		return 1;
	}
	return recurse_next(depth - 1, end) + 1;
}

int main(int argc, char **argv)
{
	int depth = argc > 1 ? atoi(argv[1]) : 150;
	double secs = argc > 2 ? atof(argv[2]) : 1.0;
	int r = recurse(depth, cpu_seconds() + secs);
	printf("recurse: %d\n", r);
	return r == depth ? 0 : 1;
}
