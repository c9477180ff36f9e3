/*
 * source.c - the table of event sources, and what life/ and the handler
 * ask of all of them (source.h).
 */
#include "sampler/core/source.h"
#include "sampler/core/sampler.h"
#include "sampler/base/sys.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

static const struct sp_source *sp_table[SP_MAX_SOURCES];
static unsigned sp_n_table;

/* The started ones: written by start and stop (with no signal of theirs
 * armed yet, or every one paused), read by the handler. */
static const struct sp_source *sp_run[SP_MAX_SOURCES];
static _Atomic unsigned sp_n_run;
static _Atomic uint64_t sp_run_signals;
/* signals the program holds, which sources beside the CPU timer can't have */
static uint64_t sp_refused;

bool sp_source_register(const struct sp_source *s)
{
	if (sp_n_table >= SP_MAX_SOURCES)
		return false;
	sp_table[sp_n_table++] = s;
	return true;
}

/* ---- choosing the CPU timer ------------------------------------------- */

const char *sp_source_cpu_words(void)
{
	static char words[256];
	size_t n = 0;
	words[0] = 0;
	for (unsigned i = 0; i < sp_n_table; i++)
		if (sp_table[i]->timer && n < sizeof(words))
			n += (size_t)snprintf(words + n, sizeof(words) - n, "%s%s", n ? ", " : "",
					      sp_table[i]->timer);
	return words;
}

/* The CPU timer of auto's order after rank (0: the first). */
static const struct sp_source *sp_next_auto(int rank)
{
	const struct sp_source *best = NULL;
	for (unsigned i = 0; i < sp_n_table; i++) {
		const struct sp_source *s = sp_table[i];
		if (s->timer && s->auto_rank > rank && (!best || s->auto_rank < best->auto_rank))
			best = s;
	}
	return best;
}

static int sp_probe(const struct sp_source *s)
{
	return s->probe ? s->probe() : 0;
}

static char sp_why[256];

const char *sp_source_cpu_why(void)
{
	return sp_why;
}

const struct sp_source *sp_source_choose_cpu(const char *word)
{
	const struct sp_source *asked = NULL;
	sp_why[0] = 0;
	for (unsigned i = 0; i < sp_n_table; i++)
		if (sp_table[i]->timer && !strcmp(sp_table[i]->timer, word))
			asked = sp_table[i];
	if (!asked && strcmp(word, "auto") != 0)
		sp_log("STACKPROF_TIMER=%s ignored: expected auto or one of %s; using auto", word,
		       sp_source_cpu_words());
	int rank = 0;
	if (asked) {
		int err = sp_probe(asked);
		if (!err) {
			snprintf(sp_why, sizeof(sp_why), "asked for (STACKPROF_TIMER=%s)", word);
			return asked;
		}
		if (!asked->auto_rank)
			return NULL;
		rank = asked->auto_rank;
		const struct sp_source *next = sp_next_auto(rank);
		sp_log("the %s timer can't run here (%s; it needs %s); trying %s", asked->name,
		       strerror(-err), asked->needs ? asked->needs : "nothing said",
		       next ? next->name : "nothing else");
		snprintf(sp_why, sizeof(sp_why), "%s was asked for and can't run here (%s)",
			 asked->name, strerror(-err));
	}
	/* auto's order: what was passed over, and why, is the reason */
	size_t n = strlen(sp_why);
	for (const struct sp_source *s = sp_next_auto(rank); s; s = sp_next_auto(s->auto_rank)) {
		int err = sp_probe(s);
		if (err == 0) {
			if (!sp_why[0])
				snprintf(sp_why, sizeof(sp_why), "auto's first pick");
			return s;
		}
		if (n < sizeof(sp_why))
			n += (size_t)snprintf(
			    sp_why + n, sizeof(sp_why) - n, "%s%s can't run here (%s)",
			    n ? "; " : "auto: ", s->name,
			    err == -EBUSY ? "a debugger traces the process" : strerror(-err));
	}
	return NULL;
}

/* ---- every source at once ---------------------------------------------- */

void sp_sources_refuse(int sig)
{
	sp_refused |= 1ull << sig;
}

uint64_t sp_sources_signals(void)
{
	uint64_t bits = sp_g.cpu && sp_g.cpu->signo ? 1ull << sp_g.cpu->signo : 0;
	for (unsigned i = 0; i < sp_n_table; i++)
		if (!sp_table[i]->timer && sp_table[i]->signo)
			bits |= 1ull << sp_table[i]->signo;
	return bits & ~sp_refused;
}

void sp_sources_start(void)
{
	unsigned n = 0;
	uint64_t bits = 0;
	atomic_store(&sp_n_run, 0);
	for (unsigned i = 0; i < sp_n_table; i++) {
		const struct sp_source *s = sp_table[i];
		if (s->timer && s != sp_g.cpu)
			continue;
		/* a source beside the CPU timer whose signal the program holds */
		bool refused = !s->timer && s->signo && (sp_refused & (1ull << s->signo));
		int err = refused ? -EBUSY : s->start ? s->start() : 0;
		if (err) {
			sp_log("event source %s can't start here (%s); its samples are left out",
			       s->name, strerror(-err));
			continue;
		}
		sp_run[n++] = s;
		if (s->signo)
			bits |= 1ull << s->signo;
	}
	/* the CPU timer's signal stays ours even if its start failed, as the
	 * handler and the mask (sigmask.h) have always taken it */
	if (sp_g.cpu && sp_g.cpu->signo)
		bits |= 1ull << sp_g.cpu->signo;
	atomic_store(&sp_run_signals, bits);
	atomic_store(&sp_n_run, n);
}

