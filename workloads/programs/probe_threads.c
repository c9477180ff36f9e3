/*
 * probe_threads - many threads alive at once, a few of them working.
 *
 *   probe_threads N WORKERS SECONDS [exit]
 *
 * Starts N threads and waits until all of them run, so that N are alive
 * together. Then WORKERS of them, spread evenly over the creation order
 * with the last one created among them, each burn SECONDS of their own CPU
 * time in worker_burn(); the others sleep. All end together, or with
 * "exit", main returns while the others still wait (exit ends them).
 *
 * stdout says what ran (the same with and without a profiler); stderr gets
 * "cpu_ns X", the CPU time all the program's threads used, each read from
 * its own clock at its end (main's included), which a profile's CPU total
 * is compared against.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "workloads/programs/thread_cpu.h"

static pthread_barrier_t all_started, all_done;
static _Atomic uint64_t cpu_ns_total;
static _Atomic int threads_counted;
static double burn_s;
static volatile uint64_t sink;

static uint64_t thread_cpu_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

__attribute__((noinline)) void worker_burn(double seconds)
{
	double end = cpu_seconds() + seconds;
	uint64_t x = 1;
	while (cpu_seconds() < end)
		for (int i = 0; i < 20000; i++)
			x = x * 6364136223846793005u + 1442695040888963407u;
	sink += x;
}

static void *run(void *arg)
{
	int works = (int)(intptr_t)arg;
	pthread_barrier_wait(&all_started);
	if (works)
		worker_burn(burn_s);
	atomic_fetch_add(&cpu_ns_total, thread_cpu_ns());
	atomic_fetch_add(&threads_counted, 1);
	pthread_barrier_wait(&all_done);
	return NULL;
}

int main(int argc, char **argv)
{
	bool leave = argc == 5 && !strcmp(argv[4], "exit");
	if (argc != 4 && !leave) {
		fprintf(stderr, "usage: probe_threads N WORKERS SECONDS [exit]\n");
		return 2;
	}
	int n = atoi(argv[1]), workers = atoi(argv[2]);
	burn_s = atof(argv[3]);
	if (n < 1 || workers < 0 || workers > n || burn_s < 0) {
		fprintf(stderr, "probe_threads: bad arguments\n");
		return 2;
	}
	pthread_t *th = calloc((size_t)n, sizeof(*th));
	if (!th)
		return 1;
	pthread_barrier_init(&all_started, NULL, (unsigned)n + 1);
	pthread_barrier_init(&all_done, NULL, (unsigned)n + 1);
	/* thread i works when it is one of the WORKERS spread evenly, counted
	 * from the last one created */
	int every = workers ? n / workers : 0;
	for (int i = 0; i < n; i++) {
		int k = n - 1 - i;
		int works = workers && k % every == 0 && k / every < workers;
		int rc = pthread_create(&th[i], NULL, run, (void *)(intptr_t)works);
		if (rc) {
			fprintf(stderr, "probe_threads: thread %d: %s\n", i, strerror(rc));
			return 1; /* the barrier can't be met: end here */
		}
	}
	pthread_barrier_wait(&all_started);
	printf("%d threads alive together, %d working %.2f s each\n", n, workers, burn_s);
	if (leave) {
		/* every thread has counted its CPU time, and waits */
		while (atomic_load(&threads_counted) < n)
			nanosleep(&(struct timespec){0, 1000000}, NULL);
		atomic_fetch_add(&cpu_ns_total, thread_cpu_ns());
		fprintf(stderr, "cpu_ns %llu\n", (unsigned long long)atomic_load(&cpu_ns_total));
		exit(0);
	}
	atomic_fetch_add(&cpu_ns_total, thread_cpu_ns());
	pthread_barrier_wait(&all_done);
	for (int i = 0; i < n; i++)
		pthread_join(th[i], NULL);
	fprintf(stderr, "cpu_ns %llu\n", (unsigned long long)atomic_load(&cpu_ns_total));
	free(th);
	return 0;
}
