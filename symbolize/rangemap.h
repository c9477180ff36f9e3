/*
 * rangemap.h - address ranges, possibly overlapping, flattened into sorted
 * disjoint segments for O(log n) lookup.
 *
 * Where ranges overlap the one with the higher prio wins, and among equal
 * prios the lower id. The symbolizer uses it for modules (prio = the order
 * they were added, so a library dlopen'ed at a reused range wins), JIT
 * symbols, compile units, sized ELF symbols (prio = rank by start, so the
 * closest start wins), FDEs, and function/inline DIE ranges inside a
 * function (prio = nesting depth, so a lookup lands on the innermost inlined
 * call at once and walks outwards through parent links). Not
 * async-signal-safe.
 */
#ifndef SP_SYMBOLIZE_RANGEMAP_H
#define SP_SYMBOLIZE_RANGEMAP_H

#include <stddef.h>
#include <stdint.h>

struct sp_range {
	uint64_t lo; /* [lo, hi) */
	uint64_t hi;
	uint32_t id;   /* the caller's index for what the range stands for */
	uint32_t prio; /* higher wins where ranges overlap */
};

/* Embedded in its owner; zero-filled is a valid empty map. */
struct sp_rangemap {
	struct sp_range *segs; /* sorted, disjoint, adjacent equal ids merged */
	size_t n;
};

/*
 * Replaces m's contents with the flattening of ranges[0..n) (which this
 * reorders; empty ranges are ignored). Returns 0 or -ENOMEM (m is then
 * left empty).
 */
int sp_rangemap_build(struct sp_rangemap *m, struct sp_range *ranges, size_t n);

/* Returns the segment containing addr (borrowed), or NULL. */
const struct sp_range *sp_rangemap_find(const struct sp_rangemap *m, uint64_t addr);

/*
 * Returns the last segment starting at or below addr, whether or not it
 * reaches addr (borrowed), or NULL.
 */
const struct sp_range *sp_rangemap_floor(const struct sp_rangemap *m, uint64_t addr);

void sp_rangemap_release(struct sp_rangemap *m);

#endif
