#include "sigsafe.h"
#include "timer.h"
#include "sampler.h"
#include "sys.h"
#include "ticker.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <unistd.h>

#ifndef sigev_notify_thread_id
#define sigev_notify_thread_id _sigev_un._tid
#endif

/* The kernel tick here; above it POSIX CPU timers coalesce into overruns. */
#define SP_TICK_HZ 250

uint64_t sp_timer_first_expiry(uint64_t period_ns)
{
	/* xorshift on time and tid: no libc random state to share with the target */
	uint64_t x = sp_now_ns() ^ ((uint64_t)sp_gettid() << 32) ^ 0x9e3779b97f4a7c15ull;
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return 1 + x % period_ns;
}

static struct timespec sp_ts(uint64_t ns)
{
	return (struct timespec){.tv_sec = (time_t)(ns / 1000000000u),
				 .tv_nsec = (long)(ns % 1000000000u)};
}

/* ---- posix-cputimer --------------------------------------------------- */

static int sp_posix_arm(struct sp_thread *t, uint64_t period_ns)
{
	struct sigevent sev;
	memset(&sev, 0, sizeof(sev));
	sev.sigev_notify = SIGEV_THREAD_ID;
	sev.sigev_signo = SIGPROF;
	sev.sigev_notify_thread_id = sp_gettid();
	if (timer_create(CLOCK_THREAD_CPUTIME_ID, &sev, &t->timer) < 0)
		return -errno;
	struct itimerspec its = {.it_interval = sp_ts(period_ns),
				 .it_value = sp_ts(sp_timer_first_expiry(period_ns))};
	if (timer_settime(t->timer, 0, &its, NULL) < 0) {
		int e = errno;
		timer_delete(t->timer);
		return -e;
	}
	t->armed = true;
	return 0;
}

static void sp_posix_pause(struct sp_thread *t)
{
	struct itimerspec its;
	memset(&its, 0, sizeof(its));
	if (t->armed)
		timer_settime(t->timer, 0, &its, NULL);
}

static void sp_posix_resume(struct sp_thread *t, uint64_t period_ns)
{
	struct itimerspec its = {.it_interval = sp_ts(period_ns),
				 .it_value = sp_ts(sp_timer_first_expiry(period_ns))};
	if (t->armed)
		timer_settime(t->timer, 0, &its, NULL);
}

static void sp_posix_disarm(struct sp_thread *t)
{
	if (t->armed)
		timer_delete(t->timer);
	t->armed = false;
}

SP_SIGSAFE static uint64_t sp_posix_weight(struct sp_thread *t, const siginfo_t *si,
					   uint64_t period_ns, uint64_t cpu_now)
{
	uint64_t overrun =
	    si->si_code == SI_TIMER && si->si_overrun > 0 ? (uint64_t)si->si_overrun : 0;
	if (overrun)
		atomic_fetch_add_explicit(&t->overruns, overrun, memory_order_relaxed);
	return (1 + overrun) * period_ns;
}

static int sp_posix_probe(uint64_t period_ns)
{
	struct sigevent sev;
	timer_t id;
	memset(&sev, 0, sizeof(sev));
	sev.sigev_notify = SIGEV_THREAD_ID;
	sev.sigev_signo = SIGPROF;
	sev.sigev_notify_thread_id = sp_gettid();
	if (timer_create(CLOCK_THREAD_CPUTIME_ID, &sev, &id) < 0)
		return -errno;
	timer_delete(id);
	return 0;
}

static const struct sp_timer_ops sp_posix_ops = {
    .name = "posix-cputimer",
    .signo = SIGPROF,
    .per_thread = true,
    .probe = sp_posix_probe,
    .arm = sp_posix_arm,
    .pause = sp_posix_pause,
    .resume = sp_posix_resume,
    .disarm = sp_posix_disarm,
    .weight = sp_posix_weight,
};

/* ---- perf-task-clock -------------------------------------------------- */

/*
 * A task-clock event on thread tid. With trap, the kernel itself sends the
 * thread SIGTRAP (TRAP_PERF, si_perf_data = SP_TRAP_COOKIE) on each
 * overflow; otherwise the signal goes through the fd's fasync owner.
 */
static int sp_perf_open1(pid_t tid, uint64_t period_ns, bool exclude_kernel, bool trap)
{
	struct perf_event_attr a;
	memset(&a, 0, sizeof(a));
	a.size = sizeof(a);
	a.type = PERF_TYPE_SOFTWARE;
	a.config = PERF_COUNT_SW_TASK_CLOCK;
	a.sample_period = period_ns;
	a.disabled = 1;
	a.exclude_kernel = exclude_kernel;
	a.exclude_hv = 1;
	a.wakeup_events = 1;
	if (trap) {
		a.sigtrap = 1;
		a.remove_on_exec = 1; /* the kernel requires it with sigtrap */
		a.sig_data = SP_TRAP_COOKIE;
	}
	return (int)syscall(SYS_perf_event_open, &a, tid, -1, -1, PERF_FLAG_FD_CLOEXEC);
}

