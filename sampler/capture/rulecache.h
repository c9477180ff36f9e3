/*
 * rulecache.h - unwind rules by code address, shared by every thread's
 * signal handler.
 *
 * The same few thousand return addresses come back in sample after sample;
 * reading each one's FDE again (cfi.h) costs a binary search and a CFA
 * program, a cached rule one hash probe. The table is one fixed mmap'ed
 * array, insert-only, open addressing with a short probe: no allocation,
 * no lock, nothing to wait on. A full neighbourhood just means the rule is
 * not cached and is read again next time.
 *
 * Keys carry the module epoch (modules.h): when a module is unloaded the
 * epoch moves, old entries stop matching (an address may now belong to
 * another module) and are reused as they are met.
 */
#ifndef SP_SAMPLER_RULECACHE_H
#define SP_SAMPLER_RULECACHE_H

#include "sampler/base/sigsafe.h"
#include <stdbool.h>
#include <stdint.h>

/* Maps the table (once). 0 or -errno. Not signal-safe. */
int sp_rulecache_init(void);

/*
 * The packed rule (sp_cfi_pack) for code address addr in epoch, or 0 if
 * none is cached. Signal-safe, wait-free.
 */
SP_SIGSAFE uint64_t sp_rulecache_get(uintptr_t addr, uint32_t epoch);

/*
 * Starts loading the slot where addr's rule for epoch would be, so that a
 * later sp_rulecache_get finds it in the cache. Never faults; does nothing
 * else. Signal-safe.
 */
SP_SIGSAFE void sp_rulecache_prefetch(uintptr_t addr, uint32_t epoch);

/* Caches rule (non-zero) for addr in epoch, if a slot is free. Signal-safe, lock-free. */
SP_SIGSAFE void sp_rulecache_put(uintptr_t addr, uint32_t epoch, uint64_t rule);

/*
 * Tells the cache the epoch moved to epoch and no handler still uses an
 * older one. Keys hold 16 bits of the epoch: when those wrap to 0 the
 * table is emptied, so an entry of 65536 unloads ago can never match
 * again. Normal context.
 */
void sp_rulecache_epoch(uint32_t epoch);

#endif
