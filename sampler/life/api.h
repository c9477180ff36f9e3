/*
 * api.h - the sampler's side of the public C API (stackprof.h): the
 * schedule, and the table of named ranges and the queue of window marks
 * that the writer copies into the profile. The stackprof_* functions
 * themselves are declared in stackprof.h.
 *
 * None of this is signal-safe; the handler reads only the thread's
 * range_top (sampler.h).
 */
#ifndef SP_SAMPLER_API_H
#define SP_SAMPLER_API_H

#include <stdint.h>

struct sp_prof_range;

/* Called once by the constructor: applies STACKPROF_SCHEDULE and STACKPROF_START. */
void sp_api_init(void);

/* Sets sampling on or off as the API, the schedule and the program's use
 * of SIGPROF (signals.h) say now, pausing or resuming the timers. */
void sp_api_resync(void);

/* Fork hooks: 0 before fork (lock), 1 in the parent (unlock), 2 in the child (re-init). */
void sp_api_atfork(int phase);

/*
 * For the writer: copies up to max range nodes from index `from` (ids,
 * parent ids, names, SP_RANGE_* flags and SP_ANCHOR_* anchors) and returns
 * how many. Names stay valid for the life of the process.
 */
uint32_t sp_ranges_snapshot(uint32_t from, struct sp_prof_range *out, uint32_t max);

/*
 * For the writer: moves up to max queued window marks (SP_MARK_* kinds,
 * times since the profile's start), oldest first, out of the queue, and
 * returns how many.
 */
uint32_t sp_marks_take(uint32_t *kind, uint64_t *time_ns, uint32_t max);

#endif
