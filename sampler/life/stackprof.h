/*
 * stackprof.h - control of the stackprof sampler from inside a program.
 *
 * stackprof needs no code change: `stackprof run -- ./prog` or
 * LD_PRELOAD=libstackprof.so samples the whole run. This API is for programs
 * that want more, in the spirit of torch.profiler:
 *
 *   stackprof_start() / stackprof_stop()   keep or ignore samples from now on
 *   stackprof_flush()                      push everything so far to the file
 *   stackprof_range_push("LINEAR PASS")    a named range, like record_function:
 *   stackprof_range_pop()                  it becomes a frame in the stack,
 *                                          just inside the function that pushed it
 *   stackprof_step()                       advance a wait,warmup,active,repeat
 *                                          schedule (torch.profiler.schedule)
 *   stackprof_window_begin() / _end()      the part of the run to look at, like
 *                                          a torch.profiler.profile() block
 *
 * Python programs use the same functions through the `stackprof` package
 * (python/stackprof: record_function, schedule, step, profile, and
 * stackprof.torch.label_modules for nn.Module paths); it finds them in the
 * preloaded library with ctypes and does nothing without it.
 *
 * Linking: link with -lstackprof-api (a stub library of no-ops). Run without
 * stackprof, the stubs are called and do nothing; run under stackprof, the
 * preloaded libstackprof.so comes first in symbol lookup and its
 * definitions are used instead. The program never needs a rebuild.
 *
 * All functions are thread-safe. None is async-signal-safe. Ranges are per
 * thread and must be popped on the thread that pushed them.
 */
#ifndef STACKPROF_H
#define STACKPROF_H

#ifdef __cplusplus
extern "C" {
#endif

/* Keeps samples from now on (the default unless STACKPROF_START=0). */
void stackprof_start(void);

/* Ignores samples from now on. Timers keep running, at a cost of ~1 us a signal. */
void stackprof_stop(void);

/* Writes everything sampled so far to the profile and waits until it is on disk. */
void stackprof_flush(void);

/*
 * Opens a named range on the calling thread; ranges nest. The name is
 * copied. In the profile the range is a frame just inside the function
 * that called this (found by walking the stack once, about as much as one
 * sample costs), so the frames outside it stay above. Returns the depth
 * after the push, or -1 if stackprof is not running or the name is NULL.
 */
int stackprof_range_push(const char *name);

/* Closes the innermost range of the calling thread. Returns the new depth, -1 if none was open. */
int stackprof_range_pop(void);

/* Range flags: what pushed a range, for views that treat kinds apart. */
#define STACKPROF_RANGE_MODULE 0x1u /* an nn.Module call (stackprof.torch.label_modules) */

/*
 * stackprof_range_push() with flags (STACKPROF_RANGE_*), which the profile
 * keeps with the range. Ranges that differ only in flags are different
 * ranges. Returns as stackprof_range_push().
 */
int stackprof_range_push_flags(const char *name, unsigned flags);

/*
 * stackprof_range_push_flags() for an interpreter's code: the range goes
 * just inside the Python frame py_depth frames from the root of the
 * thread's Python stack (1 is the outermost; len(inspect.stack()) of the
 * frame that opens it), or at the root if py_depth is 0. No stack walk.
 * Python's stackprof package calls this.
 */
int stackprof_range_push_python(const char *name, unsigned flags, unsigned py_depth);

/*
 * Opens a window: the part of the run the program wants to see, like a
 * torch.profiler.profile() block. Windows are process-wide, not per
 * thread. The first open window starts sampling (as stackprof_start())
 * and the profile records when; the last one to close stops it again
 * (as stackprof_stop()), so nothing is paid after it. Once a profile holds
 * a window, the stackprof commands keep only the samples taken inside
 * windows, even when sampling ran from the program's start (`stackprof
 * run` samples from there unless STACKPROF_START=0); their --all-samples
 * option keeps everything. A schedule still applies inside a window.
 * Windows nest: only the outermost pair counts. Returns the number of open
 * windows after the call, or -1 if stackprof is not running.
 */
int stackprof_window_begin(void);

/* Closes a window. Returns the number still open, or -1 if none was open or stackprof is not
 * running. */
int stackprof_window_end(void);

/*
 * Sets a schedule: after `wait` steps, `warmup` steps are skipped too, then
 * `active` steps are sampled; the cycle runs `repeat` times (0: forever).
 * Samples are kept only during active steps. Same as
 * STACKPROF_SCHEDULE=wait,warmup,active,repeat. Returns 0, or -1 if active is 0.
 */
int stackprof_schedule(unsigned wait, unsigned warmup, unsigned active, unsigned repeat);

/* Marks the end of one step (one inference, one batch). Returns the new step number. */
long stackprof_step(void);

/* 1 if the stackprof sampler is loaded and running in this process, else 0. */
int stackprof_active(void);

#ifdef __cplusplus
}
#endif

#endif
