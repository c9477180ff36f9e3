/*
 * empty_timer.c - a preload library that does what stackprof's timer does
 * and nothing else: one timer at EMPTY_HZ (default 1000) and an empty
 * handler. It prices the timer alone on a real program: bench/ab.sh runs it
 * under resnet18 --profile-ab (one thread), bench/overhead.sh --process
 * under a whole two-thread resnet18 run; bench/timer_cost.c prices the same
 * mechanisms on a spin loop.
 *
 *   EMPTY_KIND=trap   perf task-clock, attr.sigtrap: SIGTRAP as task work
 *                     (stackprof's perf-sigtrap)
 *   EMPTY_KIND=perf   perf task-clock, F_SETSIG SIGPROF through fasync
 *                     (stackprof's perf-task-clock)
 *   EMPTY_KIND=nosig  perf task-clock, samples into a ring buffer, no signal
 *                     (perf record's path)
 *   EMPTY_KIND=posix  timer_create(CLOCK_THREAD_CPUTIME_ID), SIGEV_THREAD_ID
 *                     SIGPROF (stackprof's posix-cputimer)
 *   EMPTY_THREADS=all a timer for every thread, armed in the new thread
 *                     through an interposed pthread_create as stackprof
 *                     does; default: the main thread only (what ab.sh's
 *                     one-thread rows have always measured)
 *
 * It exports stackprof_start/stop/active, so resnet18 --profile-ab can turn
 * the timers on and off between passes.
 *
 * Build: cc -O2 -shared -fPIC -o empty_timer.so empty_timer.c
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#ifndef sigev_notify_thread_id
#define sigev_notify_thread_id _sigev_un._tid
#endif

#define ET_MAX_THREADS 256

enum et_kind { ET_TRAP, ET_PERF, ET_NOSIG, ET_POSIX };

static enum et_kind et_kind;
static long et_period_ns;
static int et_all_threads;
static atomic_int et_on = 1;
static atomic_int et_count;
/* one timer per thread: a perf fd, or a POSIX timer */
static int et_fd[ET_MAX_THREADS];
static timer_t et_timer[ET_MAX_THREADS];
static atomic_int et_ready[ET_MAX_THREADS];
static volatile long et_signals;

static void et_handler(int sig, siginfo_t *si, void *uc)
{
	(void)sig, (void)si, (void)uc;
	et_signals++;
}

static void et_posix_set(int i, int on)
{
	struct itimerspec its;
	memset(&its, 0, sizeof(its));
	if (on) {
		its.it_value.tv_sec = its.it_interval.tv_sec = et_period_ns / 1000000000;
		its.it_value.tv_nsec = its.it_interval.tv_nsec = et_period_ns % 1000000000;
	}
	timer_settime(et_timer[i], 0, &its, NULL);
}

static void et_set(int i, int on)
{
	if (!atomic_load(&et_ready[i]))
		return;
	if (et_kind == ET_POSIX)
		et_posix_set(i, on);
	else
		ioctl(et_fd[i], on ? PERF_EVENT_IOC_ENABLE : PERF_EVENT_IOC_DISABLE, 0);
}

/* arms a timer for the calling thread */
static void et_arm_self(void)
{
	int i = atomic_fetch_add(&et_count, 1);
	if (i >= ET_MAX_THREADS)
		return;
	pid_t tid = (pid_t)syscall(SYS_gettid);
	if (et_kind == ET_POSIX) {
		struct sigevent sev;
		memset(&sev, 0, sizeof(sev));
		sev.sigev_notify = SIGEV_THREAD_ID;
		sev.sigev_signo = SIGPROF;
		sev.sigev_notify_thread_id = tid;
		if (timer_create(CLOCK_THREAD_CPUTIME_ID, &sev, &et_timer[i]) < 0)
			return;
	} else {
		struct perf_event_attr a;
		memset(&a, 0, sizeof(a));
		a.size = sizeof(a);
		a.type = PERF_TYPE_SOFTWARE;
		a.config = PERF_COUNT_SW_TASK_CLOCK;
		a.sample_period = (unsigned long)et_period_ns;
		a.sample_type = PERF_SAMPLE_IP;
		a.disabled = 1;
		a.exclude_kernel = 1;
		a.exclude_hv = 1;
		a.wakeup_events = 1;
		if (et_kind == ET_TRAP) {
			a.sigtrap = 1;
			a.remove_on_exec = 1;
		}
		int fd = (int)syscall(SYS_perf_event_open, &a, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
		if (fd < 0)
			return;
		if (et_kind == ET_NOSIG) {
			if (mmap(NULL, 2 * 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0) ==
			    MAP_FAILED) {
				close(fd);
				return;
			}
		} else if (et_kind == ET_PERF) {
			struct f_owner_ex own = {.type = F_OWNER_TID, .pid = tid};
			fcntl(fd, F_SETSIG, SIGPROF);
			fcntl(fd, F_SETOWN_EX, &own);
			fcntl(fd, F_SETFL, O_ASYNC | O_NONBLOCK);
		}
		et_fd[i] = fd;
	}
	atomic_store(&et_ready[i], 1);
	if (atomic_load(&et_on))
		et_set(i, 1);
}

struct et_start {
	void *(*fn)(void *);
	void *arg;
};

static void *et_trampoline(void *p)
{
	struct et_start s = *(struct et_start *)p;
	free(p);
	et_arm_self();
	return s.fn(s.arg);
}

int pthread_create(pthread_t *t, const pthread_attr_t *attr, void *(*fn)(void *), void *arg)
{
	static int (*real)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);
	if (!real)
		real = (int (*)(pthread_t *, const pthread_attr_t *, void *(*)(void *),
				void *))dlsym(RTLD_NEXT, "pthread_create");
	struct et_start *s;
	if (!et_all_threads || !(s = malloc(sizeof(*s))))
		return real(t, attr, fn, arg);
	s->fn = fn;
	s->arg = arg;
	int err = real(t, attr, et_trampoline, s);
	if (err)
		free(s);
	return err;
}

__attribute__((constructor)) static void et_init(void)
{
	const char *kind = getenv("EMPTY_KIND") ? getenv("EMPTY_KIND") : "trap";
	const char *hz_s = getenv("EMPTY_HZ");
	const char *threads = getenv("EMPTY_THREADS");
	long hz = hz_s ? atol(hz_s) : 1000;
	if (hz < 1)
		hz = 1000;
	et_period_ns = 1000000000L / hz;
	et_kind = !strcmp(kind, "posix")   ? ET_POSIX
		  : !strcmp(kind, "perf")  ? ET_PERF
		  : !strcmp(kind, "nosig") ? ET_NOSIG
					   : ET_TRAP;
	et_all_threads = threads && !strcmp(threads, "all");

	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = et_handler;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigfillset(&sa.sa_mask);
	sigaction(et_kind == ET_TRAP ? SIGTRAP : SIGPROF, &sa, NULL);
	et_arm_self();
}

void stackprof_start(void)
{
	atomic_store(&et_on, 1);
	int n = atomic_load(&et_count);
	for (int i = 0; i < n && i < ET_MAX_THREADS; i++)
		et_set(i, 1);
}

void stackprof_stop(void)
{
	atomic_store(&et_on, 0);
	int n = atomic_load(&et_count);
	for (int i = 0; i < n && i < ET_MAX_THREADS; i++)
		et_set(i, 0);
}

int stackprof_active(void)
{
	return atomic_load(&et_ready[0]);
}
