/*
 * state.c - the state every part of the sampler shares (sampler.h): the
 * process's, and each thread's slot.
 */
#include "sampler/core/sampler.h"

struct sp_state sp_g = {
    .lock = PTHREAD_MUTEX_INITIALIZER,
    .wake = PTHREAD_COND_INITIALIZER,
};

__thread struct sp_thread *sp_self SP_TLS;

__thread volatile int sp_in_unwind SP_TLS;

static _Atomic bool sp_aside;
static _Atomic unsigned sp_asides;

bool sp_stepped_aside(void)
{
	return atomic_load(&sp_aside);
}

bool sp_aside_set(bool on)
{
	bool was = atomic_exchange(&sp_aside, on);
	if (on && !was)
		atomic_fetch_add(&sp_asides, 1);
	return was;
}

unsigned sp_aside_count(void)
{
	return atomic_load(&sp_asides);
}

void sp_thread_slot_free(struct sp_thread *t)
{
	uint32_t i = (uint32_t)(t - sp_g.threads);
	atomic_store(&t->state, SP_SLOT_FREE);
	uint32_t h = atomic_load(&sp_g.slot_hint);
	while (h > i && !atomic_compare_exchange_weak(&sp_g.slot_hint, &h, i))
		;
}