static int sp_perf_open(pid_t tid, uint64_t period_ns, bool trap)
{
	int fd = sp_perf_open1(tid, period_ns, false, trap);
	if (fd < 0)
		fd = sp_perf_open1(tid, period_ns, true, trap); /* paranoid >= 2: user time only */
	return fd;
}

static int sp_perf_arm_kind(struct sp_thread *t, uint64_t period_ns, bool trap)
{
	pid_t tid = sp_gettid();
	int fd = sp_perf_open(tid, period_ns, trap);
	if (fd < 0)
		return -errno;
	struct f_owner_ex own = {.type = F_OWNER_TID, .pid = tid};
	if ((!trap && (fcntl(fd, F_SETSIG, SIGPROF) < 0 || fcntl(fd, F_SETOWN_EX, &own) < 0 ||
		       fcntl(fd, F_SETFL, O_ASYNC | O_NONBLOCK) < 0)) ||
	    ioctl(fd, PERF_EVENT_IOC_ENABLE, 0) < 0) {
		int e = errno;
		close(fd);
		return -e;
	}
	t->perf_fd = fd;
	t->armed = true;
	return 0;
}

static int sp_perf_arm(struct sp_thread *t, uint64_t period_ns)
{
	return sp_perf_arm_kind(t, period_ns, false);
}

static int sp_trap_arm(struct sp_thread *t, uint64_t period_ns)
{
	return sp_perf_arm_kind(t, period_ns, true);
}

static void sp_perf_pause(struct sp_thread *t)
{
	if (t->armed)
		ioctl(t->perf_fd, PERF_EVENT_IOC_DISABLE, 0);
}

static void sp_perf_resume(struct sp_thread *t, uint64_t period_ns)
{
	/* the CPU time while paused was not sampled: no weight for it */
	atomic_store_explicit(&t->cpu_last, 0, memory_order_relaxed);
	if (t->armed)
		ioctl(t->perf_fd, PERF_EVENT_IOC_ENABLE, 0);
}

static void sp_perf_disarm(struct sp_thread *t)
{
	if (t->armed)
		close(t->perf_fd);
	t->armed = false;
	t->perf_fd = -1;
}

SP_SIGSAFE static uint64_t sp_perf_weight(struct sp_thread *t, const siginfo_t *si,
					  uint64_t period_ns, uint64_t cpu_now)
{
	/* Signals don't queue: two overflows before delivery arrive as one, so
	 * the weight is the thread's CPU time since the previous handler
	 * returned. That leaves out the handler's own time, which is the
	 * profiler's, not the program's; the task clock counts the same time
	 * as the thread CPU clock, so no read() of the counter is needed. */
	uint64_t last = atomic_load_explicit(&t->cpu_last, memory_order_relaxed);
	if (!last || cpu_now <= last)
		return period_ns;
	uint64_t w = cpu_now - last;
	if (w > period_ns + period_ns / 2)
		atomic_fetch_add_explicit(&t->overruns, w / period_ns - 1, memory_order_relaxed);
	return w;
}

static int sp_perf_probe_kind(uint64_t period_ns, bool trap)
{
	int fd = sp_perf_open(sp_gettid(), period_ns, trap);
	if (fd < 0)
		return -errno;
	close(fd);
	return 0;
}

static int sp_perf_probe(uint64_t period_ns)
{
	return sp_perf_probe_kind(period_ns, false);
}

/*
 * Under a debugger every SIGTRAP stops the program, and the debugger takes
 * it for a breakpoint: a traced process gets the fasync kind instead.
 */
static bool sp_traced(void)
{
	char buf[4096];
	if (sp_read_small("/proc/self/status", buf, sizeof(buf)) <= 0)
		return false;
	const char *p = strstr(buf, "\nTracerPid:");
	return p && strtol(p + 11, NULL, 10) != 0;
}

static int sp_trap_probe(uint64_t period_ns)
{
	if (sp_traced())
		return -EBUSY;
	return sp_perf_probe_kind(period_ns, true);
}

static const struct sp_timer_ops sp_perf_ops = {
    .name = "perf-task-clock",
    .signo = SIGPROF,
    .per_thread = true,
    .probe = sp_perf_probe,
    .arm = sp_perf_arm,
    .pause = sp_perf_pause,
    .resume = sp_perf_resume,
    .disarm = sp_perf_disarm,
    .weight = sp_perf_weight,
};

/* The same event and weight; only the signal's path differs (timer.h). */
static const struct sp_timer_ops sp_trap_ops = {
    .name = "perf-sigtrap",
    .signo = SIGTRAP,
    .per_thread = true,
    .probe = sp_trap_probe,
    .arm = sp_trap_arm,
    .pause = sp_perf_pause,
    .resume = sp_perf_resume,
    .disarm = sp_perf_disarm,
    .weight = sp_perf_weight,
};

/* ---- sampler-thread (ticker.c) ----------------------------------------- */

static int sp_ticker_probe(uint64_t period_ns)
{
	return 0;
}

static int sp_ticker_arm_op(struct sp_thread *t, uint64_t period_ns)
{
	return sp_ticker_arm(t);
}

