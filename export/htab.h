/*
 * htab.h - an open-addressing hash index over caller-owned arrays.
 *
 * The table stores only (hash, index) pairs; the items live in the caller's
 * own array and the caller compares them. That keeps one small piece of code
 * for every interning job in export/ (frames, stacks, labels, rows) without
 * void-pointer keys or per-type copies. Not async-signal-safe.
 */
#ifndef SP_EXPORT_HTAB_H
#define SP_EXPORT_HTAB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct sp_htab_slot {
	uint64_t hash;
	uint32_t idx; /* item index + 1; 0 marks an empty slot */
};

struct sp_htab {
	struct sp_htab_slot *slots;
	size_t mask; /* capacity - 1; capacity is a power of two */
	size_t n;
};

/* eq(ctx, idx) says whether item idx is the one being looked up. */
typedef bool (*sp_htab_eq_fn)(const void *ctx, uint32_t idx);

void sp_htab_init(struct sp_htab *h);
void sp_htab_release(struct sp_htab *h);

/*
 * Looks for an item with this hash that eq accepts. Returns its index, or
 * -1 when absent.
 */
int64_t sp_htab_find(const struct sp_htab *h, uint64_t hash, sp_htab_eq_fn eq, const void *ctx);

/* Records item idx under hash (the caller checked it is absent). 0 or -ENOMEM. */
int sp_htab_insert(struct sp_htab *h, uint64_t hash, uint32_t idx);

/* FNV-1a, chainable: pass the previous result as seed, SP_HASH_SEED first. */
#define SP_HASH_SEED 0xcbf29ce484222325ull
uint64_t sp_hash_bytes(uint64_t seed, const void *p, size_t n);
/* Hashes a string including its terminator, so ("ab","c") != ("a","bc"); NULL hashes as a marker.
 */
uint64_t sp_hash_str(uint64_t seed, const char *s);
uint64_t sp_hash_u64(uint64_t seed, uint64_t v);

#endif
