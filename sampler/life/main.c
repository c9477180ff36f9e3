/*
 * main.c - libstackprof.so's constructor and destructor, and small helpers.
 *
 * Order matters in the constructor: everything the handler touches (thread
 * table, module snapshot, libunwind, the writer) exists before the first
 * timer is armed, and the handler is installed before that too.
 */
#include "sampler/core/source.h"
#include "sampler/life/main.h"
#include "sampler/life/api.h"
#include "sampler/life/fork.h"
#include "sampler/life/interpose.h"
#include "sampler/capture/modules.h"
#include "sampler/base/procstat.h"
#include "sampler/life/python.h"
#include "sampler/core/sampler.h"
#include "sampler/core/upcalls.h"
#include "sampler/life/signals.h"
#include "sampler/base/sys.h"
#include "sampler/life/termsig.h"
#include "sampler/life/thread.h"
#include "sampler/core/ownthreads.h"
#include "sampler/capture/unwcheck.h"
#include "sampler/capture/unwind.h"
#include "sampler/writer/writer.h"

#include <dlfcn.h>
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

/* What the writer asks of the life cycle above it (core/upcalls.h). */
static const struct sp_upcalls sp_life_upcalls = {
    .orphan_check = sp_orphan_check,
    .python_refresh = sp_python_refresh,
    .missed_ns = sp_thread_missed_ns,
};

