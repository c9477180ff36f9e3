/*
 * unwind.h - stack walking in the signal handler.
 *
 * Two unwinders share this file. The default steps each frame with a rule
 * read from the module's .eh_frame and cached by code address (cfi.h,
 * rulecache.h): a hash probe and two loads a frame, no lock, no system
 * call. The frames a rule can't step (signal trampolines, PLT stubs,
 * functions that realign the stack, code outside the thread's known stack)
 * are stepped one at a time by libunwind, and the walk goes on with rules
 * from the frame libunwind reaches.
 *
 * libunwind.so.8 is not linked: it exports _Unwind_* and, in the global
 * scope, would take C++ exception handling over from libgcc in the target
 * (`python3 -c 'import torch'` then breaks). It is dlopen()ed RTLD_LOCAL and
 * called through function pointers. Its dl_iterate_phdr() calls land in our
 * interposer (modules.h), which never takes the loader lock in the handler.
 * Its caching is off (UNW_CACHE_NONE): the global cache takes a mutex, and
 * the per-thread one lives in dynamic TLS, whose first touch in a thread may
 * call malloc.
 *
 * Code without unwind info (JIT kernels such as oneDNN's) is stepped over by
 * scanning the stack for a return address that follows a call instruction
 * in a known module, as async-profiler does.
 */
#ifndef SP_SAMPLER_UNWIND_H
#define SP_SAMPLER_UNWIND_H

#include "sampler/base/sigsafe.h"
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Loads libunwind privately and warms it up. 0 or -errno (-ENOENT: not installed). */
int sp_unwind_init(void);

/* Runs one unwind in the calling thread so that lazy set-up happens here, not in the handler. */
void sp_unwind_warm(void);

/* Frames stepped, by which unwinder. */
struct sp_unwind_count {
	uint64_t fast; /* by a cached or freshly read CFI rule */
	uint64_t slow; /* by libunwind */
	uint64_t
	    unknown; /* PCs in no module of the snapshot (JIT code, or a module loaded since) */
};

/*
 * Starts loading the cached rule of each return address in pcs[1..n), a
 * stack a previous sp_unwind_signal left. A thread's samples share most
 * of their frames, and at 100 Hz the program has evicted those rules
 * between two samples: the walk met them one after another, each a wait
 * on memory; loads started here overlap. Never faults. Signal-safe.
 */
SP_SIGSAFE void sp_unwind_prefetch(const uint64_t *pcs, size_t n);

/*
 * Walks the stack of the interrupted context uc (the handler's third
 * argument) into pcs: pcs[0] is the interrupted PC, then return addresses,
 * at most max; sps, if not NULL, gets each frame's stack pointer (the
 * frame's locals lie between it and the next one's). ORs SP_STACK_* flags
 * into *flags and adds the steps taken to *cnt. reference: libunwind for every frame
 * (STACKPROF_UNWIND=libunwind, and what STACKPROF_UNWIND=check compares against). Returns the depth
 * (>= 1 unless max is 0). Signal-safe.
 */
SP_SIGSAFE size_t sp_unwind_signal(void *uc, uint64_t *pcs, uint64_t *sps, size_t max,
				   uint32_t *flags, bool reference, struct sp_unwind_count *cnt);

#endif
