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
#include "sampler/life/interpose.h"
#include "sampler/life/main.h"
#include "sampler/core/sampler.h"
#include "sampler/base/sys.h"

#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#define SP_STR2(x) #x
#define SP_STR(x)  SP_STR2(x)

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
/* read by the assembly entry of exit() below, so not static */
__attribute__((visibility("hidden"))) void (*sp_real_exit)(int);

/* The pid of the last process that ran the exit handlers (sp_exit_seen). */
static _Atomic pid_t sp_exit_ran;

static void sp_exit_seen(void)
{
	/* only while sampling is set up: after a normal exit's finish there is
	 * nothing to learn, and after a seccomp filter's even getpid() may be
	 * forbidden (a vfork child's exit finds it still set: its parent's) */
	if (atomic_load(&sp_g.enabled))
		atomic_store(&sp_exit_ran, getpid());
}

__attribute__((constructor)) static void sp_exitcall_init(void)
{
	sp_real__exit = SP_REAL(_exit);
	sp_real__Exit = SP_REAL(_Exit);
	sp_real_exit = SP_REAL(exit);
	/* Registered before the dynamic linker's own exit handler (_dl_fini,
	 * which runs the destructors, ours among them): the libraries'
	 * constructors run before __libc_start_main registers it, and the
	 * handlers run last registered first. So this one runs after every
	 * other, once the exit handlers have all been used up. */
	atexit(sp_exit_seen);
}

/*
 * vfork children that call exit() instead of _exit().
 *
 * A vfork child shares its parent's memory until it execs or ends, and
 * exit() runs the exit handlers in that memory: glibc takes each one off
 * its list as it runs it, marks the list done (after which it refuses any
 * new handler), and _dl_fini, one of them, marks every library's
 * destructors as run. The parent's own exit() then finds nothing to run:
 * stackprof's destructor never ran in it, and its profile ended at the
 * writer's last flush (35 of 50 samples, read as truncated). The program's
 * own handlers are lost the same way, profiled or not; only stackprof's
 * must come back.
 *
 * The sign: sp_exit_seen, the last exit handler, ran in another process
 * than the one that set sampling up. The list can't be repaired (its
 * state is glibc's own), so the parent finishes its profile on the two
 * ways out left to it: exit() called by the program (interposed below,
 * from any thread), and, when the main thread is the one that vforked, a
 * destructor of that thread's thread_local data (__cxa_thread_atexit_impl),
 * which exit() still runs first, also when main returns. Both act only
 * after the loss; otherwise the destructor finishes, as always, after the
 * program's own exit handlers. The thread's list is shared with the vfork
 * child as well and used up by its exit(): it is armed again after each
 * child (vfork is interposed, as glibc writes it, so that the parent gets
 * control back once the child has exec'ed or ended).
 */
static bool sp_exit_lost(void)
{
	pid_t ran = atomic_load(&sp_exit_ran);
	return atomic_load(&sp_g.enabled) && ran != 0 && ran != sp_g.pid && getpid() == sp_g.pid;
}

/* This thread's list of thread_local destructors holds sp_exit_tls. */
static __thread bool sp_tls_armed SP_TLS;

extern void *__dso_handle __attribute__((visibility("hidden")));
int __cxa_thread_atexit_impl(void (*fn)(void *), void *obj, void *dso);

static void sp_exit_tls(void *arg)
{
	(void)arg;
	if (getpid() != sp_g.pid) {
		sp_tls_armed = false; /* a vfork child's exit() used it up */
		return;
	}
	sp_tls_armed = false;
	if (sp_exit_lost())
		sp_before_exit_call();
}

/* In the parent, once the child has exec'ed or ended. */
__attribute__((visibility("hidden"))) void sp_vfork_parent(void);
__attribute__((visibility("hidden"))) void sp_vfork_parent(void)
{
	int e = errno;
	if (!sp_tls_armed && sp_exit_lost() && sp_gettid() == getpid() &&
	    __cxa_thread_atexit_impl(sp_exit_tls, NULL, &__dso_handle) == 0)
		sp_tls_armed = true;
	errno = e;
}

__attribute__((visibility("hidden"))) int sp_vfork_fail(int err);
__attribute__((visibility("hidden"))) int sp_vfork_fail(int err)
{
	errno = err;
	return -1;
}

/*
 * glibc's vfork: the return address is kept in a register, since the
 * child's calls would overwrite it on the stack they share; the child
 * returns at once. The parent then calls sp_vfork_parent.
 */
__asm__(".text\n"
	".globl vfork\n"
	".type vfork, @function\n"
	"vfork:\n"
	"	.cfi_startproc\n"
	"	popq %rdi\n"
	"	.cfi_adjust_cfa_offset -8\n"
	"	.cfi_register %rip, %rdi\n"
	"	movl $" SP_STR(SYS_vfork) ", %eax\n"
					  "	syscall\n"
					  "	pushq %rdi\n"
					  "	.cfi_adjust_cfa_offset 8\n"
					  "	.cfi_rel_offset %rip, 0\n"
					  "	cmpl $-4095, %eax\n"
					  "	jae 2f\n"
					  "	testl %eax, %eax\n"
					  "	jz 1f\n"
					  "	pushq %rax\n"
					  "	.cfi_adjust_cfa_offset 8\n"
					  "	call sp_vfork_parent\n"
					  "	popq %rax\n"
					  "	.cfi_adjust_cfa_offset -8\n"
					  "1:	ret\n"
					  "2:	negl %eax\n"
					  "	movl %eax, %edi\n"
					  "	jmp sp_vfork_fail\n"
					  "	.cfi_endproc\n"
					  ".size vfork, .-vfork\n");

/* exit(): after the loss above, the profile is finished first. */
__attribute__((visibility("hidden"))) void sp_exit_hook(void);
__attribute__((visibility("hidden"))) void sp_exit_hook(void)
{
	if (!sp_real_exit)
		sp_real_exit = SP_REAL(exit);
	if (sp_exit_lost())
		sp_before_exit_call();
}

/* In assembly so that no frame of ours sits under the program's exit
 * handlers in its samples: the real exit() is reached by a jump. */
__asm__(".text\n"
	".globl exit\n"
	".type exit, @function\n"
	"exit:\n"
	"	.cfi_startproc\n"
	"	pushq %rdi\n"
	"	.cfi_adjust_cfa_offset 8\n"
	"	call sp_exit_hook\n"
	"	popq %rdi\n"
	"	.cfi_adjust_cfa_offset -8\n"
	"	jmp *sp_real_exit(%rip)\n"
	"	.cfi_endproc\n"
	".size exit, .-exit\n");

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