__attribute__((constructor)) static void sp_init(void)
{
	sp_upcalls_set(&sp_life_upcalls);
	sp_config_load(&sp_g.cfg);
	sp_log_quiet = sp_g.cfg.quiet;
	if (getauxval(AT_SECURE)) {
		sp_log("setuid/setgid program: stackprof leaves it alone");
		sp_log_close();
		return;
	}
	uint64_t c0 = sp_thread_cpu_ns();
	sp_g.pid = getpid();
	sp_g.start_mono_ns = sp_now_ns();
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	sp_g.start_real_ns = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
	sp_g.period_ns = 1000000000ull / sp_g.cfg.freq_hz;

	/* reserved: only the slots threads use are ever backed (sampler.h) */
	void *tab =
	    mmap(NULL, (size_t)sp_g.cfg.max_threads * sizeof(struct sp_thread),
		 PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (tab == MAP_FAILED) {
		sp_log("cannot map the thread table: %s; not profiling", strerror(errno));
		return;
	}
	sp_g.threads = tab;
	if (sp_fds_init() < 0 || sp_modules_init() < 0 || sp_thread_init() < 0 ||
	    sp_fork_init() < 0) {
		sp_log("set-up failed; not profiling");
		return;
	}
	int err = sp_unwind_init();
	if (err)
		sp_log("libunwind.so.8 could not be loaded (%s): stacks end at the first frame "
		       "stackprof's own unwinder can't step (signal handlers, PLT stubs)",
		       strerror(-err));
	sp_g.cpu = sp_source_choose_cpu(sp_g.cfg.timer);
	if (!sp_g.cpu) {
		sp_log("no CPU timer can run here; not profiling");
		return;
	}
	sp_api_init();
	err = sp_handler_install();
	if (err) {
		sp_log("the program already handles SIGPROF; stackprof steps aside");
		return;
	}
	atomic_store(&sp_g.enabled, true);
	if (sp_call_aside(sp_writer_start) < 0) { /* its stack: ownthreads.h */
		atomic_store(&sp_g.enabled, false);
		return;
	}
	sp_term_install();
	sp_sources_start();
	atomic_fetch_add(&sp_g.setup_ns, sp_thread_cpu_ns() - c0);
	sp_thread_attach(NULL); /* counts its own */
	c0 = sp_thread_cpu_ns();
	uint64_t h0 = sp_self_handler_ns();
	/* after the main thread's slot: python.c finds glibc's key block by it */
	sp_python_init();
	atomic_fetch_add(&sp_g.setup_ns, sp_own_cpu_since(c0, h0));
	if (sp_g.cfg.verbose)
		sp_log("profiling to %s with %s at %u Hz", sp_g.path, sp_g.cpu->name,
		       sp_g.cfg.freq_hz);
}

/* The process that finishes (or finished) its profile; a fork child is another. */
static _Atomic pid_t sp_finisher;

void sp_finish(int sig)
{
	pid_t me = getpid();
	pid_t was = atomic_load(&sp_finisher);
	do {
		if (was == me)
			return; /* done, or under way on another thread */
	} while (!atomic_compare_exchange_weak(&sp_finisher, &was, me));
	if (!atomic_load(&sp_g.enabled) || me != sp_g.pid)
		return;
	sp_park_stop();
	/* no sample from here on, and no start (api.c): a handler on its way
	 * sees it before any system call, and a one-shot timer is not set
	 * again (posix.c) */
	atomic_store(&sp_g.ended, true);
	atomic_store(&sp_g.sampling, false);
	sp_sources_pause();
	sp_sources_stop();
	sp_unwcheck_report();
	sp_writer_stop(true, sig);
	atomic_store(&sp_g.enabled, false);
	if (sp_g.cfg.verbose)
		sp_log("profile written to %s", sp_g.path);
}

static void *sp_finisher_main(void *arg)
{
	prctl(PR_SET_NAME, "stackprof-fin", 0, 0, 0);
	sp_finish((int)(intptr_t)arg);
	return NULL;
}

void sp_finish_aside(int sig, bool here)
{
	/* sp_finish's own test, before a thread is made for nothing: not set
	 * up, finished already, or a vfork child (its parent's memory) */
	if (!atomic_load(&sp_g.enabled) || atomic_load(&sp_g.stopping) || getpid() != sp_g.pid)
		return;
	pthread_t t;
	if (sp_spawn_quiet(&t, sp_finisher_main, (void *)(intptr_t)sig) == 0)
		sp_join_quiet(t, 0);
	else if (here)
		sp_finish(sig);
}

/*
 * The program's threads alive now (the caller too, if it is one): the
 * process's threads less stackprof's own, less the leader if it has
 * exited (it stays a zombie, counted, until the last thread goes). leader
 * gets what the leader's task says. -1 if unknown.
 */
static long sp_program_threads(struct sp_task_stat *leader)
{
	char path[64], buf[1024];
	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", (int)sp_g.pid);
	if (sp_read_small(path, buf, sizeof(buf)) <= 0 || sp_procstat_task(buf, leader) < 0)
		return -1;
	long n = leader->threads - atomic_load(&sp_g.own_threads);
	return leader->state == 'Z' || leader->state == 'X' ? n - 1 : n;
}

void sp_finish_if_last(void)
{
	if (!atomic_load(&sp_g.enabled) || atomic_load(&sp_g.stopping) || getpid() != sp_g.pid)
		return;
	struct sp_task_stat leader;
	if (sp_program_threads(&leader) == 1)
		sp_finish_aside(0, true);
}

/*
 * The last of stackprof's threads, once no program thread is left: it
 * finishes the profile (joining the writer and the ticker), then ends the
 * process as the kernel would have. If every program thread left through
 * glibc (pthread_exit, or a return from its start routine), glibc's count
 * of threads is down to this one, and returning makes glibc call exit(0),
 * as the last program thread's exit would have: atexit handlers and
 * stdio's flush run. Otherwise a thread left by the raw system call, and
 * this one does too, with the leader's status (the kernel gives the
 * process the status of its last thread to exit: the one of a program
 * thread that left after the leader is not known, and the leader's is
 * taken for it); a leader killed alone (SIGKILL: strict seccomp) kills the
 * process with that signal.
 */
static void *sp_orphan_main(void *arg)
{
	(void)arg;
	prctl(PR_SET_NAME, "stackprof-fin", 0, 0, 0);
	sp_log("no thread of the program is left: the profile is finished, and the process ends");
	sp_finish(0);
	const int *nthreads = dlsym(RTLD_DEFAULT, "__nptl_nthreads");
	if (nthreads && atomic_load((_Atomic int *)nthreads) == 1)
		return NULL;
	struct sp_task_stat leader = {0, 0, 0};
	sp_program_threads(&leader);
	if (leader.exit_code & 0x7f)
		syscall(SYS_tgkill, sp_g.pid, sp_gettid(), leader.exit_code & 0x7f);
	for (;;)
		syscall(SYS_exit, (leader.exit_code >> 8) & 0xff);
}

/* The shortest time between two of the watchdog's readings of the leader's
 * task. A reading opens and reads a /proc file: 5 system calls, 50-90 us a
 * pass on a cold VM, a quarter of the writer's CPU at 100 Hz when it was
 * taken every pass. A process left with no program thread ends within two
 * readings: two seconds at most. */
#define SP_ORPHAN_EVERY_NS 1000000000ull

bool sp_orphan_check(void)
{
	/* seen twice in a row, a pass apart: no thread of ours was starting
	 * (counted before it shows in /proc) at either reading */
	static pid_t seen;
	static uint64_t last_ns;
	uint64_t now = sp_now_ns();
	if (now - last_ns < SP_ORPHAN_EVERY_NS)
		return false;
	last_ns = now;
	struct sp_task_stat leader;
	bool spawning = sp_spawn_busy();
	long n = sp_program_threads(&leader);
	if (spawning || sp_spawn_busy() || n != 0) {
		seen = 0;
		return false;
	}
	if (seen != sp_g.pid) {
		seen = sp_g.pid;
		return false;
	}
	pthread_t t;
	if (sp_spawn_quiet(&t, sp_orphan_main, NULL) != 0)
		return false;
	pthread_detach(t);
	return true;
}

__attribute__((destructor)) static void sp_fini(void)
{
	/* exit() may come from a thread with a small stack of its own */
	sp_finish_aside(0, true);
}
