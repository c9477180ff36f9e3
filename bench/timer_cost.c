/*
 * timer_cost.c - what one SIGPROF costs the sampled thread with each of
 * stackprof's timer sources, with an empty handler: no unwinding, no ring.
 * It explains the fixed part of bench/handler-cost.sh's per-sample cost.
 *
 *   timer_cost MODE HZ SECONDS
 *
 * MODE:
 *   none        no timer (the baseline)
 *   posix       timer_create(CLOCK_THREAD_CPUTIME_ID) + SIGEV_THREAD_ID
 *   perf        perf_event task-clock, F_SETSIG SIGPROF to the thread, as
 *               sampler/sources/perf.c arms its perf-task-clock timer; the handler
 *               read()s the counter (as stackprof's handler did until it took
 *               the weight from the thread CPU clock)
 *   perf-noread the same without the read() in the handler
 *   perf-nosig  the same event sampling at HZ into a 1-page ring buffer, no
 *               signal at all (what `perf record -e cpu-clock` costs the
 *               target, minus perf's own process)
 *   trap        the same event with attr.sigtrap: the kernel sends SIGTRAP
 *               to the thread as task work (stackprof's perf-sigtrap)
 *
 * It spins for SECONDS of thread CPU time in slices of a fixed iteration
 * count and prints "MODE HZ signals N cpu_ns C iters_per_cpu_s R". The time
 * one timer event costs is (1 - R / R_none) / (events per CPU second), with
 * R_none from a `none` run next to it (bench/handler-cost.sh --timers does this).
 *
 * Build: cc -O2 -o timer_cost timer_cost.c
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <linux/perf_event.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static volatile long tc_signals;
static int tc_fd = -1;
static int tc_read;
static volatile double tc_sink;

static void tc_handler(int sig, siginfo_t *si, void *uc)
{
	(void)sig, (void)si, (void)uc;
	tc_signals++;
	if (tc_read) {
		uint64_t v;
		if (read(tc_fd, &v, sizeof(v)) < 0)
			tc_signals += 0;
	}
}

static long long tc_cpu(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static int tc_perf_open(uint64_t period, int exclude_kernel, int trap)
{
	struct perf_event_attr a;
	memset(&a, 0, sizeof(a));
	a.size = sizeof(a);
	a.type = PERF_TYPE_SOFTWARE;
	a.config = PERF_COUNT_SW_TASK_CLOCK;
	a.sample_period = period;
	a.sample_type = PERF_SAMPLE_IP;
	a.disabled = 1;
	a.exclude_kernel = exclude_kernel;
	a.exclude_hv = 1;
	a.wakeup_events = 1;
	if (trap) {
		a.sigtrap = 1;
		a.remove_on_exec = 1;
	}
	return (int)syscall(SYS_perf_event_open, &a, (pid_t)syscall(SYS_gettid), -1, -1, 0);
}

int main(int argc, char **argv)
{
	if (argc != 4) {
		fprintf(
		    stderr,
		    "usage: timer_cost none|posix|perf|perf-noread|perf-nosig|trap HZ SECONDS\n");
		return 2;
	}
	const char *mode = argv[1];
	long hz = atol(argv[2]);
	double secs = atof(argv[3]);
	uint64_t period = 1000000000ull / (uint64_t)(hz > 0 ? hz : 1);

	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = tc_handler;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigfillset(&sa.sa_mask);
	sigaction(SIGPROF, &sa, NULL);
	sigaction(SIGTRAP, &sa, NULL);

	if (!strcmp(mode, "posix")) {
		struct sigevent sev;
		timer_t id;
		memset(&sev, 0, sizeof(sev));
		sev.sigev_notify = SIGEV_THREAD_ID;
		sev.sigev_signo = SIGPROF;
		sev._sigev_un._tid = (pid_t)syscall(SYS_gettid);
		struct itimerspec its = {.it_interval = {0, (long)period},
					 .it_value = {0, (long)period}};
		if (timer_create(CLOCK_THREAD_CPUTIME_ID, &sev, &id) < 0 ||
		    timer_settime(id, 0, &its, NULL) < 0) {
			perror("timer");
			return 1;
		}
	} else if (!strncmp(mode, "perf", 4) || !strcmp(mode, "trap")) {
		int trap = !strcmp(mode, "trap");
		tc_fd = tc_perf_open(period, 0, trap);
		if (tc_fd < 0)
			tc_fd = tc_perf_open(period, 1, trap);
		if (tc_fd < 0) {
			perror("perf_event_open");
			return 1;
		}
		if (trap) {
			/* nothing to set up: the kernel signals the thread itself */
		} else if (!strcmp(mode, "perf-nosig")) {
			/* a ring buffer for the samples; never read: overflow records are just lost
			 */
			void *m =
			    mmap(NULL, 2 * 4096, PROT_READ | PROT_WRITE, MAP_SHARED, tc_fd, 0);
			if (m == MAP_FAILED) {
				perror("mmap");
				return 1;
			}
		} else {
			struct f_owner_ex own = {.type = F_OWNER_TID,
						 .pid = (pid_t)syscall(SYS_gettid)};
			tc_read = !strcmp(mode, "perf");
			if (fcntl(tc_fd, F_SETSIG, SIGPROF) < 0 ||
			    fcntl(tc_fd, F_SETOWN_EX, &own) < 0 ||
			    fcntl(tc_fd, F_SETFL, O_ASYNC | O_NONBLOCK) < 0) {
				perror("fcntl");
				return 1;
			}
		}
		ioctl(tc_fd, PERF_EVENT_IOC_ENABLE, 0);
	} else if (strcmp(mode, "none")) {
		fprintf(stderr, "timer_cost: unknown mode %s\n", mode);
		return 2;
	}

	long long c0 = tc_cpu(), c = c0, end = c0 + (long long)(secs * 1e9);
	long slices = 0;
	while (c < end) {
		double x = 0;
		for (long i = 0; i < 1000000; i++)
			x += (double)i * 0.5;
		tc_sink += x;
		slices++;
		c = tc_cpu();
	}
	printf("%s %ld signals %ld cpu_ns %lld iters_per_cpu_s %.0f\n", mode, hz, tc_signals,
	       c - c0, slices * 1e6 / ((c - c0) / 1e9));
	return 0;
}
