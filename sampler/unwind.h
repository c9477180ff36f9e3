/*
 * unwind.h - stack walking in the signal handler, with a private libunwind.
 *
 * libunwind.so.8 is not linked: it exports _Unwind_* and, in the global
 * scope, would take C++ exception handling over from libgcc in the target
 * (`python3 -c 'import torch'` then breaks). It is dlopen()ed RTLD_LOCAL and
 * called through function pointers. Its dl_iterate_phdr() calls land in our
 * interposer (modules.h), which never takes the loader lock in the handler.
 *
 * Caching is off (UNW_CACHE_NONE): libunwind's global cache takes a mutex,
 * and its per-thread cache lives in dynamic TLS, whose first touch in a
 * thread may call malloc. Code without unwind info (JIT kernels such as
 * oneDNN's) is stepped over by scanning the stack for a return address that
 * follows a call instruction in a known module, as async-profiler does.
 */
#ifndef SP_SAMPLER_UNWIND_H
#define SP_SAMPLER_UNWIND_H

#include <stddef.h>
#include <stdint.h>

/* Loads libunwind privately and warms it up. 0 or -errno (-ENOENT: not installed). */
int sp_unwind_init(void);

/* Runs one unwind in the calling thread so that lazy set-up happens here, not in the handler. */
void sp_unwind_warm(void);

/*
 * Walks the stack of the interrupted context uc (the handler's third
 * argument) into pcs: pcs[0] is the interrupted PC, then return addresses,
 * at most max. ORs SP_STACK_* flags into *flags. Returns the depth (>= 1).
 * Signal-safe.
 */
size_t sp_unwind_signal(void *uc, uint64_t *pcs, size_t max, uint32_t *flags);

#endif
