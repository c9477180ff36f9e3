/*
 * saferead.h - reading memory that may be gone, from the signal handler.
 *
 * The handler reads the interrupted thread's Python frames and code
 * objects without the GIL. Those are normally alive (a running frame holds
 * its code), but a sample can land while a frame is being popped or a
 * thread state freed, and then a pointer names memory that was unmapped.
 * Two reads are guarded, both a few instructions of assembly: sp_safe_copy()
 * copies bytes, sp_safe_word() loads one word. A SIGSEGV or SIGBUS whose
 * program counter is in one of them resumes at its error return instead
 * (async-profiler's SafeAccess idea): sp_safe_resume()
 * says whether a fault was one of these and sends it on its way. The
 * process's fault handler that calls it is python.c's: every other SIGSEGV
 * and SIGBUS is the program's, passed on as its action says (sigshare.h).
 */
#ifndef SP_SAMPLER_SAFEREAD_H
#define SP_SAMPLER_SAFEREAD_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sampler/base/sigsafe.h"

/* Copies n bytes from src to dst. 0, or -1 when src could not be read
 * (then dst holds whatever was copied before the fault). Signal-safe. */
SP_SIGSAFE int sp_safe_copy(void *dst, const void *src, size_t n);

/* sp_safe_word's result: the word, and whether the load faulted. */
struct sp_safe_word {
	uint64_t v;
	uint64_t faulted;
};

/* The 8 bytes at addr, in registers (rax:rdx): one load instruction in
 * assembly, like the copy. Signal-safe. */
SP_SIGSAFE struct sp_safe_word sp_safe_word(uintptr_t addr);

/*
 * The 8 bytes at addr into *v: true, or false when the load faulted (*v
 * is then unchanged). For the handler's many small reads: one field, in a
 * register, with no copy through memory. Signal-safe.
 */
SP_SIGSAFE static inline bool sp_safe_load(uint64_t *v, uintptr_t addr)
{
	struct sp_safe_word w = sp_safe_word(addr);
	if (w.faulted)
		return false;
	*v = w.v;
	return true;
}

/*
 * Called by the process's SIGSEGV and SIGBUS handler: when the fault is a
 * guarded read's, moves the context on to that read's error return, counts
 * it and returns true; false for every other fault (the program's).
 * Signal-safe.
 */
SP_SIGSAFE bool sp_safe_resume(const siginfo_t *si, void *uc);

/* How many reads faulted so far. */
unsigned long sp_safe_faults(void);

#endif
