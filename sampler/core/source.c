/*
 * source.c - what the handler asks of any source (source.h).
 */
#include "sampler/core/source.h"
#include "sampler/core/sampler.h"

bool sp_timer_sent(const struct sp_thread *t, int sig, const siginfo_t *si)
{
	const struct sp_timer_ops *k = t && t->timer ? t->timer : sp_g.timer;
	return k && sig == k->signo && k->owns(t, si);
}

void sp_timer_taken(struct sp_thread *t)
{
	if (t && t->timer && t->timer->rearm)
		t->timer->rearm(t, sp_g.period_ns);
}
