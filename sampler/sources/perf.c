/*
 * perf.c - perf-task-clock (STACKPROF_TIMER=perf): perf_event's task
 * clock per thread, signalling its thread with SIGPROF through fasync
 * (F_SETSIG + F_SETOWN_EX). For traced processes and kernels without
 * sigtrap (sigtrap.c). One descriptor per thread, within a budget
 * (base/fds.h); threads beyond it get posix-cputimer (posix.h).
 */
#include "sampler/base/fds.h"
#include "sampler/base/sys.h"
#include "sampler/core/sampler.h"
#include "sampler/core/source.h"
#include "format/profile.h"
#include "sampler/sources/cputime.h"
#include "sampler/sources/perfevent.h"
#include "sampler/sources/posix.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

/* Descriptors stackprof keeps besides per-thread events: the profile, a
 * file it reads for a moment, libunwind's pipe, its stderr and the
 * manifest (fds.h). */
#define SP_FDS_RESERVED 6

static _Atomic int sp_perf_threads; /* per-thread events open now */

/* How many per-thread events may hold descriptors at once. */
static int sp_perf_budget(void)
{
	int room = sp_fd_room() - SP_FDS_RESERVED;
	return room > 0 ? room : 0;
}

static int sp_perf_attach(struct sp_thread *t)
{
	/* refused now (a seccomp filter installed since): a POSIX timer */
	if (sp_perfev_probe(false) != 0)
		return sp_posix_take(t);
	if (atomic_fetch_add(&sp_perf_threads, 1) >= sp_perf_budget()) {
		/* no descriptor left for this thread: it gets a POSIX timer */
		atomic_fetch_sub(&sp_perf_threads, 1);
		return sp_posix_take(t);
	}
	pid_t tid = sp_gettid();
	int err = -EAGAIN;
	if (sp_fd_begin()) {
		int fd = sp_perfev_open(tid, false);
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
	t->perf_id = sp_perfev_id(err);
	t->perf_pin = sp_perfev_pin(err);
	if (!sp_perfev_ioctl(&t->perf, t->perf_id, PERF_EVENT_IOC_ENABLE)) {
		sp_perfev_unpin(&t->perf_pin);
		sp_perfev_close(&t->perf, t->perf_id);
		atomic_fetch_sub(&sp_perf_threads, 1);
		return -EBADF;
	}
	t->armed = true;
	return 0;
}

static void sp_perf_pause(struct sp_thread *t)
{
	if (t->armed)
		sp_perfev_ioctl(&t->perf, t->perf_id, PERF_EVENT_IOC_DISABLE);
}

static void sp_perf_resume(struct sp_thread *t)
{
	sp_cputime_resume_base(t);
	if (t->armed)
		sp_perfev_ioctl(&t->perf, t->perf_id, PERF_EVENT_IOC_ENABLE);
}

static void sp_perf_detach(struct sp_thread *t)
{
	if (t->armed) {
		sp_perfev_ioctl(&t->perf, t->perf_id, PERF_EVENT_IOC_DISABLE);
		sp_perfev_unpin(&t->perf_pin);
		sp_perfev_close(&t->perf, t->perf_id);
		atomic_fetch_sub(&sp_perf_threads, 1);
	}
	t->armed = false;
}

static int sp_perf_probe(void)
{
	return sp_perfev_probe(false);
}

static void sp_perf_atfork(int phase)
{
	if (phase != 2)
		return;
	/* the descriptors of the parent's events came along: let go of them */
	sp_perfev_atfork_child();
	uint32_t n = atomic_load(&sp_g.n_slots);
	for (uint32_t i = 0; i < n; i++) {
		sp_perfev_unpin(&sp_g.threads[i].perf_pin);
		sp_fd_forget(&sp_g.threads[i].perf);
	}
	atomic_store(&sp_perf_threads, 0);
}

/* fasync: POLL_IN for an overflow, POLL_HUP at the end. Signal-safe. */
SP_SIGSAFE static bool sp_perf_owns(const struct sp_thread *t, const siginfo_t *si)
{
	(void)t;
	return si->si_code >= POLL_IN && si->si_code <= POLL_HUP;
}

static const struct sp_source sp_perf_source = {
    .name = "perf-task-clock",
    .kind = SP_EVENT_CPU,
    .timer = "perf",
    .auto_rank = 2,
    .needs = "perf_event_open (perf_event_paranoid <= 2, no seccomp filter refusing it)",
    .signo = SIGPROF,
    .probe = sp_perf_probe,
    .atfork = sp_perf_atfork,
    .attach = sp_perf_attach,
    .detach = sp_perf_detach,
    .pause_thread = sp_perf_pause,
    .resume_thread = sp_perf_resume,
    .owns = sp_perf_owns,
    .weight = sp_cpu_weight,
};

__attribute__((constructor(SP_SOURCE_PRIORITY))) static void sp_perf_register(void)
{
	sp_source_register(&sp_perf_source);
}
