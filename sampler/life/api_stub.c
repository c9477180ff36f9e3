/*
 * api_stub.c - libstackprof-api.so: the stackprof.h API as no-ops, for
 * programs that call it and run without the profiler. Under LD_PRELOAD the
 * real definitions in libstackprof.so come first in symbol lookup.
 */
#include "sampler/life/stackprof.h"

#include <stddef.h>

void stackprof_start(void)
{
}

void stackprof_stop(void)
{
}

void stackprof_flush(void)
{
}

int stackprof_range_push(const char *name)
{
	return -1;
}

int stackprof_range_pop(void)
{
	return -1;
}

int stackprof_range_push_flags(const char *name, unsigned flags)
{
	return -1;
}

int stackprof_range_push_python(const char *name, unsigned flags, unsigned py_depth)
{
	return -1;
}

int stackprof_schedule(unsigned wait, unsigned warmup, unsigned active, unsigned repeat)
{
	return active ? 0 : -1;
}

long stackprof_step(void)
{
	static long step;
	return ++step;
}

int stackprof_window_begin(void)
{
	return -1;
}

int stackprof_window_end(void)
{
	return -1;
}

int stackprof_active(void)
{
	return 0;
}
