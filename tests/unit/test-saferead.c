/*
 * test-saferead.c - the guarded reads of sampler/base/saferead.h: a copy or a
 * load of memory that is gone fails instead of crashing and comes back to
 * the read that failed, and a fault that is not a guarded read's is left
 * to the program.
 */
#include <setjmp.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "sampler/base/saferead.h"
#include "tests/unit/check.h"

static sigjmp_buf escape;
static volatile sig_atomic_t foreign; /* faults that were not guarded reads */

/* The process's fault handler, as python.c's: guarded reads resume, the
 * rest are the program's (here: counted, and jumped out of). */
static void on_fault(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	if (sp_safe_resume(si, uc))
		return;
	foreign++;
	siglongjmp(escape, 1);
}

/* Two load sites in one function: which one failed (0 for neither). */
static int __attribute__((noinline)) two_loads(uintptr_t a, uintptr_t b, uint64_t *sum)
{
	uint64_t x = 0, y = 0;
	if (!sp_safe_load(&x, a))
		return 1;
	if (!sp_safe_load(&y, b))
		return 2;
	*sum = x + y;
	return 0;
}

int main(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_fault;
	sa.sa_flags = SA_SIGINFO | SA_NODEFER;
	CHECK(sigaction(SIGSEGV, &sa, NULL) == 0);
	CHECK(sigaction(SIGBUS, &sa, NULL) == 0);

	long page = sysconf(_SC_PAGESIZE);
	uint8_t *p = mmap(NULL, 2 * (size_t)page, PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(p != MAP_FAILED);
	for (long i = 0; i < page; i++)
		p[i] = (uint8_t)i;
	CHECK(munmap(p + page, (size_t)page) == 0); /* the second page is gone */
	uintptr_t live = (uintptr_t)p, gone = (uintptr_t)p + (uintptr_t)page;

	/* copies */
	uint8_t buf[64];
	CHECK(sp_safe_copy(buf, p + 8, sizeof(buf)) == 0 && memcmp(buf, p + 8, sizeof(buf)) == 0);
	CHECK(sp_safe_copy(buf, (void *)gone, sizeof(buf)) == -1);
	CHECK(sp_safe_copy(buf, (void *)(gone - 16), sizeof(buf)) == -1); /* runs off the end */
	CHECK(memcmp(buf, p + page - 16, 16) == 0);			  /* what it got first */
	CHECK(sp_safe_faults() == 2);

	/* loads */
	uint64_t v = 7, want;
	memcpy(&want, p + 24, sizeof(want));
	CHECK(sp_safe_load(&v, live + 24) && v == want);
	memcpy(&want, p + 3, sizeof(want));
	CHECK(sp_safe_load(&v, live + 3) && v == want); /* unaligned */
	v = 7;
	CHECK(!sp_safe_load(&v, gone) && v == 7);
	CHECK(!sp_safe_load(&v, gone - 4) && v == 7); /* half of it is gone */
	CHECK(sp_safe_faults() == 4);

	/* the read that faulted is the one that fails */
	uint64_t sum = 0;
	CHECK(two_loads(live, live + 8, &sum) == 0 && sum != 0);
	CHECK(two_loads(gone, live, &sum) == 1);
	CHECK(two_loads(live, gone + 64, &sum) == 2);
	CHECK(sp_safe_faults() == 6);
	for (int i = 0; i < 1000; i++) /* the handler's own state is none: again and again */
		CHECK(two_loads(live, gone, &sum) == 2);
	CHECK(sp_safe_faults() == 1006);

	/* a fault that is no guarded read is the program's */
	if (sigsetjmp(escape, 1) == 0)
		(void)*(volatile uint64_t *)gone;
	CHECK(foreign == 1);
	/* and so is a SIGSEGV sent (raise, kill): no fault of a read */
	if (sigsetjmp(escape, 1) == 0)
		raise(SIGSEGV);
	CHECK(foreign == 2);
	CHECK(sp_safe_faults() == 1006);

	munmap(p, (size_t)page);
	return check_exit("test-saferead");
}
