/*
 * api_user.c - a program that uses stackprof.h: named ranges and a step
 * schedule. Linked with libstackprof-api.so, so it runs with or without
 * the profiler.
 *
 *   api_user ranges     "model_inference" pushed in main, around
 *                       run_passes(), which pushes "LINEAR PASS" around
 *                       work_linear() and "CONV PASS" around work_conv():
 *                       each range belongs just inside its pusher
 *   api_user fresh      4 threads, each pushing 5,000 new range names
 *                       ~50 us of CPU apart, each once: samples that carry a range
 *                       the writer has not written yet
 *   api_user schedule   10 steps with schedule 2,1,3,1 (wait 2, warmup 1,
 *                       active 3, once): only steps 3..5 are sampled; every
 *                       step runs step_work(step) so the steps are told apart
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "workloads/programs/thread_cpu.h"

#include "sampler/life/stackprof.h"

static volatile double sink;

__attribute__((noinline)) static void burn(double secs)
{
	double end = cpu_seconds() + secs;
	while (cpu_seconds() < end) {
		double x = 0;
		for (long i = 0; i < 20000; i++)
			x += (double)i;
		sink += x;
	}
}

__attribute__((noinline)) void work_linear(void)
{
	burn(0.3);
}

__attribute__((noinline)) void work_conv(void)
{
	burn(0.3);
}

__attribute__((noinline)) void run_passes(void)
{
	stackprof_range_push("LINEAR PASS");
	work_linear();
	stackprof_range_pop();
	stackprof_range_push("CONV PASS");
	work_conv();
	stackprof_range_pop();
}

__attribute__((noinline)) void step_active(void)
{
	burn(0.1);
}

__attribute__((noinline)) void step_idle(void)
{
	burn(0.1);
}

#define FRESH_THREADS 4
#define FRESH_RANGES  5000

/* Takes a path of 16 calls spelled by the bits of i, so each range's
 * samples have a stack of their own (the writer has new stacks to write
 * while ranges appear), and runs one new range at its end. */
__attribute__((noinline)) static void fresh_path(long t, long i, int bit)
{
	if (bit == 16) {
		char name[32];
		snprintf(name, sizeof(name), "fresh %ld.%ld", t, i);
		stackprof_range_push(name);
		burn(50e-6);
		stackprof_range_pop();
	} else if (i >> bit & 1) {
		fresh_path(t, i, bit + 1);
		sink += 1;
	} else {
		fresh_path(t, i, bit + 1);
		sink += 2;
	}
}

static void *fresh(void *arg)
{
	for (long i = 0; i < FRESH_RANGES; i++)
		fresh_path((long)arg, i, 0);
	return NULL;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "ranges";
	if (!strcmp(mode, "ranges")) {
		stackprof_range_push("model_inference");
		run_passes();
		stackprof_range_pop();
		printf("api_user: ranges done (profiler %s)\n",
		       stackprof_active() ? "active" : "absent");
		return 0;
	}
	if (!strcmp(mode, "fresh")) {
		pthread_t th[FRESH_THREADS];
		for (long i = 0; i < FRESH_THREADS; i++)
			pthread_create(&th[i], NULL, fresh, (void *)i);
		for (long i = 0; i < FRESH_THREADS; i++)
			pthread_join(th[i], NULL);
		printf("api_user: fresh done\n");
		return 0;
	}
	if (!strcmp(mode, "schedule")) {
		stackprof_schedule(2, 1, 3, 1);
		for (int step = 0; step < 10; step++) {
			if (step >= 3 && step < 6)
				step_active();
			else
				step_idle();
			stackprof_step();
		}
		stackprof_flush();
		printf("api_user: schedule done\n");
		return 0;
	}
	return 2;
}
