/*
 * posix.c - posix-cputimer, a CPU timer per thread (posix.h).
 */
#include "sampler/sources/posix.h"
#include "sampler/core/sampler.h"
#include "sampler/core/source.h"
#include "format/profile.h"
#include "sampler/base/sys.h"
#include "sampler/sources/cputime.h"

#include <errno.h>
#include <string.h>

#ifndef sigev_notify_thread_id
#define sigev_notify_thread_id _sigev_un._tid
#endif

/* A one-shot expiry in [period/2, 3 period/2): the mean is the period, and
 * no two samples keep the distance that would lock them to a phase. */
SP_SIGSAFE static void sp_posix_set(struct sp_thread *t)
{
	uint64_t period_ns = sp_g.period_ns;
	uint64_t next = period_ns / 2 + sp_cputime_rand(t) % (period_ns ? period_ns : 1);
	struct itimerspec its = {.it_interval = {0, 0}, .it_value = sp_cputime_ts(next ? next : 1)};
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

static int sp_posix_attach(struct sp_thread *t)
{
	int err = sp_posix_create(&t->timer_id);
	if (err)
		return err;
	sp_cputime_seed(t);
	/* the first expiry anywhere in [1, period]: threads don't fire in step */
	struct itimerspec its = {.it_value =
				     sp_cputime_ts(1 + sp_cputime_rand(t) % sp_g.period_ns)};
	if (timer_settime(t->timer_id, 0, &its, NULL) < 0) {
		int e = errno;
		timer_delete(t->timer_id);
		return -e;
	}
	t->armed = true;
	return 0;
}

int sp_posix_take(struct sp_thread *t)
{
	atomic_fetch_add(&sp_g.timer_fallbacks, 1);
	t->cpu = &sp_posix_source;
	return sp_posix_attach(t);
}

static void sp_posix_pause(struct sp_thread *t)
{
	struct itimerspec its;
	memset(&its, 0, sizeof(its));
	if (t->armed)
		timer_settime(t->timer_id, 0, &its, NULL);
}

static void sp_posix_resume(struct sp_thread *t)
{
	sp_cputime_resume_base(t);
	if (t->armed)
		sp_posix_set(t);
}

static void sp_posix_detach(struct sp_thread *t)
{
	if (t->armed)
		timer_delete(t->timer_id);
	t->armed = false;
}

/* From the handler (or a wait that took the signal). Nothing while
 * sampling is off: a resume sets the next expiry. A pause stores sampling
 * off, then disarms: one that came between the check and this expiry
 * would be undone by it, so the expiry is taken back when sampling is off
 * by now, and set again if a resume came meanwhile. */
SP_SIGSAFE static void sp_posix_rearm(struct sp_thread *t)
{
	if (!t->armed || !atomic_load(&sp_g.sampling))
		return;
	sp_posix_set(t);
	if (atomic_load(&sp_g.sampling))
		return;
	struct itimerspec its = {{0, 0}, {0, 0}};
	timer_settime(t->timer_id, 0, &its, NULL);
	if (atomic_load(&sp_g.sampling))
		sp_posix_set(t);
}

static int sp_posix_probe(void)
{
	timer_t id;
	int err = sp_posix_create(&id);
	if (!err)
		timer_delete(id);
	return err;
}

/* t's own timer. Signal-safe. */
SP_SIGSAFE static bool sp_posix_owns(const struct sp_thread *t, const siginfo_t *si)
{
	/* glibc's timer_t is the kernel's timer id */
	return si->si_code == SI_TIMER && t && t->armed &&
	       si->si_timerid == (int)(intptr_t)t->timer_id;
}

const struct sp_source sp_posix_source = {
    .name = "posix-cputimer",
    .kind = SP_EVENT_CPU,
    .timer = "posix",
    .auto_rank = 3,
    .needs = "timer_create on a thread's CPU clock",
    .randomized = true,
    .signo = SIGPROF,
    .probe = sp_posix_probe,
    .attach = sp_posix_attach,
    .detach = sp_posix_detach,
    .pause_thread = sp_posix_pause,
    .resume_thread = sp_posix_resume,
    .owns = sp_posix_owns,
    .weight = sp_cpu_weight,
    .rearm = sp_posix_rearm,
};

__attribute__((constructor(SP_SOURCE_PRIORITY))) static void sp_posix_register(void)
{
	sp_source_register(&sp_posix_source);
}
