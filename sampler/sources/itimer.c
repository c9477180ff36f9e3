/*
 * itimer.c - itimer-prof (STACKPROF_TIMER=itimer): setitimer(ITIMER_PROF).
 * Process-wide, unfair between threads, one signal per tick at most, and
 * starved under load when the program reads its thread's CPU clock
 * (docs/SAMPLER.md). auto's last resort.
 */
#include "sampler/core/sampler.h"
#include "sampler/core/source.h"
#include "format/profile.h"
#include "sampler/sources/cputime.h"

#include <errno.h>
#include <string.h>
#include <sys/time.h>

static int sp_itimer_set(void)
{
	uint64_t period_ns = sp_g.period_ns;
	struct itimerval it;
	it.it_interval.tv_sec = (time_t)(period_ns / 1000000000u);
	it.it_interval.tv_usec = (suseconds_t)(period_ns % 1000000000u / 1000u);
	it.it_value = it.it_interval;
	return setitimer(ITIMER_PROF, &it, NULL) < 0 ? -errno : 0;
}

static int sp_itimer_start(void)
{
	return atomic_load(&sp_g.sampling) ? sp_itimer_set() : 0;
}

static void sp_itimer_pause(void)
{
	struct itimerval it;
	memset(&it, 0, sizeof(it));
	setitimer(ITIMER_PROF, &it, NULL);
}

static void sp_itimer_resume(void)
{
	sp_itimer_set();
}

static int sp_itimer_attach(struct sp_thread *t)
{
	t->armed = true;
	return 0;
}

/* ITIMER_PROF: the kernel's. Signal-safe. */
SP_SIGSAFE static bool sp_itimer_owns(const struct sp_thread *t, const siginfo_t *si)
{
	(void)t;
	return si->si_code == SI_KERNEL;
}

/* One signal per tick at most: each weighs the CPU time its thread used
 * since its last one, not a period. */
static const struct sp_source sp_itimer_source = {
    .name = "itimer-prof",
    .kind = SP_EVENT_CPU,
    .timer = "itimer",
    .auto_rank = 4,
    .signo = SIGPROF,
    .start = sp_itimer_start,
    .stop = sp_itimer_pause,
    .pause = sp_itimer_pause,
    .resume = sp_itimer_resume,
    /* a paused thread's CPU time is in no sample */
    .resume_thread = sp_cputime_resume_base,
    .attach = sp_itimer_attach,
    .owns = sp_itimer_owns,
    .weight = sp_cpu_weight,
};

__attribute__((constructor(SP_SOURCE_PRIORITY))) static void sp_itimer_register(void)
{
	sp_source_register(&sp_itimer_source);
}
