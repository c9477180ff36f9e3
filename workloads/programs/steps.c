/*
 * steps.c - a loop of training steps for the toy event source
 * (tests/sources/steps.c): N steps, each 20 ms of CPU in spin(), called
 * by train_step(); then end_step() calls stackprof_step(). Linked with
 * libstackprof-api.so, so it runs with or without the profiler.
 *
 *   steps N [MS]   N steps of MS ms of CPU each (default 40 steps of 20 ms);
 *                  MS 0: steps back to back, so that a CPU sample's signal
 *                  lands inside a step's own capture now and then
 */
#include <stdio.h>
#include <stdlib.h>

#include "workloads/programs/thread_cpu.h"

#include "sampler/life/stackprof.h"

static volatile double sink;

__attribute__((noinline)) static void spin(double secs)
{
	double end = cpu_seconds() + secs;
	while (cpu_seconds() < end)
		for (int i = 0; i < 10000; i++)
			sink += i * 0.5;
}

__attribute__((noinline)) static void train_step(double secs)
{
	if (secs > 0)
		spin(secs);
	else
		for (int i = 0; i < 2000; i++)
			sink += i * 0.25;
}

__attribute__((noinline)) static long end_step(void)
{
	return stackprof_step();
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 40;
	double secs = argc > 2 ? atof(argv[2]) / 1000 : 0.02;
	long last = 0;
	for (int i = 0; i < n; i++) {
		train_step(secs);
		last = end_step();
	}
	printf("steps: %d (the API counted %ld)\n", n, last);
	return 0;
}
