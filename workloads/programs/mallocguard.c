/*
 * mallocguard.c - preloaded after libstackprof.so in the no-malloc test
 * (libunwind's Gtest-nomalloc idea): aborts if malloc and friends run inside
 * the SIGPROF handler. The handler runs with SIGPROF (and every other
 * signal) blocked; so do stackprof's own threads (the writer, the one that
 * finishes the profile at exit), which may allocate and are told apart by
 * their names, "stackprof-...". So "SIGPROF blocked, not one of those"
 * means "in the handler" for a test program that never blocks SIGPROF.
 */
#include <signal.h>
#include <stdlib.h>
#include <stddef.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void __libc_free(void *);

static __thread int is_writer
    __attribute__((tls_model("initial-exec"))); /* 0 unknown, 1 yes, 2 no */

static void guard(const char *what)
{
	unsigned long mask = 0;
	if (syscall(SYS_rt_sigprocmask, SIG_BLOCK, NULL, &mask, sizeof(mask)) != 0)
		return;
	if (!(mask & (1ul << (SIGPROF - 1))))
		return;
	if (!is_writer) {
		char name[16] = "";
		prctl(PR_GET_NAME, name, 0, 0, 0);
		is_writer = strncmp(name, "stackprof-", 10) ? 2 : 1;
	}
	if (is_writer == 1)
		return;
	static const char msg[] = "mallocguard: allocation inside the SIGPROF handler: ";
	ssize_t r = write(2, msg, sizeof(msg) - 1);
	r = write(2, what, strlen(what));
	r = write(2, "\n", 1);
	(void)r;
	abort();
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
