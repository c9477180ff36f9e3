/*
 * addrmap.h - a hash map from 64-bit keys (addresses, pointers) to non-NULL
 * pointers.
 *
 * The symbolizer resolves each distinct address once; this is the cache that
 * makes the second lookup of an address one probe. Open addressing with
 * linear probing, grown at 50% load. Not async-signal-safe.
 */
#ifndef SP_SYMBOLIZE_ADDRMAP_H
#define SP_SYMBOLIZE_ADDRMAP_H

#include <stddef.h>
#include <stdint.h>

/* Embedded in its owner; zero-filled is a valid empty map. */
struct sp_addrmap {
	uint64_t *keys;
	void **vals; /* NULL marks an empty slot */
	size_t cap;  /* a power of two, or 0 */
	size_t n;
};

void sp_addrmap_init(struct sp_addrmap *m);
void sp_addrmap_release(struct sp_addrmap *m);

/* Returns the value stored for key, or NULL. */
void *sp_addrmap_get(const struct sp_addrmap *m, uint64_t key);

/* Stores val (not NULL) for key, replacing any value. Returns 0 or -ENOMEM. */
int sp_addrmap_put(struct sp_addrmap *m, uint64_t key, void *val);

#endif
