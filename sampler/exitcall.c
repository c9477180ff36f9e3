/*
 * exitcall.c - a process that ends with _exit() or _Exit() still leaves a
 * complete profile.
 *
 * _exit runs no destructors, so the profile would end at the writer's last
 * flush: up to 200 ms of samples lost, and the profile read as
 * "truncated" although nothing went wrong. Every Python multiprocessing
 * worker started with the fork method ends that way (popen_fork.py calls
 * os._exit with the worker's exit code), and so every PyTorch DataLoader
 * worker did: workers that used 0.705 s of CPU held 0.545 s in their
 * profiles. Daemons that fork and _exit in the parent, and children whose
 * exec failed, end the same way. So _exit and _Exit (glibc's _Exit is an
 * alias, but a program may call either name) finish the profile first, the
 * way the destructor does (sp_finish), then call the real function with the
 * same status.
 *
 * Only when it is safe, and nothing is finished otherwise (the profile then
 * ends at its last flush, as before; never a hang):
 *
 * - sampling is set up and not already stopping, and this is the process
 *   that set it up (getpid() == sp_g.pid): a vfork child shares the
 *   parent's memory and runs no atfork handler, so it must touch nothing
 *   (its sp_g.pid is still the parent's); a forked child has its own
 *   writer, restarted by fork.c, and finishes its own profile;
 * - not from a signal handler. _exit is async-signal-safe, and C programs
 *   call it from SIGTERM or SIGSEGV handlers; finishing there (malloc,
 *   locks, zlib, joining the writer) could wait forever on a lock the
 *   interrupted code holds. No call says "inside a handler", so two signs
 *   of one are taken: the calling thread has a signal blocked (the kernel
 *   blocks a handler's own signal while it runs, unless SA_NODEFER, and
 *   stackprof's handlers block every signal but SIGSEGV and SIGBUS, which
 *   are forwarded to the program's handlers under the mask the kernel would
 *   have set), or it runs on its alternate signal stack (where only
 *   handlers run). A handler installed with SA_NODEFER and an empty
 *   sa_mask, on the ordinary stack, looks like any other code and does
 *   finish; a thread that blocks a signal on purpose (xz's workers start
 *   with every one blocked) does not, and keeps the truncated profile.
 *
 * The finishing itself runs on a thread of stackprof's own, which the
 * caller waits for: the final flush needs over 80 KiB of stack (a 64 KiB
 * buffer in sp_jit_sync, 16 KiB in deflate), and _exit is called from
 * coroutines and small thread stacks too; finishing on a 64 KiB
 * sigaltstack overflowed it and the process died of SIGSEGV instead of
 * exiting with its status. If that thread cannot be started, nothing is
 * finished.
 *
 * Only calls that go through the dynamic linker are seen: glibc's own
 * (exit() after the destructors, posix_spawn's child) and a raw
 * syscall(SYS_exit_group) are not, and a static program is not profiled
 * at all. Not async-signal-safe when it finishes, like the destructor's
 * path it takes; when it does not, it is as safe as _exit.
 */
#include "sampler/interpose.h"
#include "sampler/main.h"
#include "sampler/sampler.h"

#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

/* Whether the calling thread shows a sign of running a signal handler. */
static bool sp_maybe_in_handler(void)
{
	sigset_t mask;
	sigemptyset(&mask); /* the kernel fills only its 64 signals */
	if (pthread_sigmask(SIG_BLOCK, NULL, &mask) != 0)
		return true;
	for (int sig = 1; sig < NSIG; sig++)
		if (sigismember(&mask, sig) == 1)
			return true;
	/* the system call itself: sigstack.c answers the program's queries
	 * as if stackprof's own region were not there */
	stack_t ss;
	if (syscall(SYS_sigaltstack, NULL, &ss) != 0 || (ss.ss_flags & SS_ONSTACK))
		return true;
	return false;
}

static void sp_before_exit_call(void)
{
	int e = errno;
	/* nothing to finish: no system call either (a seccomp filter, seccomp.c) */
	if (atomic_load(&sp_g.enabled) && !sp_maybe_in_handler())
		sp_finish_aside(0, false);
	errno = e;
}

/*
 * The real functions, looked up in the constructor: dlsym is not
 * async-signal-safe, and _exit is called from signal handlers. A call
 * before our constructor ran looks them up then.
 */
static void (*sp_real__exit)(int);
static void (*sp_real__Exit)(int);

__attribute__((constructor)) static void sp_exitcall_init(void)
{
	sp_real__exit = SP_REAL(_exit);
	sp_real__Exit = SP_REAL(_Exit);
}

/* The process ends here whatever happened: no real function (never seen)
 * ends it with the system call. */
static _Noreturn void sp_end(void (*real)(int), int status)
{
	if (real)
		real(status);
	for (;;)
		syscall(SYS_exit_group, status);
}

SP_EXPORT void _exit(int status)
{
	sp_before_exit_call();
	if (!sp_real__exit)
		sp_real__exit = SP_REAL(_exit);
	sp_end(sp_real__exit, status);
}

SP_EXPORT void _Exit(int status)
{
	sp_before_exit_call();
	if (!sp_real__Exit)
		sp_real__Exit = SP_REAL(_Exit);
	sp_end(sp_real__Exit, status);
}
