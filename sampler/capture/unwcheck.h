/*
 * unwcheck.h - STACKPROF_UNWIND=check's report of the first sample the two
 * walks differ on (docs/SAMPLER.md, "Checked against libunwind").
 *
 * The handler counts every differing sample (info's `unwind check:`), and
 * hands the first one here: both stacks, from a few frames before the
 * first frame they differ on. At a normal exit the library prints them to
 * stderr, frame by frame as module+offset, so that a test which meets a
 * rare difference says which frame differs.
 */
#ifndef SP_SAMPLER_UNWCHECK_H
#define SP_SAMPLER_UNWCHECK_H

#include <stddef.h>
#include <stdint.h>

#include "sampler/base/sigsafe.h"

/* Keeps stacks a (the cached rules', na frames) and b (libunwind's) if
 * they are the process's first to differ. Signal-safe. */
SP_SIGSAFE void sp_unwcheck_keep(const uint64_t *a, size_t na, const uint64_t *b, size_t nb);

/* Prints the kept pair to stderr, naming each frame from the module
 * snapshot under stackprof's module lock (not dladdr, which would wait on
 * the loader lock the exiting program may hold); nothing if none was kept. */
void sp_unwcheck_report(void);

/* In a fork child: what the parent kept is not the child's. */
void sp_unwcheck_atfork_child(void);

#endif
