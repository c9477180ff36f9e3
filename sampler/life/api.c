/*
 * api.c - the public C API (stackprof.h): start/stop/flush, named ranges,
 * the step schedule and profile() windows. Only stackprof_* symbols leave
 * this library.
 */
#include "sampler/life/api.h"
#include "sampler/capture/handler.h"
#include "sampler/core/source.h"
#include "format/profile.h"
#include "sampler/base/fds.h"
#include "sampler/core/ranges.h"
#include "sampler/core/sampler.h"
#include "sampler/life/signals.h"
#include "sampler/life/stackprof.h"
#include "sampler/base/sys.h"
#include "sampler/capture/unwind.h"
#include "sampler/writer/writer.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <ucontext.h>

_Static_assert(STACKPROF_RANGE_MODULE == SP_RANGE_MODULE, "range flags are the file's flags");

/* Native frames an anchor is counted in; a deeper push is anchored at the root. */
#define SP_ANCHOR_MAX_DEPTH 512

static pthread_mutex_t sp_sched_lock = PTHREAD_MUTEX_INITIALIZER;
static struct sp_schedule sp_sched;
static long sp_step_no;
static bool sp_user_on = true;
static int sp_window_depth; /* open stackprof_window_begin() calls; under sp_sched_lock */

/* Whether step `step` of the schedule is an active one. */
static bool sp_sched_active(const struct sp_schedule *s, long step)
{
	if (!s->set)
		return true;
	long cycle = (long)s->wait + s->warmup + s->active;
	if (s->repeat && step >= cycle * (long)s->repeat)
		return false;
	return step % cycle >= (long)s->wait + s->warmup;
}

/*
 * Sampling off stops the timers too, so a stopped profiler costs the
 * program nothing but its presence: no signals, no handler. Called with
 * sp_sched_lock held.
 */
static void sp_sampling_update(void)
{
	bool on = sp_user_on && sp_sched_active(&sp_sched, sp_step_no) && !sp_stepped_aside() &&
		  !atomic_load(&sp_g.ended);
	bool was = atomic_exchange(&sp_g.sampling, on);
	if (was == on || !atomic_load(&sp_g.enabled) || atomic_load(&sp_g.stopping) ||
	    sp_stepped_aside())
		return;
	if (on)
		sp_sources_resume();
	else
		sp_sources_pause();
}

void sp_api_atfork(int phase)
{
	/* the order of ranges.h: the mark lock is taken under the schedule's */
	if (phase == 0) {
		sp_ranges_lock();
		pthread_mutex_lock(&sp_sched_lock);
		sp_marks_lock();
	} else if (phase == 1) {
		sp_marks_unlock();
		pthread_mutex_unlock(&sp_sched_lock);
		sp_ranges_unlock();
	} else {
		pthread_mutex_init(&sp_sched_lock, NULL);
		sp_ranges_atfork_child(sp_window_depth != 0);
	}
}

void sp_api_resync(void)
{
	pthread_mutex_lock(&sp_sched_lock);
	sp_sampling_update();
	pthread_mutex_unlock(&sp_sched_lock);
}

void sp_api_init(void)
{
	pthread_mutex_lock(&sp_sched_lock);
	sp_sched = sp_g.cfg.schedule;
	sp_user_on = !sp_g.cfg.paused;
	sp_step_no = 0;
	sp_sampling_update();
	pthread_mutex_unlock(&sp_sched_lock);
}

SP_EXPORT void stackprof_start(void)
{
	pthread_mutex_lock(&sp_sched_lock);
	sp_user_on = true;
	sp_sampling_update();
	pthread_mutex_unlock(&sp_sched_lock);
}

SP_EXPORT void stackprof_stop(void)
{
	pthread_mutex_lock(&sp_sched_lock);
	sp_user_on = false;
	sp_sampling_update();
	pthread_mutex_unlock(&sp_sched_lock);
}

SP_EXPORT void stackprof_flush(void)
{
	sp_writer_flush_now();
}

/*
 * Where the C code that called the API sits in its thread's stack: its
 * native frames from the root through the caller's, counted as the model
 * counts a sample's (SP_ANCHOR_*), so the range can go just inside the
 * caller. The walk is the handler's own, from here; the timer's signal is
 * held off meanwhile, since a sample would share its per-thread state
 * (sp_in_unwind). Frames of this library are the push itself. 0 (the
 * root) when the walk stopped early, had to scan, or found no caller.
 */
