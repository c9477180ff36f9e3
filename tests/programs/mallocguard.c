/*
 * mallocguard.c - preloaded after libstackprof.so in the no-malloc test
 * (libunwind's Gtest-nomalloc idea): aborts if malloc and friends run inside
 * the SIGPROF handler. The handler runs with SIGPROF blocked and the
 * thread's usual mask otherwise; the writer thread blocks everything. So
 * "SIGPROF blocked, SIGUSR2 not" means "in the handler" for a test program
 * that blocks neither itself.
 */
#include <signal.h>
#include <stdlib.h>
#include <stddef.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void __libc_free(void *);

static void guard(const char *what)
{
	unsigned long mask = 0;
	if (syscall(SYS_rt_sigprocmask, SIG_BLOCK, NULL, &mask, sizeof(mask)) != 0)
		return;
	unsigned long prof = 1ul << (SIGPROF - 1), usr2 = 1ul << (SIGUSR2 - 1);
	if ((mask & prof) && !(mask & usr2)) {
		static const char msg[] = "mallocguard: allocation inside the SIGPROF handler: ";
		ssize_t r = write(2, msg, sizeof(msg) - 1);
		r = write(2, what, strlen(what));
		r = write(2, "\n", 1);
		(void)r;
		abort();
	}
}

void *malloc(size_t n)
{
	guard("malloc");
	return __libc_malloc(n);
}

void *calloc(size_t a, size_t b)
{
	guard("calloc");
	return __libc_calloc(a, b);
}

void *realloc(void *p, size_t n)
{
	guard("realloc");
	return __libc_realloc(p, n);
}

void free(void *p)
{
	if (p)
		guard("free");
	__libc_free(p);
}
