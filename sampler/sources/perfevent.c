/*
 * perfevent.c - opening a perf_event task clock safely (perfevent.h).
 */
#include "sampler/sources/perfevent.h"
#include "sampler/base/fds.h"
#include "sampler/base/sys.h"
#include "sampler/core/sampler.h"
#include "sampler/core/source.h"

#include <errno.h>
#include <linux/perf_event.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

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

static void sp_perf_attr(struct perf_event_attr *a, bool exclude_kernel, bool trap)
{
	memset(a, 0, sizeof(*a));
	a->size = sizeof(*a);
	a->type = PERF_TYPE_SOFTWARE;
	a->config = PERF_COUNT_SW_TASK_CLOCK;
	a->sample_period = sp_g.period_ns;
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
int sp_perfev_open(pid_t tid, bool trap)
{
	struct perf_event_attr a;
	sp_perf_attr(&a, false, trap);
	int fd = sp_perf_open1(&a, tid);
	if (fd < 0) {
		sp_perf_attr(&a, true, trap);
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
static int sp_perf_probe_child(bool trap)
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
		sp_perf_attr(&a, true, trap);
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

int sp_perfev_probe(bool trap)
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
			err = sp_perf_probe_child(trap);
		if (!err) {
			int fd = sp_perfev_open(sp_gettid(), trap);
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
void *sp_perfev_pin(int fd)
{
	void *p = mmap(NULL, (size_t)sysconf(_SC_PAGESIZE), PROT_READ, MAP_SHARED, fd, 0);
	return p == MAP_FAILED ? NULL : p;
}

void sp_perfev_unpin(void **pin)
{
	if (*pin)
		munmap(*pin, (size_t)sysconf(_SC_PAGESIZE));
	*pin = NULL;
}

/* The event's id, which tells its descriptor from anything reusing the number. */
uint64_t sp_perfev_id(int fd)
{
	uint64_t id = 0;
	if (fd < 0 || ioctl(fd, PERF_EVENT_IOC_ID, &id) < 0)
		return 0;
	return id;
}

/* ioctl on f's event if f still names the event with id; false if not. */
bool sp_perfev_ioctl(struct sp_fd *f, uint64_t id, unsigned long req)
{
	int fd = sp_fd_hold(f);
	if (fd < 0)
		return false;
	bool same = id && sp_perfev_id(fd) == id;
	if (same)
		ioctl(fd, req, 0);
	sp_fd_drop(f);
	return same;
}

/* Closes f's event, or lets go of the number without closing it when it
 * names something else now. */
void sp_perfev_close(struct sp_fd *f, uint64_t id)
{
	int fd = sp_fd_hold(f);
	bool same = fd >= 0 && id && sp_perfev_id(fd) == id;
	if (fd >= 0)
		sp_fd_drop(f);
	if (same)
		sp_fd_close(f);
	else
		sp_fd_abandon(f);
}

bool sp_perfev_traced(void)
{
	return sp_proc_status().traced;
}

void sp_perfev_atfork_child(void)
{
	pthread_mutex_init(&sp_probe_lock, NULL); /* a probe of another thread's */
}
