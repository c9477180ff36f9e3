/*
 * timercost.c - what one interrupt of stackprof's default timer costs the
 * thread it lands on, on this host (timercost.h).
 *
 * The cost of a timer interrupt is the host's, not the program's: on a
 * bare machine a few microseconds, in a VM whatever the hypervisor takes
 * to program and deliver the timer (~20-50 us on AMD EPYC guests). It is
 * charged to the interrupted thread's CPU time, so a loop of fixed work
 * shows it: the same blocks of work take more CPU time with the timer on.
 * Blocks alternate off and on; the cost per signal is the difference of
 * the medians over the signals an "on" block took. The handler is empty,
 * so what is measured is the timer and the signal's round trip, not
 * stackprof's handler (whose cost `info` gives apart).
 */
#include "tools/timercost.h"
#include "symbolize/bidcache.h"

#include <errno.h>
#include <pthread.h>
#include <linux/perf_event.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#ifndef TRAP_PERF
#define TRAP_PERF 6
#endif

#define SP_TC_PERIOD_NS 500000ull /* 2 kHz: enough signals in a short block */
#define SP_TC_BLOCK_NS	20000000ull
#define SP_TC_ROUNDS	7

static volatile sig_atomic_t sp_tc_signals;

static void sp_tc_handler(int sig, siginfo_t *si, void *uc)
{
	(void)sig, (void)si, (void)uc;
	sp_tc_signals++;
}

static uint64_t sp_tc_cpu_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* n rounds of a dependency chain the compiler can't fold */
static __attribute__((noinline)) uint64_t sp_tc_work(uint64_t n)
{
	uint64_t x = 0x9e3779b97f4a7c15ull;
	for (uint64_t i = 0; i < n; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		__asm__ volatile("" : "+r"(x));
	}
	return x;
}

