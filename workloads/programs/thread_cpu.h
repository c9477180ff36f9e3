/*
 * thread_cpu.h - the calling thread's CPU time in seconds, for the test
 * programs that work a known amount of CPU per thread (stress, hostile,
 * exitcall, dlopen_main, api_user). chain and recurse count the whole
 * process's instead.
 */
#ifndef SP_WORKLOADS_THREAD_CPU_H
#define SP_WORKLOADS_THREAD_CPU_H

#include <time.h>

static inline double cpu_seconds(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

#endif
