/*
 * writer.h - the writer thread: it drains every thread's ring, deduplicates
 * stacks, and streams records to the profile through the format's profile
 * writer (sp_prof_writer_* in format/profile.h).
 *
 * All the slow work of the sampler (hashing, compression, /proc reads)
 * happens here, off the program's threads, every 200 ms (less at rates
 * whose samples could fill half a ring sooner), and at once when poked;
 * the file is flushed every STACKPROF_FLUSH_MS. The thread runs with
 * every signal blocked (thread.h). sp_g.lock serializes it against the
 * calls below.
 *
 * Only sp_writer_end_for_signal() is signal-safe (the doorbell,
 * core/doorbell.h, is the handler's way to wake the writer).
 */
#ifndef SP_SAMPLER_WRITER_H
#define SP_SAMPLER_WRITER_H

#include "sampler/base/sigsafe.h"
#include <stdbool.h>
#include <stdint.h>

/* Creates the output file (STACKPROF_OUT, or stackprof.<pid>.prof; a
 * forked child or exec'ed image takes PATH.<pid>), writes the header and
 * the modules, and starts the writer thread. 0 or -errno. */
int sp_writer_start(void);

#include "sampler/core/doorbell.h" /* sp_writer_poke, sp_writer_slot_dead */

/* Drains and flushes now, and waits until it is done. */
void sp_writer_flush_now(void);

/* Records the modules loaded now, if the writer has not yet: dlclose
 * calls it before a module goes, so one loaded and closed between two
 * drains is still named. Waits at most a second for the writer. */
void sp_writer_record_modules(void);

/* Drains and flushes with the stats marked "exec": the profile reads as
 * complete if the exec succeeds. */
void sp_writer_exec_flush(void);

/* Drains everything, writes the last stats (final: a clean exit; sig: the
 * signal the process is about to end itself with, or 0), closes the file
 * and joins the thread. */
void sp_writer_stop(bool final, int sig);

/*
 * Joins the writer thread, keeping the file and all state, and starts it
 * again: around calls that want the program's threads only (interpose.c).
 * Samples wait in the rings meanwhile; a full ring drops them.
 */
void sp_writer_park(void);
void sp_writer_unpark(void);

/*
 * For a signal that is about to end the process (termsig.h): asks the
 * writer thread to end the profile itself, as sp_writer_stop(true, sig)
 * would, with the signal marked as sent from outside, and waits until it
 * has, at most wait_ns. The writer takes no lock the interrupted thread
 * could hold beyond sp_g.lock and its own allocator's; if it is held up
 * (or parked, or gone), the wait ends and the profile stays cut off at its
 * last flush. true if the profile was ended. Signal-safe: an atomic, a
 * futex wake and timed futex waits.
 */
SP_SIGSAFE bool sp_writer_end_for_signal(int sig, uint64_t wait_ns);

/* In a fork child: drops the parent's writer state without touching its file. */
void sp_writer_forget(void);

#endif
