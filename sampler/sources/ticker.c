/*
 * ticker.c - sampler-thread, a CPU timer (STACKPROF_TIMER=thread): one thread
 * of ours wakes at the sampling rate, reads the CPU clock of every sampled
 * thread, and sends SIGPROF (tgkill) to each that is running at that moment.
 *
 * Why another timer: POSIX CPU timers fire from the kernel tick (250 Hz
 * here), and perf_event's task clock needs perf_event_paranoid <= 2, which
 * stock Debian kernels (3) and Docker's default seccomp profile refuse. The
 * ticker needs neither, so rates above the tick work in any container. In
 * a VM it is also cheaper for the sampled thread: the wake-up's timer
 * interrupt lands on the ticker's CPU, and the sampled thread takes only
 * the signal's inter-processor interrupt (docs/BENCHMARKS.md).
 *
 * Why it is not the default: that interrupt takes ~20 us to arrive in this
 * VM, and a system call the thread makes meanwhile delivers the signal
 * first, so samples slide to system call sites (docs/SAMPLER.md has the
 * measured bias). Timers on the sampled thread's own CPU have no such lag.
 *
 * Its costs are its own: a wake-up per period, and one or two clock reads
 * (system calls) per sampled thread each wake-up. The wake-ups are
 * jittered by +-50% of the period, so a program thread that wakes on a
 * timer of the same period is not always missed or always hit.
 *
 * A thread is signalled only when a second read of its clock shows it is
 * on a CPU, or when it was busy and /proc says it is runnable (the ticker
 * itself took its CPU): a thread asleep in a system call is left alone, as
 * a CPU-time timer would leave it. None of this is signal-safe; the handler
 * only reads the thread's own CPU clock for the weight.
 */
#include "sampler/core/sampler.h"
#include "sampler/base/sys.h"
#include "sampler/core/ownthreads.h"
#include "sampler/core/source.h"
#include "format/profile.h"
#include "sampler/sources/cputime.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* An idle program's threads are looked at less and less often, down to one
 * look every this many periods: a sleeping server costs the ticker little. */
#define SP_TICK_MAX_BACKOFF 8

/* Guards every slot's tick_on and the ticker's own state below. */
static pthread_mutex_t sp_tick_lock = PTHREAD_MUTEX_INITIALIZER;
/* The ticker sleeps on it (CLOCK_MONOTONIC deadlines), so that arming a
 * thread or stopping wakes it at once: at 1 Hz with the idle backoff a
 * sleep is up to 12 s, which exit must not wait out. */
static pthread_cond_t sp_tick_wake;
static pthread_once_t sp_tick_once = PTHREAD_ONCE_INIT;
static pthread_t sp_tick_thread;
static pid_t sp_tick_tid;
static bool sp_tick_running, sp_tick_stop;
static uint32_t sp_tick_armed; /* slots with tick_on */
static uint64_t sp_tick_period;

