/*
 * empty_timer.c - a preload library that does what stackprof's timer does
 * and nothing else: one perf task-clock event on the main thread at
 * EMPTY_HZ (default 1000) and an empty handler. It prices the timer alone
 * on a real program (bench/ab.sh runs it under resnet18 --profile-ab, one
 * thread), where bench/timer_cost.c prices it on a spin loop.
 *
 *   EMPTY_KIND=trap   attr.sigtrap: SIGTRAP as task work (stackprof's perf-sigtrap)
 *   EMPTY_KIND=perf   F_SETSIG SIGPROF through fasync (stackprof's perf-task-clock)
 *   EMPTY_KIND=nosig  samples into a ring buffer, no signal (perf record's path)
 *
 * It exports stackprof_start/stop/active, so resnet18 --profile-ab can turn
 * the event on and off between passes.
 *
 * Build: cc -O2 -shared -fPIC -o empty_timer.so empty_timer.c
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <linux/perf_event.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

static int et_fd = -1;
static volatile long et_signals;

static void et_handler(int sig, siginfo_t *si, void *uc)
{
	(void)sig, (void)si, (void)uc;
	et_signals++;
}

__attribute__((constructor)) static void et_init(void)
{
	const char *kind = getenv("EMPTY_KIND") ? getenv("EMPTY_KIND") : "trap";
	const char *hz_s = getenv("EMPTY_HZ");
	long hz = hz_s ? atol(hz_s) : 1000;
	int trap = !strcmp(kind, "trap"), nosig = !strcmp(kind, "nosig");
	if (hz < 1)
		hz = 1000;

	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = et_handler;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigfillset(&sa.sa_mask);
	sigaction(trap ? SIGTRAP : SIGPROF, &sa, NULL);

	struct perf_event_attr a;
	memset(&a, 0, sizeof(a));
	a.size = sizeof(a);
	a.type = PERF_TYPE_SOFTWARE;
	a.config = PERF_COUNT_SW_TASK_CLOCK;
	a.sample_period = 1000000000ull / (unsigned long)hz;
	a.sample_type = PERF_SAMPLE_IP;
	a.disabled = 1;
	a.exclude_kernel = 1;
	a.exclude_hv = 1;
	a.wakeup_events = 1;
	if (trap) {
		a.sigtrap = 1;
		a.remove_on_exec = 1;
	}
	et_fd = (int)syscall(SYS_perf_event_open, &a, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
	if (et_fd < 0)
		return;
	if (nosig) {
		if (mmap(NULL, 2 * 4096, PROT_READ | PROT_WRITE, MAP_SHARED, et_fd, 0) ==
		    MAP_FAILED)
			return;
	} else if (!trap) {
		struct f_owner_ex own = {.type = F_OWNER_TID, .pid = (pid_t)syscall(SYS_gettid)};
		fcntl(et_fd, F_SETSIG, SIGPROF);
		fcntl(et_fd, F_SETOWN_EX, &own);
		fcntl(et_fd, F_SETFL, O_ASYNC | O_NONBLOCK);
	}
	ioctl(et_fd, PERF_EVENT_IOC_ENABLE, 0);
}

void stackprof_start(void)
{
	ioctl(et_fd, PERF_EVENT_IOC_ENABLE, 0);
}

void stackprof_stop(void)
{
	ioctl(et_fd, PERF_EVENT_IOC_DISABLE, 0);
}

int stackprof_active(void)
{
	return et_fd >= 0;
}
