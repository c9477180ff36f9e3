/*
 * ring.h - a single-producer, single-consumer ring of variable-size entries.
 *
 * The producer is one thread's SIGPROF handler; the consumer is the writer
 * thread. Memory comes from mmap before the timer is armed, so the producer
 * never allocates. When the ring is full the producer gives up and counts a
 * drop: it never waits.
 *
 * An entry is a run of 64-bit words: a header word (length in words, flags)
 * then the payload. An entry never wraps: if it does not fit before the end,
 * a zero header marks "skip to the start".
 */
#ifndef SP_SAMPLER_RING_H
#define SP_SAMPLER_RING_H

#include "sampler/base/sigsafe.h"
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct sp_ring {
	uint64_t *words;
	size_t n_words;	     /* a power of two is not required */
	_Atomic size_t head; /* next word the producer writes */
	_Atomic size_t tail; /* next word the consumer reads */
	size_t reserved_at;  /* producer-private: start of the open reservation */
	size_t reserved_len;
	size_t populated; /* words from the start known to be backed by memory */
	size_t seen;	  /* head at the last sp_ring_keep_ahead (the consumer's) */
};

/* Maps n_words of memory for r. 0 or -errno. Not signal-safe. */
int sp_ring_init(struct sp_ring *r, size_t n_words);
/*
 * Backs the ring with memory up to upto words from its start (at most its
 * end), so that the producer's first lap writes into pages already there
 * instead of taking a page fault in the signal handler. A kernel without
 * MADV_POPULATE_WRITE leaves the faults where they were. Not signal-safe;
 * the producer may be writing meanwhile.
 */
void sp_ring_populate(struct sp_ring *r, size_t upto);
/*
 * The consumer, at each drain: backs four times what the producer wrote
 * since the last call ahead of it, at most SP_RING_AHEAD; nothing for a
 * thread that took no sample (an idle pool thread keeps only what its
 * start gave it). Not signal-safe.
 */
void sp_ring_keep_ahead(struct sp_ring *r);

/*
 * How much of a ring is backed ahead of its producer, in words: a new
 * thread's first 32 KiB (about 8 us, at the thread's start), then, at each
 * of the writer's passes (every 126 ms at 1 kHz), sp_ring_keep_ahead, up
 * to 256 KiB ahead: ~120 samples of 250 frames. A page costs about as much to
 * populate as to fault in: this moves the cost off the sampled thread, it
 * doesn't remove it.
 */
#define SP_RING_FIRST ((32u << 10) / sizeof(uint64_t))
#define SP_RING_AHEAD ((256u << 10) / sizeof(uint64_t))
/* Unmaps. NULL-tolerant on r->words. */
void sp_ring_release(struct sp_ring *r);

/*
 * Reserves room for an entry of up to max_words payload words and returns a
 * pointer to the payload, or NULL if the ring can't hold it now. Signal-safe.
 */
SP_SIGSAFE uint64_t *sp_ring_reserve(struct sp_ring *r, size_t max_words);
/* Publishes the reserved entry with its real payload length and flags. Signal-safe. */
SP_SIGSAFE void sp_ring_commit(struct sp_ring *r, size_t words, uint32_t flags);
/* Producer: whether entries fill more than half the ring (the consumer
 * should come sooner than planned). Signal-safe. */
SP_SIGSAFE bool sp_ring_half_full(struct sp_ring *r);

/*
 * Consumer: returns the next entry's payload (and length/flags), or NULL if
 * the ring is empty. Call sp_ring_pop() once done with it.
 */
const uint64_t *sp_ring_peek(struct sp_ring *r, size_t *words, uint32_t *flags);
void sp_ring_pop(struct sp_ring *r);

#endif