static int sp_tc_cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double sp_tc_median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), sp_tc_cmp);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* perf-sigtrap's event on the calling thread, disabled; fd or -errno */
static int sp_tc_open(void)
{
	struct perf_event_attr a;
	memset(&a, 0, sizeof(a));
	a.size = sizeof(a);
	a.type = PERF_TYPE_SOFTWARE;
	a.config = PERF_COUNT_SW_TASK_CLOCK;
	a.sample_period = SP_TC_PERIOD_NS;
	a.disabled = 1;
	a.exclude_hv = 1;
	a.sigtrap = 1;
	a.remove_on_exec = 1;
	a.sig_data = 0x5443; /* "TC" */
	long fd = syscall(SYS_perf_event_open, &a, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
	if (fd < 0) {
		a.exclude_kernel = 1; /* perf_event_paranoid 2 */
		fd = syscall(SYS_perf_event_open, &a, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
	}
	return fd < 0 ? -errno : (int)fd;
}

/* Whether this process is traced (a debugger would stop at every
 * SIGTRAP) or under seccomp (a filter may kill it for perf_event_open):
 * then nothing is measured, as the library would not use perf-sigtrap or
 * would probe it in a child first (sampler/sources/perfevent.c). */
static bool sp_tc_unsafe(void)
{
	char line[256];
	bool unsafe = false;
	FILE *f = fopen("/proc/self/status", "re");
	while (f && fgets(line, sizeof(line), f))
		if ((!strncmp(line, "TracerPid:", 10) && strtol(line + 10, NULL, 10) != 0) ||
		    (!strncmp(line, "Seccomp:", 8) && strtol(line + 8, NULL, 10) != 0))
			unsafe = true;
	if (f)
		fclose(f);
	return unsafe;
}

int sp_timercost_measure(struct sp_timercost *out)
{
	memset(out, 0, sizeof(*out));
	if (sp_tc_unsafe())
		return -EPERM;
	int fd = sp_tc_open();
	if (fd < 0)
		return fd;
	struct sigaction sa, old;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = sp_tc_handler;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigaction(SIGTRAP, &sa, &old);
	/* a perf signal that finds SIGTRAP blocked is forced through with
	 * the default action on kernels before 6.2: it is open meanwhile */
	sigset_t trap, oldmask;
	sigemptyset(&trap);
	sigaddset(&trap, SIGTRAP);
	pthread_sigmask(SIG_UNBLOCK, &trap, &oldmask);
	/* a block of about SP_TC_BLOCK_NS of CPU */
	uint64_t n = 1u << 16, t0 = sp_tc_cpu_ns();
	sp_tc_work(n);
	uint64_t dt = sp_tc_cpu_ns() - t0;
	n = dt ? n * SP_TC_BLOCK_NS / dt : n * 64;
	double off[SP_TC_ROUNDS], on[SP_TC_ROUNDS], sig[SP_TC_ROUNDS];
	/* round -1 warms the caches and the clock up, and is not kept */
	for (int r = -1; r < SP_TC_ROUNDS; r++) {
		t0 = sp_tc_cpu_ns();
		sp_tc_work(n);
		double b_off = (double)(sp_tc_cpu_ns() - t0);
		sp_tc_signals = 0;
		ioctl(fd, PERF_EVENT_IOC_ENABLE, 0);
		t0 = sp_tc_cpu_ns();
		sp_tc_work(n);
		double b_on = (double)(sp_tc_cpu_ns() - t0);
		ioctl(fd, PERF_EVENT_IOC_DISABLE, 0);
		if (r < 0)
			continue;
		off[r] = b_off;
		on[r] = b_on;
		sig[r] = sp_tc_signals;
	}
	close(fd);
	pthread_sigmask(SIG_SETMASK, &oldmask, NULL);
	sigaction(SIGTRAP, &old, NULL);
	double s = sp_tc_median(sig, SP_TC_ROUNDS);
	if (s < 1)
		return -EAGAIN;
	double d = sp_tc_median(on, SP_TC_ROUNDS) - sp_tc_median(off, SP_TC_ROUNDS);
	out->ns_per_signal = d > 0 ? d / s : 0;
	out->signals = (uint64_t)s * SP_TC_ROUNDS;
	out->cpu_ns = 0;
	for (int r = 0; r < SP_TC_ROUNDS; r++)
		out->cpu_ns += (uint64_t)(on[r] + off[r]);
	return 0;
}

/* "model | kernel": what the figure belongs to. A VM moved to another
 * host kind sees another model; a new kernel may program timers apart. */
static void sp_tc_key(char *key, size_t len)
{
	char model[256] = "unknown CPU", line[512];
	bool vm = false, named = false;
	FILE *f = fopen("/proc/cpuinfo", "re");
	while (f && fgets(line, sizeof(line), f)) {
		/* x86's model name; arm64 says only its part number */
		bool name = !strncmp(line, "model name", 10);
		if ((name || (!named && !strncmp(line, "CPU part", 8))) && strchr(line, ':')) {
			char *v = strchr(line, ':') + 1;
			v += strspn(v, " \t");
			v[strcspn(v, "\n")] = 0;
			snprintf(model, sizeof(model), "%s", v);
			named = true;
		}
		if (!strncmp(line, "flags", 5) && strstr(line, " hypervisor"))
			vm = true;
		if (name && vm)
			break;
	}
	if (f)
		fclose(f);
	struct utsname u;
	bool un = uname(&u) == 0;
	snprintf(key, len, "%s | %s | %s%s", model, un ? u.machine : "?",
		 un ? u.release : "unknown kernel", vm ? " | guest" : "");
	for (char *p = key; *p; p++)
		if (*p == '\t' || *p == '\n')
			*p = ' '; /* the file's separators */
}

int sp_timercost_host(const char *dir, bool keep, uint64_t *ns, bool *measured)
{
	char key[512], path[4096], line[1024];
	sp_tc_key(key, sizeof(key));
	*measured = false;
	if (dir && snprintf(path, sizeof(path), "%s/host-timer", dir) < (int)sizeof(path)) {
		FILE *f = fopen(path, "re");
		while (f && fgets(line, sizeof(line), f)) {
			char *tab = strchr(line, '\t');
			if (!tab)
				continue;
			*tab = 0;
			if (!strcmp(line, key)) {
				long long v = strtoll(tab + 1, NULL, 10);
				fclose(f);
				if (v < 0)
					return (int)v; /* it could not be measured here */
				*ns = (uint64_t)v;
				return 0;
			}
		}
		if (f)
			fclose(f);
	}
	struct sp_timercost c;
	int err = sp_timercost_measure(&c);
	*ns = err ? 0 : (uint64_t)(c.ns_per_signal + 0.5);
	*measured = !err;
	/* kept for the next run on this host, one line per host kind; a
	 * failure too (-errno), so that it is not tried on every run. A
	 * traced run or one under seccomp is not this host's answer. */
	if (keep && dir && err != -EPERM && sp_bidcache_mkdirs(path) == 0) {
		FILE *f = fopen(path, "ae");
		if (f) {
			fprintf(f, "%s\t%lld\t%lld\n", key, err ? (long long)err : (long long)*ns,
				(long long)time(NULL));
			fclose(f);
		}
	}
	return err;
}
