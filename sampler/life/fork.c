/*
 * fork.c - the fork hooks (fork.h).
 */
#include "sampler/core/source.h"
#include "sampler/life/fork.h"
#include "sampler/capture/pystack.h"
#include "sampler/life/api.h"
#include "sampler/life/interpose.h"
#include "sampler/capture/modules.h"
#include "sampler/life/python.h"
#include "sampler/core/sampler.h"
#include "sampler/capture/sigstack.h"
#include "sampler/capture/sigshare.h"
#include "sampler/base/sys.h"
#include "sampler/life/thread.h"
#include "sampler/core/ownthreads.h"
#include "sampler/capture/unwcheck.h"
#include "sampler/writer/writer.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

/*
 * Every lock of ours is taken before fork, in the order their holders take
 * them (sp_g.lock, Python's, modules, ranges, schedule, the ticker's, then
 * the descriptors' section, which the ticker's thread and a warm-up of
 * libunwind enter with their own held: taken before them, it deadlocked a
 * fork under --timer thread), so that no data they guard is
 * half-written in the child. The child re-initializes them rather than
 * unlocking: a condition variable copied while the parent's writer waited
 * on it still counts that waiter, and a broadcast in the child would wait
 * for it forever.
 *
 * The child of a multi-threaded fork must take no lock that another thread
 * could have held, since that thread is gone: only ours are known free. The
 * modules lock also covers every call of ours to glibc's dl_iterate_phdr
 * (whose lock glibc 2.36 does not reset in the child) and every warm-up of
 * libunwind (whose locks can't be reset), so none is under way at the fork;
 * the thread that forks was warmed in the parent and is not warmed again.
 * A fork during the program's own dlopen or dlclose may leave the loader's
 * lock held in the child, and a module half closed: modules.c then never
 * calls dl_iterate_phdr there, and that child is not profiled.
 */
static void sp_fork_prepare(void)
{
	sp_park_atfork(0);
	pthread_mutex_lock(&sp_g.lock);
	sp_python_atfork(0);
	sp_modules_atfork(0);
	sp_api_atfork(0);
	sp_sources_atfork(0);
	sp_fds_atfork(0);
	sp_share_atfork(0);
}

static void sp_fork_parent(void)
{
	sp_share_atfork(1);
	sp_fds_atfork(1);
	sp_sources_atfork(1);
	sp_api_atfork(1);
	sp_modules_atfork(1);
	sp_python_atfork(1);
	pthread_mutex_unlock(&sp_g.lock);
	sp_park_atfork(1);
}

/* The child profiles itself into its own file; the parent's threads are gone. */
static void sp_fork_child(void)
{
	sp_share_atfork(2);
	sp_fds_atfork(2);
	sp_sources_atfork(2);
	sp_api_atfork(2);
	sp_modules_atfork(2);
	sp_python_atfork(2);
	pthread_mutex_init(&sp_g.lock, NULL);
	pthread_cond_init(&sp_g.wake, NULL);
	sp_park_atfork(2);
	atomic_store(&sp_g.own_threads, 0); /* ours stayed in the parent */
	if (!atomic_load(&sp_g.enabled))
		return;
	struct sp_thread *self = sp_self;
	uint32_t n = atomic_load(&sp_g.n_slots);
	for (uint32_t i = 0; i < n; i++) {
		struct sp_thread *t = &sp_g.threads[i];
		if (t == self)
			continue;
		sp_ring_release(&t->ring);
		atomic_store(&t->state, SP_SLOT_FREE);
	}
	/* the other threads' handlers are gone with them */
	for (uint32_t i = 0; i < n; i++)
		atomic_store(&sp_g.threads[i].in_modules, 0);
	sp_writer_forget();
	sp_pystack_atfork_child();
	sp_unwcheck_atfork_child();
	sp_g.pid = getpid();
	sp_g.start_mono_ns = sp_now_ns();
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	sp_g.start_real_ns = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
	char py_name[sizeof(self->py_name)] = "";
	if (self) {
		memcpy(py_name, self->py_name, sizeof(py_name)); /* the child keeps its name */
		sp_sigstack_detach(self);
		sp_self = NULL;
		sp_ring_release(&self->ring);
		atomic_store(&self->state, SP_SLOT_FREE);
	}
	sp_thread_atfork_child();
	atomic_store(&sp_g.setup_ns, 0); /* the child's profile counts its own */
	atomic_store(&sp_g.aside_ns, 0);
	uint64_t c0 = sp_thread_cpu_ns();
	/* forked during the program's dlopen or dlclose: the loader's lock may
	 * be held for good, and the inherited modules may hold one unmapped */
	if (!sp_modules_loader_usable() ||
	    sp_call_aside(sp_writer_start) < 0) { /* its stack: ownthreads.h */
		atomic_store(&sp_g.enabled, false);
		return;
	}
	sp_sources_start();
	atomic_fetch_add(&sp_g.setup_ns, sp_own_cpu_since(c0, 0)); /* before its slot */
	sp_thread_attach(py_name[0] ? py_name : NULL);
}

int sp_fork_init(void)
{
	return -pthread_atfork(sp_fork_prepare, sp_fork_parent, sp_fork_child);
}
