/*
 * doorbell.c - the writer's wake-up word (doorbell.h).
 */
#include "sampler/core/doorbell.h"
#include "sampler/base/syscall.h"

#include <linux/futex.h>
#include <stddef.h>
#include <sys/syscall.h>

_Atomic uint32_t sp_wake_word;
_Atomic uint32_t sp_poked;
_Atomic uint32_t sp_dead_pending;

void sp_futex_wake(void)
{
	atomic_fetch_add_explicit(&sp_wake_word, 1, memory_order_release);
	syscall(SYS_futex, &sp_wake_word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

void sp_writer_poke(void)
{
	if (!atomic_exchange_explicit(&sp_poked, 1, memory_order_acq_rel))
		sp_futex_wake();
}

void sp_writer_slot_dead(void)
{
	if (atomic_fetch_add(&sp_dead_pending, 1) + 1 == SP_DEAD_POKE)
		sp_writer_poke();
}
