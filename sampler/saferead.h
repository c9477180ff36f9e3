/*
 * saferead.h - reading memory that may be gone, from the signal handler.
 *
 * The handler reads the interrupted thread's Python frames and code
 * objects without the GIL. Those are normally alive (a running frame holds
 * its code), but a sample can land while a frame is being popped or a
 * thread state freed, and then a pointer names memory that was unmapped.
 * sp_safe_copy() is a copy routine of a few instructions in assembly whose
 * fault is caught: a SIGSEGV or SIGBUS whose program counter lies inside it
 * resumes at its error return instead (async-profiler's SafeAccess idea).
 * Every other SIGSEGV and SIGBUS is the program's, passed on as its action
 * says (sigshare.h). Installed only where Python frames are read.
 */
#ifndef SP_SAMPLER_SAFEREAD_H
#define SP_SAMPLER_SAFEREAD_H

#include <stddef.h>

#include "sampler/sigsafe.h"

/* Takes SIGSEGV and SIGBUS (sigshare.h). 0 or -errno. Not signal-safe. */
int sp_safe_install(void);

/* Copies n bytes from src to dst. 0, or -1 when src could not be read
 * (then dst holds whatever was copied before the fault). Signal-safe. */
SP_SIGSAFE int sp_safe_copy(void *dst, const void *src, size_t n);

/* How many reads faulted so far. */
unsigned long sp_safe_faults(void);

#endif