static uint64_t sp_clock_ns(clockid_t c)
{
	struct timespec ts;
	if (clock_gettime(c, &ts) < 0)
		return 0;
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/*
 * Whether thread tid is runnable (state R in /proc): on a CPU, or waiting
 * for one. The ticker asks when a thread that was busy stopped moving: on
 * a machine with every CPU busy, the thread it displaced to run is that
 * thread, preempted in user code and not asleep in a system call.
 */
static bool sp_runnable(pid_t tid)
{
	char path[64], buf[512];
	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", (int)tid);
	if (sp_read_small(path, buf, sizeof(buf)) <= 0)
		return false;
	/* "tid (comm) S ...": comm may hold anything, so the last ')' */
	const char *p = strrchr(buf, ')');
	return p && p[1] == ' ' && p[2] == 'R';
}

/* SIGPROF to thread tid, with our cookie: a sigwait that takes it can
 * tell it from the program's own (sigmask.h, sp_source_sent) */
static void sp_tick_send(pid_t pid, pid_t tid)
{
	siginfo_t si;
	memset(&si, 0, sizeof(si));
	si.si_signo = SIGPROF;
	si.si_code = SI_QUEUE;
	si.si_pid = pid;
	si.si_uid = getuid();
	si.si_value.sival_ptr = (void *)SP_TRAP_COOKIE;
	syscall(SYS_rt_tgsigqueueinfo, pid, tid, SIGPROF, &si);
}

/*
 * One look at every armed thread, under sp_tick_lock: signal those that
 * are on a CPU now. A thread that runs all the time is signalled at every
 * wake-up, one that runs a fraction of the time at that fraction of them:
 * either way about the rate per CPU-second, and each sample's weight is
 * the thread's CPU time since its previous one (sp_perf_weight).
 * Returns whether any armed thread used CPU since the last look.
 */
static bool sp_tick_scan(pid_t pid, uint64_t interval_ns)
{
	bool busy = false;
	uint32_t n = atomic_load(&sp_g.n_slots);
	for (uint32_t i = 0; i < n; i++) {
		struct sp_thread *t = &sp_g.threads[i];
		if (!t->tick_on || atomic_load(&t->state) != SP_SLOT_LIVE)
			continue;
		uint64_t c = sp_clock_ns(t->cpu_clk);
		if (!c || c == t->tick_seen)
			continue; /* it has not run since the last look */
		busy = true;
		/* on a CPU right now, or asleep (where a signal could cut a
		 * system call short)? Its clock moves only while it runs. */
		uint64_t c2 = sp_clock_ns(t->cpu_clk);
		uint64_t ran = t->tick_seen ? c - t->tick_seen : 0;
		t->tick_seen = c2;
		if (c2 > c || (2 * ran >= interval_ns && sp_runnable(t->tid)))
			sp_tick_send(pid, t->tid);
	}
	return busy;
}

static void sp_tick_cond_init(void)
{
	pthread_condattr_t a;
	pthread_condattr_init(&a);
	pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
	pthread_cond_init(&sp_tick_wake, &a);
	pthread_condattr_destroy(&a);
}

static void *sp_ticker_main(void *arg)
{
	pid_t pid = getpid();
	sp_tick_tid = sp_gettid();
	uint64_t rnd = sp_now_ns() ^ 0x9e3779b97f4a7c15ull;
	uint64_t next = sp_now_ns(), last = next;
	unsigned backoff = 1;
	pthread_mutex_lock(&sp_tick_lock);
	while (!sp_tick_stop) {
		if (!sp_tick_armed) {
			pthread_cond_wait(&sp_tick_wake, &sp_tick_lock);
			next = last = sp_now_ns();
			backoff = 1;
			continue;
		}
		/* +-50% jitter around the period, times the idle backoff */
		rnd ^= rnd << 13;
		rnd ^= rnd >> 7;
		rnd ^= rnd << 17;
		next += backoff * (sp_tick_period / 2 + rnd % sp_tick_period);
		struct timespec ts = {.tv_sec = (time_t)(next / 1000000000u),
				      .tv_nsec = (long)(next % 1000000000u)};
		int rc = 0;
		while (!sp_tick_stop && rc != ETIMEDOUT)
			rc = pthread_cond_timedwait(&sp_tick_wake, &sp_tick_lock, &ts);
		if (sp_tick_stop)
			break;
		uint64_t now = sp_now_ns();
		if (now > next + 8 * sp_tick_period)
			next = now; /* we were not scheduled for a while: no burst to catch up */
		bool busy = sp_tick_scan(pid, now - last);
		last = now;
		if (busy)
			backoff = 1;
		else if (backoff < SP_TICK_MAX_BACKOFF)
			backoff *= 2;
	}
	pthread_mutex_unlock(&sp_tick_lock);
	return NULL;
}

static int sp_ticker_start(void)
{
	uint64_t period_ns = sp_g.period_ns;
	pthread_once(&sp_tick_once, sp_tick_cond_init);
	pthread_mutex_lock(&sp_tick_lock);
	sp_tick_period = period_ns ? period_ns : 1;
	sp_tick_stop = false;
	bool running = sp_tick_running;
	pthread_mutex_unlock(&sp_tick_lock);
	if (running)
		return 0;
	int rc = sp_spawn_quiet(&sp_tick_thread, sp_ticker_main, NULL);
	if (rc)
		return -rc;
	pthread_setname_np(sp_tick_thread, "stackprof-tick");
	sp_tick_running = true;
	return 0;
}

static void sp_ticker_stop(void)
{
	if (!sp_tick_running)
		return;
	pthread_mutex_lock(&sp_tick_lock);
	sp_tick_stop = true;
	pthread_cond_broadcast(&sp_tick_wake);
	pthread_mutex_unlock(&sp_tick_lock);
	sp_join_quiet(sp_tick_thread, sp_tick_tid);
	sp_tick_running = false;
}

/* Under sp_tick_lock: t starts being looked at, its CPU so far not counted. */
static void sp_tick_on(struct sp_thread *t)
{
	if (t->tick_on)
		return;
	t->tick_seen = 0; /* looked at from the next wake-up on */
	t->tick_on = true;
	if (sp_tick_armed++ == 0)
		pthread_cond_broadcast(&sp_tick_wake);
}

static void sp_tick_off(struct sp_thread *t)
{
	if (!t->tick_on)
		return;
	t->tick_on = false;
	sp_tick_armed--;
}

static int sp_ticker_arm(struct sp_thread *t)
{
	pthread_once(&sp_tick_once, sp_tick_cond_init);
	pthread_mutex_lock(&sp_tick_lock);
	sp_tick_on(t);
	pthread_mutex_unlock(&sp_tick_lock);
	t->armed = true;
	return 0;
}

static void sp_ticker_pause(struct sp_thread *t)
{
	pthread_mutex_lock(&sp_tick_lock);
	sp_tick_off(t);
	pthread_mutex_unlock(&sp_tick_lock);
}

static void sp_ticker_resume(struct sp_thread *t)
{
	sp_cputime_resume_base(t);
	pthread_mutex_lock(&sp_tick_lock);
	if (t->armed)
		sp_tick_on(t);
	pthread_mutex_unlock(&sp_tick_lock);
}

static void sp_ticker_disarm(struct sp_thread *t)
{
	sp_ticker_pause(t);
	t->armed = false;
}

static void sp_ticker_atfork(int phase)
{
	if (phase == 0) {
		pthread_mutex_lock(&sp_tick_lock);
		return;
	}
	if (phase == 1) {
		pthread_mutex_unlock(&sp_tick_lock);
		return;
	}
	/* the child has none of the parent's threads, the ticker included */
	pthread_mutex_init(&sp_tick_lock, NULL);
	sp_tick_cond_init();
	sp_tick_running = false;
	sp_tick_armed = 0;
	uint32_t n = atomic_load(&sp_g.n_slots);
	for (uint32_t i = 0; i < n; i++)
		sp_g.threads[i].tick_on = false;
}

static void sp_ticker_unpark(void)
{
	int err = sp_ticker_start();
	if (err)
		sp_log("cannot restart the sampler thread: %s; no samples will be taken",
		       strerror(-err));
}

/* the sampler thread's sigqueue, with the cookie. Signal-safe. */
SP_SIGSAFE static bool sp_ticker_owns(const struct sp_thread *t, const siginfo_t *si)
{
	(void)t;
	return si->si_code == SI_QUEUE && si->si_pid == sp_g.pid &&
	       si->si_value.sival_ptr == (void *)SP_TRAP_COOKIE;
}

/* The weight is the CPU time since the last handler, as with perf events:
 * a thread that was asleep at a wake-up is signalled at a later one. Its
 * wake-ups are jittered, so it is counted as randomized. Never auto's
 * pick: where an interrupt between processors is slow (a VM: ~20 us), its
 * samples slide to the sampled thread's next system call
 * (docs/SAMPLER.md). */
static const struct sp_source sp_ticker_source = {
    .name = "sampler-thread",
    .kind = SP_EVENT_CPU,
    .timer = "thread",
    .randomized = true,
    .signo = SIGPROF,
    .start = sp_ticker_start,
    .stop = sp_ticker_stop,
    .park = sp_ticker_stop,
    .unpark = sp_ticker_unpark,
    .atfork = sp_ticker_atfork,
    .attach = sp_ticker_arm,
    .detach = sp_ticker_disarm,
    .pause_thread = sp_ticker_pause,
    .resume_thread = sp_ticker_resume,
    .owns = sp_ticker_owns,
    .weight = sp_cpu_weight,
};

__attribute__((constructor(SP_SOURCE_PRIORITY))) static void sp_ticker_register(void)
{
	sp_source_register(&sp_ticker_source);
}