static __attribute__((noinline)) uint32_t sp_anchor_walk(ucontext_t *uc)
{
	uint64_t pcs[SP_ANCHOR_MAX_DEPTH];
	uint32_t anchor = 0;
	struct sp_thread *t = sp_self;
	if (!t)
		return 0;
	sigset_t set, old;
	sp_sources_sigset(&set);
	pthread_sigmask(SIG_BLOCK, &set, &old);
	uint32_t flags = 0;
	long depth = sp_capture_walk(t, uc, pcs, NULL, SP_ANCHOR_MAX_DEPTH, &flags, false);
	/* pcs[0] is in the push; then return addresses into this library, then the caller */
	long own = depth > 0 ? sp_capture_own_frames(pcs, (size_t)depth) : -1;
	if (own >= 0 && own < depth && !(flags & (SP_STACK_TRUNCATED | SP_STACK_UNWIND_ERR)))
		anchor = SP_ANCHOR_MAKE((uint32_t)(depth - own), false);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return anchor;
}

static uint32_t sp_native_anchor(void)
{
	ucontext_t uc;
	if (!sp_g.cpu || getcontext(&uc) != 0)
		return 0;
	return sp_anchor_walk(&uc);
}

/* Pushes a range anchored at anchor on the calling thread t. */
static int sp_range_push_at(struct sp_thread *t, const char *name, unsigned flags, uint32_t anchor)
{
	if (t->range_depth >= SP_MAX_RANGE_DEPTH) {
		t->range_overflow++;
		return t->range_depth + t->range_overflow;
	}
	uint32_t id = sp_range_intern(atomic_load(&t->range_top), name, flags, anchor);
	if (!id) {
		t->range_overflow++; /* out of memory: popped like an overflow */
		return t->range_depth + t->range_overflow;
	}
	t->range_stack[t->range_depth++] = id;
	atomic_store(&t->range_top, id);
	return t->range_depth;
}

SP_EXPORT int stackprof_range_push(const char *name)
{
	/* the anchor walk skips this library's frames, this one included */
	return stackprof_range_push_flags(name, 0);
}

SP_EXPORT int stackprof_range_push_flags(const char *name, unsigned flags)
{
	struct sp_thread *t = sp_self;
	if (!t || !name)
		return -1;
	return sp_range_push_at(t, name, flags, sp_native_anchor());
}

SP_EXPORT int stackprof_range_push_python(const char *name, unsigned flags, unsigned py_depth)
{
	struct sp_thread *t = sp_self;
	if (!t || !name)
		return -1;
	return sp_range_push_at(
	    t, name, flags, py_depth && py_depth < (1u << 30) ? SP_ANCHOR_MAKE(py_depth, true) : 0);
}

SP_EXPORT int stackprof_range_pop(void)
{
	struct sp_thread *t = sp_self;
	if (!t)
		return -1;
	if (t->range_overflow) {
		t->range_overflow--;
		return t->range_depth + t->range_overflow;
	}
	if (!t->range_depth)
		return -1;
	t->range_depth--;
	atomic_store(&t->range_top, t->range_depth ? t->range_stack[t->range_depth - 1] : 0);
	return t->range_depth;
}

SP_EXPORT int stackprof_schedule(unsigned wait, unsigned warmup, unsigned active, unsigned repeat)
{
	if (!active)
		return -1;
	pthread_mutex_lock(&sp_sched_lock);
	sp_sched = (struct sp_schedule){
	    .set = true, .wait = wait, .warmup = warmup, .active = active, .repeat = repeat};
	sp_step_no = 0;
	sp_sampling_update();
	pthread_mutex_unlock(&sp_sched_lock);
	return 0;
}

SP_EXPORT long stackprof_step(void)
{
	pthread_mutex_lock(&sp_sched_lock);
	long step = ++sp_step_no;
	sp_sampling_update();
	pthread_mutex_unlock(&sp_sched_lock);
	sp_sources_step(step);
	return step;
}

SP_EXPORT int stackprof_window_begin(void)
{
	if (!atomic_load(&sp_g.enabled))
		return -1;
	pthread_mutex_lock(&sp_sched_lock);
	int depth = ++sp_window_depth;
	if (depth == 1) {
		/* marked before the timers run: every sample of the window is after it */
		sp_mark_add(SP_MARK_WINDOW_BEGIN);
		sp_user_on = true;
		sp_sampling_update();
	}
	pthread_mutex_unlock(&sp_sched_lock);
	return depth;
}

SP_EXPORT int stackprof_window_end(void)
{
	int depth = -1;
	if (!atomic_load(&sp_g.enabled))
		return -1;
	pthread_mutex_lock(&sp_sched_lock);
	if (sp_window_depth > 0) {
		depth = --sp_window_depth;
		if (depth == 0) {
			sp_user_on = false;
			sp_sampling_update();
			/* marked after the timers stopped: every sample of the window is before it
			 */
			sp_mark_add(SP_MARK_WINDOW_END);
		}
	}
	pthread_mutex_unlock(&sp_sched_lock);
	return depth;
}

SP_EXPORT int stackprof_active(void)
{
	return atomic_load(&sp_g.enabled) ? 1 : 0;
}
