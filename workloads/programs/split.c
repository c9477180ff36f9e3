/*
 * split.c - a multi-threaded program whose per-function CPU split is known,
 * because it measures it: every call of a work function is timed with the
 * thread's own CPU clock, and the true shares are printed at the end.
 *
 *   thread "split-1x" runs work units of split_a / split_b / split_c in the
 *   proportion 5 : 3 : 2 (by work), in rounds of random order and length;
 *   thread "split-3x" does three times as many units as split-1x.
 *
 * Output (stdout), one line per function and thread:
 *   truth func split_a 0.5012
 *   truth thread split-1x 1.234 (CPU seconds)
 * Usage: split [SECONDS_OF_1X_THREAD] (default 2).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define NOINLINE __attribute__((noinline))

static volatile double split_sink;

static double thread_cpu(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static NOINLINE void spin(long n)
{
	double x = 0;
	for (long i = 0; i < n; i++)
		x += (double)i * 0.5;
	split_sink += x;
}

NOINLINE void split_a(long n)
{
	spin(n);
}

NOINLINE void split_b(long n)
{
	spin(n);
}

NOINLINE void split_c(long n)
{
	spin(n);
}

struct split_arg {
	const char *name;
	long rounds;
	double cpu[3];
	double total;
};

/*
 * One round is ~1 ms of work, interleaved so that no function gets a phase
 * of its own. Each round's order and length are random (a factor of 0.5 to
 * 1.5, the same for the three): a program that repeats exactly would be
 * sampled at the same few points of its period by any fixed-period sampler
 * whose period divides it (1 ms rounds against 1 kHz or 4 kHz here), and
 * the test would measure that aliasing, not the profiler's accuracy.
 */
#define SPLIT_UNIT 40000L

/* xorshift: the program's own random numbers, with no state shared with libc */
static uint64_t split_rand(uint64_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	return *x;
}

static void *split_thread(void *p)
{
	struct split_arg *a = p;
	pthread_setname_np(pthread_self(), a->name);
	void (*fn[3])(long) = {split_a, split_b, split_c};
	const long work[3] = {5 * SPLIT_UNIT, 3 * SPLIT_UNIT, 2 * SPLIT_UNIT};
	uint64_t rnd = 0x9e3779b97f4a7c15ull ^ (uint64_t)(uintptr_t)a;
	double t0 = thread_cpu();
	for (long r = 0; r < a->rounds; r++) {
		/* a random order of the three, and a random length for the round */
		int order[3] = {0, 1, 2};
		for (int k = 2; k > 0; k--) {
			int j = (int)(split_rand(&rnd) % (uint64_t)(k + 1));
			int tmp = order[k];
			order[k] = order[j];
			order[j] = tmp;
		}
		double scale = 0.5 + (double)(split_rand(&rnd) % 1024) / 1024.0;
		for (int i = 0; i < 3; i++) {
			int k = order[i];
			double s = thread_cpu();
			fn[k]((long)(scale * (double)work[k]));
			a->cpu[k] += thread_cpu() - s;
		}
	}
	a->total = thread_cpu() - t0;
	return NULL;
}

int main(int argc, char **argv)
{
	double secs = argc > 1 ? atof(argv[1]) : 2.0;
	/* calibrate: how many rounds make `secs` of CPU */
	struct split_arg cal = {.name = "split-cal", .rounds = 20};
	double c0 = thread_cpu();
	split_thread(&cal);
	double per_round = (thread_cpu() - c0) / 20;
	long rounds = (long)(secs / per_round);
	if (rounds < 10)
		rounds = 10;
	pthread_setname_np(pthread_self(), "split-main");

	struct split_arg one = {.name = "split-1x", .rounds = rounds};
	struct split_arg three = {.name = "split-3x", .rounds = 3 * rounds};
	pthread_t t1, t3;
	if (pthread_create(&t1, NULL, split_thread, &one) ||
	    pthread_create(&t3, NULL, split_thread, &three)) {
		fprintf(stderr, "split: pthread_create failed\n");
		return 1;
	}
	pthread_join(t1, NULL);
	pthread_join(t3, NULL);
	const char *names[3] = {"split_a", "split_b", "split_c"};
	double sum = 0;
	for (int k = 0; k < 3; k++)
		sum += one.cpu[k] + three.cpu[k];
	for (int k = 0; k < 3; k++)
		printf("truth func %s %.5f\n", names[k], (one.cpu[k] + three.cpu[k]) / sum);
	printf("truth thread split-1x %.5f\n", one.total);
	printf("truth thread split-3x %.5f\n", three.total);
	return 0;
}
