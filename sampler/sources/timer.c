/*
 * timer.c - the sources of the sampling signal (timer.h).
 */
#include "sampler/sources/timer.h"
#include "sampler/base/fds.h"
#include "sampler/core/sampler.h"
#include "sampler/base/sys.h"
#include "sampler/sources/ticker.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef TRAP_PERF
#define TRAP_PERF 6
#endif

#ifndef sigev_notify_thread_id
#define sigev_notify_thread_id _sigev_un._tid
#endif

/* Descriptors stackprof keeps besides per-thread events: the profile, a
 * file it reads for a moment, libunwind's pipe, its stderr and the
 * manifest (fds.h). */
#define SP_FDS_RESERVED 6

static struct timespec sp_ts(uint64_t ns)
{
	return (struct timespec){.tv_sec = (time_t)(ns / 1000000000u),
				 .tv_nsec = (long)(ns % 1000000000u)};
}

/* xorshift on a per-thread state: no libc random state to share with the
 * program, and signal-safe */
SP_SIGSAFE static uint64_t sp_rand(struct sp_thread *t)
{
	uint64_t x = t->rnd;
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	t->rnd = x;
	return x;
}

static void sp_rand_seed(struct sp_thread *t)
{
	t->rnd = sp_now_ns() ^ ((uint64_t)sp_gettid() << 32) ^ 0x9e3779b97f4a7c15ull;
	if (!t->rnd)
		t->rnd = 1;
}

/*
 * The weight of a sample when signals can merge or periods vary: the
 * thread's CPU time since the previous handler returned, which leaves out
 * the handler's own time (the profiler's, not the program's). Arming and
 * resuming set the start (thread.c, sp_timer_resume_base); without one the
 * sample weighs a period. What a thread runs after its last sample is in
 * no sample: at most a period per thread.
 */
SP_SIGSAFE static uint64_t sp_cpu_weight(struct sp_thread *t, const siginfo_t *si,
					 uint64_t period_ns, uint64_t cpu_now)
{
	uint64_t last = atomic_load_explicit(&t->cpu_last, memory_order_relaxed);
	if (!last || cpu_now <= last)
		return period_ns;
	uint64_t w = cpu_now - last;
	if (w > period_ns + period_ns / 2)
		atomic_fetch_add_explicit(&t->overruns, w / period_ns - 1, memory_order_relaxed);
	return w;
}

void sp_timer_resume_base(struct sp_thread *t)
{
	struct timespec ts;
	uint64_t now = 0;
	if (t->cpu_clk && clock_gettime(t->cpu_clk, &ts) == 0)
		now = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
	atomic_store_explicit(&t->cpu_last, now, memory_order_relaxed);
}

static void sp_noop_thread(struct sp_thread *t)
{
}

static void sp_noop_resume(struct sp_thread *t, uint64_t period_ns)
{
}

/* ---- posix-cputimer --------------------------------------------------- */

/* A one-shot expiry in [period/2, 3 period/2): the mean is the period, and
 * no two samples keep the distance that would lock them to a phase. */
SP_SIGSAFE static void sp_posix_set(struct sp_thread *t, uint64_t period_ns)
{
	uint64_t next = period_ns / 2 + sp_rand(t) % (period_ns ? period_ns : 1);
	struct itimerspec its = {.it_interval = {0, 0}, .it_value = sp_ts(next ? next : 1)};
	timer_settime(t->timer_id, 0, &its, NULL);
}

static int sp_posix_create(timer_t *id)
{
	struct sigevent sev;
	memset(&sev, 0, sizeof(sev));
	sev.sigev_notify = SIGEV_THREAD_ID;
	sev.sigev_signo = SIGPROF;
	sev.sigev_notify_thread_id = sp_gettid();
	return timer_create(CLOCK_THREAD_CPUTIME_ID, &sev, id) < 0 ? -errno : 0;
}

