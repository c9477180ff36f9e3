/*
 * doorbell.h - how anything, the signal handler included, wakes the
 * writer thread before the end of its pause: a word it sleeps on with a
 * futex. The writer (writer/) owns the pass; this is only the bell.
 */
#ifndef SP_SAMPLER_DOORBELL_H
#define SP_SAMPLER_DOORBELL_H

#include <stdatomic.h>
#include <stdint.h>

#include "sampler/base/sigsafe.h"

/* The writer sleeps on this word; a poke or a request changes it. */
extern _Atomic uint32_t sp_wake_word;
/* A poke since the writer's pass began: the rest need no system call. */
extern _Atomic uint32_t sp_poked;
/* Slots of exited threads since the writer's pass began. */
extern _Atomic uint32_t sp_dead_pending;

/* Slots of exited threads that poke the writer: it makes them free again. */
#define SP_DEAD_POKE 8

/* Changes the word and wakes the writer. Signal-safe. */
SP_SIGSAFE void sp_futex_wake(void);

/*
 * Has the writer make a pass now rather than at the end of its pause: a
 * sample met code in no known module (a dlopen since the last pass), or a
 * ring is half full. At most one system call (a futex wake) per pass,
 * however many threads poke. Signal-safe, wait-free.
 */
SP_SIGSAFE void sp_writer_poke(void);

/* A thread's slot is waiting for the writer to make it free: every
 * SP_DEAD_POKE of them poke it, so that thread churn does not hold slots
 * and rings for a whole pause. */
void sp_writer_slot_dead(void);

#endif