#define SP_EACH(op, ...)                                                                           \
	for (unsigned i = 0, n_ = atomic_load(&sp_n_run); i < n_; i++)                             \
		if (sp_run[i]->op)                                                                 \
	sp_run[i]->op(__VA_ARGS__)

void sp_sources_stop(void)
{
	/* the table stays: a thread that leaves later still detaches */
	SP_EACH(stop);
}

/* The source that serves t for s: the thread's own CPU timer for the CPU
 * timer (attach may have handed it to another), else s. */
static const struct sp_source *sp_for(const struct sp_source *s, const struct sp_thread *t)
{
	return s->timer && t->cpu ? t->cpu : s;
}

/* Each live thread's pause_thread (or resume_thread) of every started
 * source, then the process-wide pause (resume). */
static void sp_each_thread(bool resume)
{
	uint32_t n = atomic_load(&sp_g.n_slots);
	unsigned nr = atomic_load(&sp_n_run);
	for (uint32_t j = 0; j < n; j++) {
		struct sp_thread *t = &sp_g.threads[j];
		if (atomic_load(&t->state) != SP_SLOT_LIVE)
			continue;
		for (unsigned i = 0; i < nr; i++) {
			const struct sp_source *s = sp_for(sp_run[i], t);
			if (resume && s->resume_thread)
				s->resume_thread(t);
			else if (!resume && s->pause_thread)
				s->pause_thread(t);
		}
	}
}

void sp_sources_pause(void)
{
	sp_each_thread(false);
	SP_EACH(pause);
}

void sp_sources_resume(void)
{
	sp_each_thread(true);
	SP_EACH(resume);
}

void sp_sources_park(void)
{
	SP_EACH(park);
}

void sp_sources_unpark(void)
{
	SP_EACH(unpark);
}

void sp_sources_atfork(int phase)
{
	/* every source, started or not: a child starts them afresh */
	for (unsigned i = 0; i < sp_n_table; i++)
		if (sp_table[i]->atfork)
			sp_table[i]->atfork(phase);
	if (phase == 2) {
		/* the child's thread is armed afresh; the others are gone */
		uint32_t n = atomic_load(&sp_g.n_slots);
		for (uint32_t i = 0; i < n; i++)
			sp_g.threads[i].armed = false;
	}
}

void sp_sources_sigset(sigset_t *set)
{
	sigemptyset(set);
	uint64_t bits = atomic_load(&sp_run_signals);
	for (int sig = 1; sig < 64; sig++)
		if (bits & (1ull << sig))
			sigaddset(set, sig);
}

int sp_sources_attach(struct sp_thread *t)
{
	int cpu_err = 0;
	bool on = atomic_load(&sp_g.sampling);
	for (unsigned i = 0, n = atomic_load(&sp_n_run); i < n; i++) {
		const struct sp_source *s = sp_run[i];
		int err = s->attach ? s->attach(t) : 0;
		const struct sp_source *now = sp_for(s, t); /* attach may have handed it on */
		if (err) {
			sp_log("cannot arm the %s source for thread %d: %s", now->name, t->tid,
			       strerror(-err));
			if (s->timer)
				cpu_err = err;
			continue;
		}
		if (!on && now->pause_thread)
			now->pause_thread(
			    t); /* stopped (API, schedule): costs nothing until started */
	}
	/* Threads often start with every signal blocked (xz, thread pools that
	 * leave async signals to the main thread): the sources' signals are
	 * ours, and opened (sigmask.h keeps the program's view of them) */
	sigset_t set;
	sp_sources_sigset(&set);
	pthread_sigmask(SIG_UNBLOCK, &set, NULL);
	return cpu_err;
}

void sp_sources_detach(struct sp_thread *t)
{
	for (unsigned i = 0, n = atomic_load(&sp_n_run); i < n; i++) {
		const struct sp_source *s = sp_for(sp_run[i], t);
		if (s->detach)
			s->detach(t);
	}
}

void sp_sources_step(long step)
{
	if (atomic_load(&sp_g.enabled) && !atomic_load(&sp_g.ended))
		SP_EACH(step, step);
}

/* ---- the handler's questions ------------------------------------------- */

bool sp_sources_send(int sig)
{
	return sig > 0 && sig < 64 &&
	       (atomic_load_explicit(&sp_run_signals, memory_order_relaxed) & (1ull << sig));
}

const struct sp_source *sp_source_sent(const struct sp_thread *t, int sig, const siginfo_t *si)
{
	const struct sp_source *c = t && t->cpu ? t->cpu : sp_g.cpu;
	if (c && c->signo == sig && c->owns && c->owns(t, si))
		return c;
	unsigned n = atomic_load_explicit(&sp_n_run, memory_order_acquire);
	for (unsigned i = 0; i < n; i++) {
		const struct sp_source *s = sp_run[i];
		if (!s->timer && s->signo == sig && s->owns && s->owns(t, si))
			return s;
	}
	return NULL;
}

void sp_source_taken(const struct sp_source *s, struct sp_thread *t)
{
	if (s && t && s->rearm)
		s->rearm(t);
}