static int sp_posix_arm(struct sp_thread *t, uint64_t period_ns)
{
	int err = sp_posix_create(&t->timer_id);
	if (err)
		return err;
	sp_rand_seed(t);
	/* the first expiry anywhere in [1, period]: threads don't fire in step */
	struct itimerspec its = {.it_value = sp_ts(1 + sp_rand(t) % period_ns)};
	if (timer_settime(t->timer_id, 0, &its, NULL) < 0) {
		int e = errno;
		timer_delete(t->timer_id);
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
		timer_settime(t->timer_id, 0, &its, NULL);
}

static void sp_posix_resume(struct sp_thread *t, uint64_t period_ns)
{
	sp_timer_resume_base(t);
	if (t->armed)
		sp_posix_set(t, period_ns);
}

static void sp_posix_disarm(struct sp_thread *t)
{
	if (t->armed)
		timer_delete(t->timer_id);
	t->armed = false;
}

SP_SIGSAFE static void sp_posix_rearm(struct sp_thread *t, uint64_t period_ns)
{
	if (t->armed)
		sp_posix_set(t, period_ns);
}

static int sp_posix_probe(uint64_t period_ns)
{
	timer_t id;
	int err = sp_posix_create(&id);
	if (!err)
		timer_delete(id);
	return err;
}

/* posix-cputimer: t's own timer. Signal-safe. */
SP_SIGSAFE static bool sp_posix_owns(const struct sp_thread *t, const siginfo_t *si)
{
	/* glibc's timer_t is the kernel's timer id */
	return si->si_code == SI_TIMER && t && t->armed &&
	       si->si_timerid == (int)(intptr_t)t->timer_id;
}

static const struct sp_timer_ops sp_posix_ops = {
    .name = "posix-cputimer",
    .signo = SIGPROF,
    .randomized = true,
    .probe = sp_posix_probe,
    .arm = sp_posix_arm,
    .pause = sp_posix_pause,
    .resume = sp_posix_resume,
    .disarm = sp_posix_disarm,
    .weight = sp_cpu_weight,
    .rearm = sp_posix_rearm,
    .owns = sp_posix_owns,
};

/* ---- perf_event: opening one safely ------------------------------------ */

struct sp_proc_status {
	bool traced;  /* TracerPid is not 0 */
	bool seccomp; /* seccomp is on (strict mode or filters) */
	long filters; /* Seccomp_filters: how many (Linux 5.9+), -1 if not said */
};

static struct sp_proc_status sp_proc_status(void)
{
	struct sp_proc_status ps = {false, false, -1};
	char buf[4096];
	if (sp_read_small("/proc/self/status", buf, sizeof(buf)) <= 0)
		return ps;
	const char *p = strstr(buf, "\nTracerPid:");
	ps.traced = p && strtol(p + 11, NULL, 10) != 0;
	p = strstr(buf, "\nSeccomp:");
	ps.seccomp = p && strtol(p + 9, NULL, 10) != 0;
	p = strstr(buf, "\nSeccomp_filters:");
	if (p)
		ps.filters = strtol(p + 17, NULL, 10);
	return ps;
}

static void sp_perf_attr(struct perf_event_attr *a, uint64_t period_ns, bool exclude_kernel,
			 bool trap)
{
	memset(a, 0, sizeof(*a));
	a->size = sizeof(*a);
	a->type = PERF_TYPE_SOFTWARE;
	a->config = PERF_COUNT_SW_TASK_CLOCK;
	a->sample_period = period_ns;
	a->disabled = 1;
	a->exclude_kernel = exclude_kernel;
	a->exclude_hv = 1;
	a->wakeup_events = 1;
	if (trap) {
		a->sigtrap = 1;
		a->remove_on_exec = 1; /* the kernel requires it with sigtrap */
		a->sig_data = SP_TRAP_COOKIE;
		/* every thread the opener creates later counts its own time and
		 * takes its own signals; forked children do not */
		a->inherit = 1;
		a->inherit_thread = 1;
	}
}

static int sp_perf_open1(const struct perf_event_attr *a, pid_t tid)
{
	return (int)syscall(SYS_perf_event_open, a, tid, -1, -1, PERF_FLAG_FD_CLOEXEC);
}

/* The event on thread tid (0: the caller); user time only where
 * perf_event_paranoid >= 2 allows no more. fd, or -errno. */
static int sp_perf_open(pid_t tid, uint64_t period_ns, bool trap)
{
	struct perf_event_attr a;
	sp_perf_attr(&a, period_ns, false, trap);
	int fd = sp_perf_open1(&a, tid);
	if (fd < 0) {
		sp_perf_attr(&a, period_ns, true, trap);
		fd = sp_perf_open1(&a, tid);
	}
	return fd < 0 ? -errno : fd;
}

/*
 * Under a seccomp filter, perf_event_open may kill the whole process
 * (SECCOMP_RET_KILL_PROCESS), so it is tried first in a child: a bare
 * clone with no exit signal, which runs no fork handler and is not seen by
 * the program's wait() or SIGCHLD handler. The child puts SIGSYS back to
 * its default action (a handler of the program's must not run in it),
 * makes the call and exits with 0 if it worked.
 */
static int sp_perf_probe_child(uint64_t period_ns, bool trap)
{
	long pid = syscall(SYS_clone, 0, NULL, NULL, NULL, 0);
	if (pid == 0) {
		struct {
			void *handler;
			unsigned long flags;
			void *restorer;
			uint64_t mask;
		} dfl = {SIG_DFL, 0, NULL, 0};
		syscall(SYS_rt_sigaction, SIGSYS, &dfl, NULL, sizeof(uint64_t));
		struct perf_event_attr a;
		sp_perf_attr(&a, period_ns, true, trap);
		long fd = syscall(SYS_perf_event_open, &a, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
		syscall(SYS_exit_group, fd < 0 ? 1 : 0);
	}
	if (pid < 0)
		return -errno;
	int status;
	while (syscall(SYS_wait4, (pid_t)pid, &status, __WALL, NULL) < 0)
		if (errno != EINTR)
			return -ECHILD;
	if (WIFSIGNALED(status))
		return -EPERM; /* the filter killed it: never call perf_event_open here */
	return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -EACCES;
}

/*
 * Whether perf_event_open may be called now. A program may install a
 * seccomp filter at any time (a sandbox after its set-up), and filters are
 * inherited by forked children, so the answer is kept per seccomp state
 * (the number of filters) and found again when that changes: a call made
 * under a filter no probe has seen could kill the process.
 */
static pthread_mutex_t sp_probe_lock = PTHREAD_MUTEX_INITIALIZER;

static int sp_perf_probe_kind(uint64_t period_ns, bool trap)
{
	pthread_mutex_t *lock = &sp_probe_lock;
	static long seen[2] = {-2, -2}; /* the seccomp state each result is for */
	static int result[2];
	struct sp_proc_status ps = sp_proc_status();
	long state = ps.seccomp ? (ps.filters >= 0 ? ps.filters + 1 : 1000000) : 0;
	pthread_mutex_lock(lock);
	if (seen[trap] != state) {
		int err = 0;
		if (ps.seccomp)
			err = sp_perf_probe_child(period_ns, trap);
		if (!err) {
			int fd = sp_perf_open(sp_gettid(), period_ns, trap);
			if (fd < 0)
				err = fd;
			else
				close(fd);
		}
		result[trap] = err;
		seen[trap] = state;
	}
	int err = result[trap];
	pthread_mutex_unlock(lock);
	return err;
}

/*
 * A page of the event's mapping keeps the event alive if its descriptor
 * is closed: when the program takes every number (dup2 over all of them)
 * or closes ours by raw system call, sampling goes on; only pausing it
 * (ioctl) needs the descriptor. NULL if it can't be mapped.
 */
static void *sp_perf_pin(int fd)
{
	void *p = mmap(NULL, (size_t)sysconf(_SC_PAGESIZE), PROT_READ, MAP_SHARED, fd, 0);
	return p == MAP_FAILED ? NULL : p;
}

static void sp_perf_unpin(void **pin)
{
	if (*pin)
		munmap(*pin, (size_t)sysconf(_SC_PAGESIZE));
	*pin = NULL;
}

/* The event's id, which tells its descriptor from anything reusing the number. */
static uint64_t sp_perf_id(int fd)
{
	uint64_t id = 0;
	if (fd < 0 || ioctl(fd, PERF_EVENT_IOC_ID, &id) < 0)
		return 0;
	return id;
}

/* ioctl on f's event if f still names the event with id; false if not. */
static bool sp_perf_ioctl(struct sp_fd *f, uint64_t id, unsigned long req)
{
	int fd = sp_fd_hold(f);
	if (fd < 0)
		return false;
	bool same = id && sp_perf_id(fd) == id;
	if (same)
		ioctl(fd, req, 0);
	sp_fd_drop(f);
	return same;
}

/* Closes f's event, or lets go of the number without closing it when it
 * names something else now. */
static void sp_perf_close(struct sp_fd *f, uint64_t id)
{
	int fd = sp_fd_hold(f);
	bool same = fd >= 0 && id && sp_perf_id(fd) == id;
	if (fd >= 0)
		sp_fd_drop(f);
	if (same)
		sp_fd_close(f);
	else
		sp_fd_abandon(f);
}

/* ---- perf-task-clock: one event per thread, SIGPROF by fasync ---------- */

static _Atomic int sp_perf_threads; /* per-thread events open now */

/* How many per-thread events may hold descriptors at once. */
static int sp_perf_budget(void)
{
	int room = sp_fd_room() - SP_FDS_RESERVED;
	return room > 0 ? room : 0;
}

static int sp_perf_arm(struct sp_thread *t, uint64_t period_ns)
{
	if (sp_perf_probe_kind(period_ns, false) != 0) {
		/* refused now (a seccomp filter installed since): a POSIX timer */
		atomic_fetch_add(&sp_g.timer_fallbacks, 1);
		t->timer = &sp_posix_ops;
		return sp_posix_arm(t, period_ns);
	}
	if (atomic_fetch_add(&sp_perf_threads, 1) >= sp_perf_budget()) {
		/* no descriptor left for this thread: it gets a POSIX timer */
		atomic_fetch_sub(&sp_perf_threads, 1);
		atomic_fetch_add(&sp_g.timer_fallbacks, 1);
		t->timer = &sp_posix_ops;
		return sp_posix_arm(t, period_ns);
	}
	pid_t tid = sp_gettid();
	int err = -EAGAIN;
	if (sp_fd_begin()) {
		int fd = sp_perf_open(tid, period_ns, false);
		struct f_owner_ex own = {.type = F_OWNER_TID, .pid = tid};
		if (fd >= 0 &&
		    (fcntl(fd, F_SETSIG, SIGPROF) < 0 || fcntl(fd, F_SETOWN_EX, &own) < 0 ||
		     fcntl(fd, F_SETFL, O_ASYNC | O_NONBLOCK) < 0)) {
			err = -errno;
			syscall(SYS_close, fd);
			fd = err;
		}
		/* the fasync owner and signal belong to the open file, which
		 * the moved descriptor shares */
		err = fd < 0 ? fd : sp_fd_keep(&t->perf, fd);
		sp_fd_end();
	}
	if (err < 0) {
		atomic_fetch_sub(&sp_perf_threads, 1);
		return err;
	}
	t->perf_id = sp_perf_id(err);
	t->perf_pin = sp_perf_pin(err);
	if (!sp_perf_ioctl(&t->perf, t->perf_id, PERF_EVENT_IOC_ENABLE)) {
		sp_perf_unpin(&t->perf_pin);
		sp_perf_close(&t->perf, t->perf_id);
		atomic_fetch_sub(&sp_perf_threads, 1);
		return -EBADF;
	}
	t->armed = true;
	return 0;
}

static void sp_perf_pause(struct sp_thread *t)
{
	if (t->armed)
		sp_perf_ioctl(&t->perf, t->perf_id, PERF_EVENT_IOC_DISABLE);
}

static void sp_perf_resume(struct sp_thread *t, uint64_t period_ns)
{
	sp_timer_resume_base(t);
	if (t->armed)
		sp_perf_ioctl(&t->perf, t->perf_id, PERF_EVENT_IOC_ENABLE);
}

static void sp_perf_disarm(struct sp_thread *t)
{
	if (t->armed) {
		sp_perf_ioctl(&t->perf, t->perf_id, PERF_EVENT_IOC_DISABLE);
		sp_perf_unpin(&t->perf_pin);
		sp_perf_close(&t->perf, t->perf_id);
		atomic_fetch_sub(&sp_perf_threads, 1);
	}
	t->armed = false;
}

static int sp_perf_probe(uint64_t period_ns)
{
	return sp_perf_probe_kind(period_ns, false);
}

/* perf-task-clock's fasync. Signal-safe. */
SP_SIGSAFE static bool sp_perf_owns(const struct sp_thread *t, const siginfo_t *si)
{
	(void)t;
	/* fasync: POLL_IN for an overflow, POLL_HUP at the end */
	return si->si_code >= POLL_IN && si->si_code <= POLL_HUP;
}

static const struct sp_timer_ops sp_perf_ops = {
    .name = "perf-task-clock",
    .signo = SIGPROF,
    .probe = sp_perf_probe,
    .arm = sp_perf_arm,
    .pause = sp_perf_pause,
    .resume = sp_perf_resume,
    .disarm = sp_perf_disarm,
    .weight = sp_cpu_weight,
    .owns = sp_perf_owns,
};

/* ---- perf-sigtrap: one inherited event, SIGTRAP from the kernel -------- */

static struct sp_fd sp_trap_fd;
static uint64_t sp_trap_id;
static void *sp_trap_pin;

static int sp_trap_start(uint64_t period_ns)
{
	/* a forked child of a program that has since installed a filter */
	int err = sp_perf_probe_kind(period_ns, true);
	if (err)
		return err;
	err = -EAGAIN;
	if (sp_fd_begin()) {
		int fd = sp_perf_open(0, period_ns, true);
		err = fd < 0 ? fd : sp_fd_keep(&sp_trap_fd, fd);
		sp_fd_end();
	}
	if (err < 0)
		return err;
	sp_trap_id = sp_perf_id(err);
	sp_trap_pin = sp_perf_pin(err);
	/* threads inherit the event as it is when they start: it runs only
	 * while samples are kept */
	if (atomic_load(&sp_g.sampling))
		sp_perf_ioctl(&sp_trap_fd, sp_trap_id, PERF_EVENT_IOC_ENABLE);
	return 0;
}

static void sp_trap_stop(void)
{
	sp_perf_ioctl(&sp_trap_fd, sp_trap_id, PERF_EVENT_IOC_DISABLE);
	sp_perf_unpin(&sp_trap_pin);
	sp_perf_close(&sp_trap_fd, sp_trap_id);
	sp_trap_id = 0;
}

static int sp_trap_arm(struct sp_thread *t, uint64_t period_ns)
{
	t->armed = true; /* its copy of the event came with the thread */
	return 0;
}

static void sp_trap_pause_all(void)
{
	/* applies to every inherited copy as well */
	sp_perf_ioctl(&sp_trap_fd, sp_trap_id, PERF_EVENT_IOC_DISABLE);
}

static void sp_trap_resume_all(uint64_t period_ns)
{
	uint32_t n = atomic_load(&sp_g.n_slots);
	for (uint32_t i = 0; i < n; i++)
		if (atomic_load(&sp_g.threads[i].state) == SP_SLOT_LIVE)
			sp_timer_resume_base(&sp_g.threads[i]);
	sp_perf_ioctl(&sp_trap_fd, sp_trap_id, PERF_EVENT_IOC_ENABLE);
}

static int sp_trap_probe(uint64_t period_ns)
{
	/* under a debugger every SIGTRAP stops the program, and the debugger
	 * takes it for a breakpoint: a traced process gets perf-task-clock */
	if (sp_proc_status().traced)
		return -EBUSY;
	return sp_perf_probe_kind(period_ns, true);
}

/* perf-sigtrap: perf's code, and the cookie in sig_data. Signal-safe. */
SP_SIGSAFE static bool sp_trap_owns(const struct sp_thread *t, const siginfo_t *si)
{
	(void)t;
	return si->si_code == TRAP_PERF && sp_si_perf_data(si) == SP_TRAP_COOKIE;
}

static const struct sp_timer_ops sp_trap_ops = {
    .name = "perf-sigtrap",
    .signo = SIGTRAP,
    .probe = sp_trap_probe,
    .start = sp_trap_start,
    .stop = sp_trap_stop,
    .arm = sp_trap_arm,
    .pause = sp_noop_thread,
    .resume = sp_noop_resume,
    .disarm = sp_noop_thread,
    .pause_all = sp_trap_pause_all,
    .resume_all = sp_trap_resume_all,
    .weight = sp_cpu_weight,
    .owns = sp_trap_owns,
};

/* ---- sampler-thread (ticker.c) ----------------------------------------- */

static int sp_ticker_probe(uint64_t period_ns)
{
	return 0;
}

static void sp_ticker_unpark(uint64_t period_ns)
{
	int err = sp_ticker_start(period_ns);
	if (err)
		sp_log("cannot restart the sampler thread: %s; no samples will be taken",
		       strerror(-err));
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
 * a thread that was asleep at a wake-up is signalled at a later one. Its
 * wake-ups are jittered, so it is counted as randomized. */
/* the sampler thread's sigqueue, with the cookie. Signal-safe. */
SP_SIGSAFE static bool sp_ticker_owns(const struct sp_thread *t, const siginfo_t *si)
{
	(void)t;
	return si->si_code == SI_QUEUE && si->si_pid == sp_g.pid &&
	       si->si_value.sival_ptr == (void *)SP_TRAP_COOKIE;
}

static const struct sp_timer_ops sp_ticker_ops = {
    .name = "sampler-thread",
    .signo = SIGPROF,
    .randomized = true,
    .probe = sp_ticker_probe,
    .start = sp_ticker_start,
    .stop = sp_ticker_stop,
    .park = sp_ticker_stop,
    .unpark = sp_ticker_unpark,
    .arm = sp_ticker_arm_op,
    .pause = sp_ticker_pause,
    .resume = sp_ticker_resume_op,
    .disarm = sp_ticker_disarm,
    .weight = sp_cpu_weight,
    .owns = sp_ticker_owns,
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

static int sp_itimer_start(uint64_t period_ns)
{
	return atomic_load(&sp_g.sampling) ? sp_itimer_set(period_ns) : 0;
}

static void sp_itimer_pause_all(void)
{
	struct itimerval it;
	memset(&it, 0, sizeof(it));
	setitimer(ITIMER_PROF, &it, NULL);
}

static void sp_itimer_resume_all(uint64_t period_ns)
{
	sp_itimer_set(period_ns);
}

static int sp_itimer_arm(struct sp_thread *t, uint64_t period_ns)
{
	t->armed = true;
	return 0;
}

static int sp_itimer_probe(uint64_t period_ns)
{
	return 0;
}

/* ITIMER_PROF: the kernel's. Signal-safe. */
SP_SIGSAFE static bool sp_itimer_owns(const struct sp_thread *t, const siginfo_t *si)
{
	(void)t;
	return si->si_code == SI_KERNEL;
}

static const struct sp_timer_ops sp_itimer_ops = {
    .name = "itimer-prof",
    .signo = SIGPROF,
    .probe = sp_itimer_probe,
    .start = sp_itimer_start,
    .stop = sp_itimer_pause_all,
    .arm = sp_itimer_arm,
    .pause = sp_noop_thread,
    .resume = sp_noop_resume,
    .disarm = sp_noop_thread,
    .pause_all = sp_itimer_pause_all,
    .resume_all = sp_itimer_resume_all,
    /* one signal per tick at most: each weighs the CPU time its thread
     * used since its last one, not a period */
    .weight = sp_cpu_weight,
    .owns = sp_itimer_owns,
};

/* ---- whose signal ----------------------------------------------------- */

/* ---- choosing, and every thread at once -------------------------------- */

const struct sp_timer_ops *sp_timer_choose(const char *kind, uint32_t freq_hz)
{
	uint64_t period = 1000000000ull / freq_hz;
	bool autom = !strcmp(kind, "auto");
	if (!strcmp(kind, "itimer"))
		return &sp_itimer_ops;
	if (!strcmp(kind, "thread"))
		return &sp_ticker_ops;
	if (autom || !strcmp(kind, "trap")) {
		int err = sp_trap_probe(period);
		if (err == 0)
			return &sp_trap_ops;
		if (!autom)
			sp_log("perf_event SIGTRAP delivery is not available here (%s); trying the "
			       "perf task-clock with SIGPROF",
			       err == -EBUSY ? "the process is traced" : strerror(-err));
	}
	if (autom || !strcmp(kind, "perf") || !strcmp(kind, "trap")) {
		if (sp_perf_probe(period) == 0)
			return &sp_perf_ops;
		if (!autom)
			sp_log("perf_event task-clock is not permitted here (perf_event_paranoid, "
			       "seccomp or a container); using POSIX CPU timers");
	}
	if (sp_posix_probe(period) == 0)
		return &sp_posix_ops;
	return &sp_itimer_ops;
}

void sp_timers_pause_all(void)
{
	uint32_t n = atomic_load(&sp_g.n_slots);
	for (uint32_t i = 0; i < n; i++) {
		struct sp_thread *t = &sp_g.threads[i];
		if (atomic_load(&t->state) == SP_SLOT_LIVE && t->timer && !t->timer->pause_all)
			t->timer->pause(t);
	}
	if (sp_g.timer->pause_all)
		sp_g.timer->pause_all();
}

void sp_timers_resume_all(void)
{
	uint32_t n = atomic_load(&sp_g.n_slots);
	for (uint32_t i = 0; i < n; i++) {
		struct sp_thread *t = &sp_g.threads[i];
		if (atomic_load(&t->state) == SP_SLOT_LIVE && t->timer && !t->timer->pause_all)
			t->timer->resume(t, sp_g.period_ns);
	}
	if (sp_g.timer->resume_all)
		sp_g.timer->resume_all(sp_g.period_ns);
}

void sp_timer_atfork_child(void)
{
	pthread_mutex_init(&sp_probe_lock, NULL); /* a probe of another thread's */
	sp_perf_unpin(&sp_trap_pin);
	sp_fd_forget(&sp_trap_fd);
	sp_trap_id = 0;
	uint32_t n = atomic_load(&sp_g.n_slots);
	for (uint32_t i = 0; i < n; i++) {
		/* POSIX timers are not inherited: nothing to delete for them */
		sp_perf_unpin(&sp_g.threads[i].perf_pin);
		sp_fd_forget(&sp_g.threads[i].perf);
		sp_g.threads[i].armed = false;
	}
	atomic_store(&sp_perf_threads, 0);
}
