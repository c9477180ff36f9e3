/*
 * source.c - what the handler asks of any source (source.h).
 */
#include "sampler/core/source.h"
#include "sampler/core/sampler.h"
#include "sampler/base/sys.h"

#include <string.h>

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

/* ---- the sources beside the CPU timer ----------------------------------- */

static const struct sp_source *sp_sources[SP_MAX_SOURCES];
static bool sp_started[SP_MAX_SOURCES];
static unsigned sp_n_sources;

bool sp_source_register(const struct sp_source *s)
{
	if (sp_n_sources >= SP_MAX_SOURCES)
		return false;
	sp_sources[sp_n_sources++] = s;
	return true;
}

void sp_sources_start(void)
{
	for (unsigned i = 0; i < sp_n_sources; i++) {
		int err = sp_sources[i]->start ? sp_sources[i]->start() : 0;
		sp_started[i] = err == 0;
		if (err)
			sp_log("event source %s can't start here (%s); its samples are left out",
			       sp_sources[i]->name, strerror(-err));
	}
}

#define SP_EACH(op, ...)                                                                           \
	for (unsigned i = 0; i < sp_n_sources; i++)                                                \
		if (sp_started[i] && sp_sources[i]->op)                                            \
	sp_sources[i]->op(__VA_ARGS__)

void sp_sources_stop(void)
{
	SP_EACH(stop);
	for (unsigned i = 0; i < sp_n_sources; i++)
		sp_started[i] = false;
}

void sp_sources_pause(void)
{
	SP_EACH(pause);
}

void sp_sources_resume(void)
{
	SP_EACH(resume);
}

void sp_sources_attach(struct sp_thread *t)
{
	SP_EACH(attach, t);
}

void sp_sources_detach(struct sp_thread *t)
{
	SP_EACH(detach, t);
}

void sp_sources_atfork_child(void)
{
	/* every source, started or not: the child starts them afresh */
	for (unsigned i = 0; i < sp_n_sources; i++)
		if (sp_sources[i]->atfork_child)
			sp_sources[i]->atfork_child();
}

void sp_sources_step(long step)
{
	SP_EACH(step, step);
}
