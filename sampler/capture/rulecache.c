#include "sampler/capture/rulecache.h"
#include "sampler/base/hot.h"

#include <errno.h>
#include <stdatomic.h>
#include <stddef.h>
#include <sys/mman.h>

/*
 * 64k slots of 16 bytes: 1 MiB, resident from the start. torch's ResNet18
 * inference meets ~10k distinct code addresses. Left to fault in, a page
 * was first read by a lookup (the kernel maps the shared zero page) and
 * then written by an insert: a copy-on-write fault inside the handler that
 * flushes the TLB of every CPU running the program, an IPI that stops the
 * program's other threads too. On resnet18 at 1 kHz those faults were 40%
 * of the handler's time in a 1 s run. The table is made resident before
 * the first timer is armed, in hot.h's huge-page region (one TLB entry for
 * all of it). A fork makes it copy-on-write in both processes again: each
 * page's next insert copies it, once, as any write after a fork does.
 * Every process pays the 1 MiB up front, used or not (2 MiB, with the
 * Python code table's half, where a huge page backs the region).
 */
#define SP_RC_BITS  16
#define SP_RC_SLOTS (1u << SP_RC_BITS)
#define SP_RC_PROBE 8

/* user-space addresses fit in 47 bits: bit 47 marks a slot being written,
 * bits 48-63 hold the epoch */
#define SP_RC_BUSY	(1ull << 47)
#define SP_RC_ADDR_MASK (SP_RC_BUSY - 1)

struct sp_rc_slot {
	_Atomic uint64_t key; /* addr | epoch << 48; 0: empty; SP_RC_BUSY: being written */
	_Atomic uint64_t rule;
};

static struct sp_rc_slot *sp_rc;

int sp_rulecache_init(void)
{
	if (sp_rc)
		return 0;
	void *p = sp_hot_alloc(SP_RC_SLOTS * sizeof(struct sp_rc_slot));
	if (!p)
		return -errno;
	sp_rc = p;
	return 0;
}

#define SP_RC_EPOCH_MASK 0xffffu

static uint64_t sp_rc_key(uintptr_t addr, uint32_t epoch)
{
	return ((uint64_t)addr & SP_RC_ADDR_MASK) | (uint64_t)(epoch & SP_RC_EPOCH_MASK) << 48;
}

static uint32_t sp_rc_hash(uint64_t key)
{
	return (uint32_t)((key * 0x9e3779b97f4a7c15ull) >> (64 - SP_RC_BITS));
}

uint64_t sp_rulecache_get(uintptr_t addr, uint32_t epoch)
{
	if (!sp_rc || !addr || addr & ~SP_RC_ADDR_MASK)
		return 0;
	uint64_t key = sp_rc_key(addr, epoch);
	uint32_t h = sp_rc_hash(key);
	for (uint32_t i = 0; i < SP_RC_PROBE; i++) {
		struct sp_rc_slot *s = &sp_rc[(h + i) & (SP_RC_SLOTS - 1)];
		uint64_t k = atomic_load_explicit(&s->key, memory_order_acquire);
		if (k == 0)
			return 0; /* slots are never emptied: the key is not further on */
		if (k != key)
			continue;
		uint64_t rule = atomic_load_explicit(&s->rule, memory_order_relaxed);
		/* a writer that took the slot over meanwhile changed the key first */
		atomic_thread_fence(memory_order_acquire);
		if (atomic_load_explicit(&s->key, memory_order_relaxed) == key)
			return rule;
		return 0;
	}
	return 0;
}

void sp_rulecache_prefetch(uintptr_t addr, uint32_t epoch)
{
	if (sp_rc && !(addr & ~SP_RC_ADDR_MASK))
		__builtin_prefetch(&sp_rc[sp_rc_hash(sp_rc_key(addr, epoch))]);
}

void sp_rulecache_put(uintptr_t addr, uint32_t epoch, uint64_t rule)
{
	if (!sp_rc || !addr || addr & ~SP_RC_ADDR_MASK || !rule)
		return;
	uint64_t key = sp_rc_key(addr, epoch);
	uint32_t h = sp_rc_hash(key);
	for (uint32_t i = 0; i < SP_RC_PROBE; i++) {
		struct sp_rc_slot *s = &sp_rc[(h + i) & (SP_RC_SLOTS - 1)];
		uint64_t k = atomic_load_explicit(&s->key, memory_order_relaxed);
		if (k == key)
			return;
		/* free, or left from an older epoch */
		bool stale = k != 0 && k != SP_RC_BUSY && (k >> 48) != (key >> 48);
		if (k != 0 && !stale)
			continue;
		if (!atomic_compare_exchange_strong_explicit(
			&s->key, &k, SP_RC_BUSY, memory_order_acquire, memory_order_relaxed))
			continue; /* another handler took it */
		atomic_store_explicit(&s->rule, rule, memory_order_relaxed);
		atomic_store_explicit(&s->key, key, memory_order_release);
		return;
	}
}

void sp_rulecache_epoch(uint32_t epoch)
{
	if (!sp_rc || (epoch & SP_RC_EPOCH_MASK))
		return;
	/* Handlers of the new epoch may probe and insert meanwhile. An emptied
	 * slot ends a probe early: a miss, never a wrong rule. A slot being
	 * written (SP_RC_BUSY) is left to its writer, whose key is of the new
	 * epoch; emptying it would let a second writer in. */
	for (uint32_t i = 0; i < SP_RC_SLOTS; i++) {
		uint64_t k = atomic_load_explicit(&sp_rc[i].key, memory_order_relaxed);
		if (k != 0 && k != SP_RC_BUSY)
			atomic_compare_exchange_strong_explicit(
			    &sp_rc[i].key, &k, 0, memory_order_relaxed, memory_order_relaxed);
	}
}
