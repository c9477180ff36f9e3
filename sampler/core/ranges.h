/*
 * ranges.h - the table of named ranges and the queue of window marks:
 * what the public API (life/api.c) writes and the writer (writer/) copies
 * into the profile. Here, below both, so that the writer never reaches up
 * into the API for them.
 *
 * A range is interned once per (parent, name, flags, anchor) and keeps its
 * id and name for the life of the process; a thread's range_top
 * (sampler.h) is such an id, and that is all the handler reads of ranges.
 *
 * Two locks, both leaves: nothing is called under them. The API takes the
 * mark lock under its schedule lock (a window's marks), so a fork hook
 * takes them in the order range, schedule, mark (life/api.c).
 *
 * None of this is signal-safe.
 */
#ifndef SP_SAMPLER_RANGES_H
#define SP_SAMPLER_RANGES_H

#include <stdbool.h>
#include <stdint.h>

struct sp_prof_range;

/*
 * Interns (parent, name, flags, anchor) and returns its id, the same id
 * for the same four; 0 on allocation failure. name is copied. A hash
 * lookup: every push asks, and a model labelled with label_modules has
 * one range per module path.
 */
uint32_t sp_range_intern(uint32_t parent, const char *name, uint32_t flags, uint32_t anchor);

/*
 * For the writer: copies up to max range nodes from index `from` (ids,
 * parent ids, names, SP_RANGE_* flags and SP_ANCHOR_* anchors) and returns
 * how many. Names stay valid for the life of the process.
 */
uint32_t sp_ranges_snapshot(uint32_t from, struct sp_prof_range *out, uint32_t max);

/* Queues a mark (SP_MARK_*) at the current time. A mark that finds no
 * memory is lost: the windows then read wider or narrower, the program is
 * not disturbed. */
void sp_mark_add(uint32_t kind);

/*
 * For the writer: moves up to max queued window marks (SP_MARK_* kinds,
 * times since the profile's start), oldest first, out of the queue, and
 * returns how many.
 */
uint32_t sp_marks_take(uint32_t *kind, uint64_t *time_ns, uint32_t max);

/* Fork: the API's hook holds these across fork() (its order: ranges.h's
 * top comment) and releases them in the parent. */
void sp_ranges_lock(void);
void sp_ranges_unlock(void);
void sp_marks_lock(void);
void sp_marks_unlock(void);

/*
 * In a fork child: both locks anew, and the queue emptied, since the
 * child's times count from the fork and its file starts empty; but a
 * window open at the fork (window_open) is open in the child from its
 * start, so its begin mark is queued at time 0. The range table is kept.
 */
void sp_ranges_atfork_child(bool window_open);

#endif