static void sp_ticker_resume_op(struct sp_thread *t, uint64_t period_ns)
{
	sp_ticker_resume(t);
}

/* The weight is the CPU time since the last handler, as with perf events:
 * a thread that was asleep at a wake-up is signalled at a later one. */
static const struct sp_timer_ops sp_ticker_ops = {
    .name = "sampler-thread",
    .signo = SIGPROF,
    .per_thread = true,
    .probe = sp_ticker_probe,
    .arm = sp_ticker_arm_op,
    .pause = sp_ticker_pause,
    .resume = sp_ticker_resume_op,
    .disarm = sp_ticker_disarm,
    .weight = sp_perf_weight,
    .start = sp_ticker_start,
    .stop = sp_ticker_stop,
};

/* ---- itimer-prof ------------------------------------------------------ */

static int sp_itimer_set(uint64_t period_ns)
{
	struct itimerval it;
	it.it_interval.tv_sec = (time_t)(period_ns / 1000000000u);
	it.it_interval.tv_usec = (suseconds_t)(period_ns % 1000000000u / 1000u);
	it.it_value = it.it_interval;
	return setitimer(ITIMER_PROF, &it, NULL) < 0 ? -errno : 0;
}

static int sp_itimer_arm(struct sp_thread *t, uint64_t period_ns)
{
	/* one process-wide timer: armed once, by the first thread */
	static _Atomic bool armed;
	t->armed = true;
	if (atomic_exchange(&armed, true))
		return 0;
	return sp_itimer_set(period_ns);
}

static void sp_itimer_pause(struct sp_thread *t)
{
}

static void sp_itimer_resume(struct sp_thread *t, uint64_t period_ns)
{
}

static void sp_itimer_disarm(struct sp_thread *t)
{
	t->armed = false;
}

SP_SIGSAFE static uint64_t sp_itimer_weight(struct sp_thread *t, const siginfo_t *si,
					    uint64_t period_ns, uint64_t cpu_now)
{
	return period_ns;
}

static int sp_itimer_probe(uint64_t period_ns)
{
	return 0;
}

static const struct sp_timer_ops sp_itimer_ops = {
    .name = "itimer-prof",
    .signo = SIGPROF,
    .per_thread = false,
    .probe = sp_itimer_probe,
    .arm = sp_itimer_arm,
    .pause = sp_itimer_pause,
    .resume = sp_itimer_resume,
    .disarm = sp_itimer_disarm,
    .weight = sp_itimer_weight,
};

void sp_timer_start_itimer(uint64_t period_ns)
{
	sp_itimer_set(period_ns);
}

void sp_timer_stop_itimer(void)
{
	struct itimerval it;
	memset(&it, 0, sizeof(it));
	setitimer(ITIMER_PROF, &it, NULL);
}

const struct sp_timer_ops *sp_timer_choose(const char *kind, uint32_t freq_hz)
{
	uint64_t period = 1000000000ull / freq_hz;
	if (!strcmp(kind, "itimer"))
		return &sp_itimer_ops;
	if (!strcmp(kind, "thread"))
		return &sp_ticker_ops;
	bool fast = !strcmp(kind, "auto") && freq_hz > SP_TICK_HZ;
	if (!strcmp(kind, "trap") || fast) {
		int err = sp_trap_probe(period);
		if (err == 0)
			return &sp_trap_ops;
		if (!strcmp(kind, "trap"))
			sp_log("perf_event SIGTRAP delivery is not available here (%s); trying the "
			       "perf task-clock with SIGPROF",
			       err == -EBUSY ? "the process is traced" : strerror(-err));
	}
	if (!strcmp(kind, "perf") || !strcmp(kind, "trap") || fast) {
		if (sp_perf_probe(period) == 0)
			return &sp_perf_ops;
		if (!fast)
			sp_log(
			    "perf_event task-clock is not permitted here "
			    "(see /proc/sys/kernel/perf_event_paranoid); using POSIX CPU timers");
	}
	if (sp_posix_probe(period) == 0)
		return &sp_posix_ops;
	return &sp_itimer_ops;
}

/* ---- all threads at once ----------------------------------------------- */

void sp_timers_pause_all(void)
{
	uint32_t n = atomic_load(&sp_g.n_slots);
	for (uint32_t i = 0; i < n; i++) {
		struct sp_thread *t = &sp_g.threads[i];
		if (atomic_load(&t->state) == SP_SLOT_LIVE)
			sp_g.timer->pause(t);
	}
	if (!sp_g.timer->per_thread)
		sp_timer_stop_itimer();
}

void sp_timers_resume_all(void)
{
	uint32_t n = atomic_load(&sp_g.n_slots);
	for (uint32_t i = 0; i < n; i++) {
		struct sp_thread *t = &sp_g.threads[i];
		if (atomic_load(&t->state) == SP_SLOT_LIVE)
			sp_g.timer->resume(t, sp_g.period_ns);
	}
	if (!sp_g.timer->per_thread)
		sp_timer_start_itimer(sp_g.period_ns);
}
