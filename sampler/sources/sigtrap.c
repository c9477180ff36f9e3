/*
 * sigtrap.c - perf-sigtrap (STACKPROF_TIMER=trap), auto's first pick:
 * perf_event's task clock, an hrtimer on each thread's CPU time, with
 * attr.sigtrap. On each overflow the kernel itself queues SIGTRAP
 * (TRAP_PERF) to the thread that ran, as task work on its way back to
 * user space. One event for the whole process: it is opened on the thread
 * that starts stackprof with inherit and inherit_thread, so every thread
 * created later gets its own counting copy without a descriptor of its
 * own. Not tied to the kernel tick, so samples never lock onto it. Needs
 * Linux 5.13, and no debugger: under one every SIGTRAP stops the program.
 * The program's own SIGTRAP use is kept (capture/sigshare.h).
 */
#include "sampler/base/fds.h"
#include "sampler/core/sampler.h"
#include "sampler/core/source.h"
#include "format/profile.h"
#include "sampler/sources/cputime.h"
#include "sampler/sources/perfevent.h"

#include <errno.h>
#include <linux/perf_event.h>

#ifndef TRAP_PERF
#define TRAP_PERF 6
#endif

static struct sp_fd sp_trap_fd;
static uint64_t sp_trap_id;
static void *sp_trap_pin;

static int sp_trap_start(void)
{
	/* a forked child of a program that has since installed a filter */
	int err = sp_perfev_probe(true);
	if (err)
		return err;
	err = -EAGAIN;
	if (sp_fd_begin()) {
		int fd = sp_perfev_open(0, true);
		err = fd < 0 ? fd : sp_fd_keep(&sp_trap_fd, fd);
		sp_fd_end();
	}
	if (err < 0)
		return err;
	sp_trap_id = sp_perfev_id(err);
	sp_trap_pin = sp_perfev_pin(err);
	/* threads inherit the event as it is when they start: it runs only
	 * while samples are kept */
	if (atomic_load(&sp_g.sampling))
		sp_perfev_ioctl(&sp_trap_fd, sp_trap_id, PERF_EVENT_IOC_ENABLE);
	return 0;
}

static void sp_trap_stop(void)
{
	sp_perfev_ioctl(&sp_trap_fd, sp_trap_id, PERF_EVENT_IOC_DISABLE);
	sp_perfev_unpin(&sp_trap_pin);
	sp_perfev_close(&sp_trap_fd, sp_trap_id);
	sp_trap_id = 0;
}

static int sp_trap_attach(struct sp_thread *t)
{
	t->armed = true; /* its copy of the event came with the thread */
	return 0;
}

static void sp_trap_pause(void)
{
	/* applies to every inherited copy as well */
	sp_perfev_ioctl(&sp_trap_fd, sp_trap_id, PERF_EVENT_IOC_DISABLE);
}

static void sp_trap_resume(void)
{
	sp_perfev_ioctl(&sp_trap_fd, sp_trap_id, PERF_EVENT_IOC_ENABLE);
}

static int sp_trap_probe(void)
{
	/* under a debugger every SIGTRAP stops the program, and the debugger
	 * takes it for a breakpoint: a traced process gets perf-task-clock */
	if (sp_perfev_traced())
		return -EBUSY;
	return sp_perfev_probe(true);
}

static void sp_trap_atfork(int phase)
{
	if (phase != 2)
		return;
	/* the parent's event: the child opens its own */
	sp_perfev_atfork_child();
	sp_perfev_unpin(&sp_trap_pin);
	sp_fd_forget(&sp_trap_fd);
	sp_trap_id = 0;
}

/* perf's code, and the cookie in sig_data. Signal-safe. */
SP_SIGSAFE static bool sp_trap_owns(const struct sp_thread *t, const siginfo_t *si)
{
	(void)t;
	return si->si_code == TRAP_PERF && sp_si_perf_data(si) == SP_TRAP_COOKIE;
}

static const struct sp_source sp_trap_source = {
    .name = "perf-sigtrap",
    .kind = SP_EVENT_CPU,
    .timer = "trap",
    .auto_rank = 1,
    .needs = "perf_event_open with sigtrap (Linux 5.13, perf_event_paranoid <= 2, no "
	     "seccomp filter refusing it) and no debugger",
    .signo = SIGTRAP,
    .probe = sp_trap_probe,
    .start = sp_trap_start,
    .stop = sp_trap_stop,
    .pause = sp_trap_pause,
    .resume = sp_trap_resume,
    .resume_thread = sp_cputime_resume_base,
    .atfork = sp_trap_atfork,
    .attach = sp_trap_attach,
    .owns = sp_trap_owns,
    .weight = sp_cpu_weight,
};

__attribute__((constructor(SP_SOURCE_PRIORITY))) static void sp_trap_register(void)
{
	sp_source_register(&sp_trap_source);
}
