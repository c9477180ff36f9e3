/*
 * fakepy.c - a program that looks like a CPython stackprof does not know:
 * it exports the symbols stackprof finds an interpreter by (_PyRuntime,
 * Py_Version, PyCode_Type, _PyEval_EvalFrameDefault), with a version or a
 * layout that must be refused. Built once per case (FAKE_VERSION, the
 * Py_Version word; FAKE_RT_SIZE, the runtime's size; FAKE_COOKIE, 0 none,
 * 1 a 3.13 _Py_DebugOffsets cookie of a free-threaded build).
 *
 * Burns about 0.3 s of CPU in fake_work, prints "fakepy done" and exits
 * with status 3, so that a test sees its status pass through unchanged.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#ifndef FAKE_VERSION
#error "build with -DFAKE_VERSION=0x030b02f0 (and FAKE_RT_SIZE, FAKE_COOKIE)"
#endif

/* 0xMMmmppLS: major, minor, micro, release level and serial */
const uint32_t Py_Version = FAKE_VERSION;

/* the _Py_DebugOffsets head: cookie, version, free_threaded */
struct fake_runtime {
	char cookie[8];
	uint64_t version;
	uint64_t free_threaded;
	char rest[FAKE_RT_SIZE - 24];
};

struct fake_runtime _PyRuntime = {
#if FAKE_COOKIE
    .cookie = "xdebugpy",
    .version = FAKE_VERSION,
    .free_threaded = 1,
#else
    .cookie = "",
#endif
};

char PyCode_Type[512];

/* never called: stackprof only takes its address and size */
void _PyEval_EvalFrameDefault(void);
void _PyEval_EvalFrameDefault(void)
{
	PyCode_Type[0]++;
}

static double cpu_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

double fake_work(double secs);

__attribute__((noinline)) double fake_work(double secs)
{
	volatile double x = 0;
	double end = cpu_s() + secs;
	while (cpu_s() < end)
		for (int i = 0; i < 10000; i++)
			x += i * 0.5;
	return x;
}

int main(void)
{
	fake_work(0.3);
	printf("fakepy done (%s)\n", _PyRuntime.cookie[0] ? "cookie" : "no cookie");
	return 3;
}
