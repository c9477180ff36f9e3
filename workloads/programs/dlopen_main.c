/*
 * dlopen_main.c - works in its own code, then dlopen()s a plugin (argv[1])
 * and works in it: frames from the plugin must be named and unwind to main.
 * With argv[2] = "loop", it then dlopen()s and dlclose()s the plugin in a
 * loop on several threads (the stress test). With argv[2] = "brief", main
 * works argv[3] seconds of CPU (default 0.1) before the dlopen, the plugin
 * works for 1 ms of CPU and is closed, and main works on for 0.3 s: a
 * module that lived less than one drain interval (20 ms). With argv[2] =
 * "at", main works argv[3] seconds of CPU before the dlopen instead of 0.5
 * (a load at another phase of the writer's passes).
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "workloads/programs/thread_cpu.h"

static volatile double main_sink;

__attribute__((noinline)) void before_dlopen(double secs)
{
	double end = cpu_seconds() + secs;
	while (cpu_seconds() < end) {
		double x = 0;
		for (long i = 0; i < 100000; i++)
			x += (double)i;
		main_sink += x;
	}
}

static const char *plugin_path;

static void *loop_thread(void *arg)
{
	long n = (long)arg;
	for (long i = 0; i < n; i++) {
		void *h = dlopen(plugin_path, RTLD_NOW | RTLD_LOCAL);
		if (!h) {
			fprintf(stderr, "dlopen: %s\n", dlerror());
			exit(1);
		}
		void (*work)(long) = (void (*)(long))dlsym(h, "plugin_work");
		work(5);
		dlclose(h);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: dlopen_main PLUGIN.so [loop]\n");
		return 2;
	}
	plugin_path = argv[1];
	if (argc > 2 && !strcmp(argv[2], "loop")) {
		pthread_t t[3];
		for (long i = 0; i < 3; i++)
			pthread_create(&t[i], NULL, loop_thread, (void *)200L);
		for (int i = 0; i < 3; i++)
			pthread_join(t[i], NULL);
		printf("dlopen_main: loop done\n");
		return 0;
	}
	bool brief = argc > 2 && !strcmp(argv[2], "brief");
	bool at = argc > 3 && !strcmp(argv[2], "at");
	before_dlopen(at ? atof(argv[3]) : brief ? (argc > 3 ? atof(argv[3]) : 0.1) : 0.5);
	void *h = dlopen(plugin_path, RTLD_NOW);
	if (!h) {
		fprintf(stderr, "dlopen: %s\n", dlerror());
		return 1;
	}
	void (*work)(long) = (void (*)(long))dlsym(h, "plugin_work");
	double end = cpu_seconds() + (brief ? 0.001 : 1.0);
	while (cpu_seconds() < end)
		work(brief ? 1 : 10);
	if (brief) {
		dlclose(h);
		before_dlopen(0.3);
	}
	printf("dlopen_main: done\n");
	return 0;
}
