/*
 * fds.h - stackprof's own file descriptors, kept out of the program's way.
 *
 * A program may close every descriptor from 3 up (close_range, closefrom, a
 * close() loop, as daemons and sandboxes do), or dup2 its log over a range
 * of numbers, and then open files of its own. If stackprof kept writing to
 * its old number, the program's file would get profile bytes; if it closed
 * a number at thread exit, it could close the program's file. So:
 *
 * - Every descriptor stackprof keeps lives at a high number, in
 *   [floor, floor + SP_FD_SPAN) where floor is 64 below the smaller of
 *   RLIMIT_NOFILE and 1024: out of the program's low numbers, which the
 *   kernel hands out first, and never past the limit the program set.
 * - Each is registered, with the place its owner keeps the number (struct
 *   sp_fd), from inside a section that excludes the program's own close,
 *   close_range, closefrom, dup2 and dup3, which stackprof interposes: a
 *   number the kernel just gave stackprof cannot be closed by the program
 *   before it is registered.
 * - To the program, stackprof's descriptors are not open: close() of one
 *   fails with EBADF as it would without stackprof, close_range() and
 *   closefrom() close everything around them, and dup2()/dup3() onto one
 *   first move stackprof's descriptor to another high number, then do what
 *   the program asked. Users of a descriptor hold it (sp_fd_hold) while
 *   they use the number, so a move never pulls a number from under a
 *   write.
 * - libunwind keeps a pipe to test memory with (it writes a byte of the
 *   address to it); when a read from that pipe fails it closes both numbers
 *   and makes a new pipe. Calls into libunwind are bracketed with
 *   sp_fd_libunwind(): the pipe it makes meanwhile is registered as
 *   stackprof's, and a close of a number it no longer owns (the program's
 *   now) fails with EBADF instead of closing the program's file.
 * - As a last line for programs that close by raw system call, the writer
 *   checks its file's identity before each flush (writer.c), and a perf
 *   event's descriptor is checked by its event id before stackprof
 *   disables or closes it (sources/perfevent.c).
 *
 * Not signal-safe, but for sp_fd_hold/sp_fd_drop, which are.
 */
#ifndef SP_SAMPLER_FDS_H
#define SP_SAMPLER_FDS_H

#include <stdatomic.h>
#include <stdbool.h>
#include <sys/types.h>

#include "sampler/base/sigsafe.h"

/* How many numbers above floor stackprof may use. */
#define SP_FD_SPAN 4096

/* Where an owner keeps one of its descriptors. Zero-initialized: none. */
struct sp_fd {
	_Atomic int fd;	   /* the number now, -1 (or 0 when zeroed) when none */
	_Atomic int users; /* holders of the number (sp_fd_hold) */
};

/* Reads RLIMIT_NOFILE and maps the registry, once (later calls return 0).
 * 0 or -errno. */
int sp_fds_init(void);

/* How many descriptors stackprof may hold at once: the numbers from floor
 * up to RLIMIT_NOFILE, at most SP_FD_SPAN. 0 when the program lowered
 * RLIMIT_NOFILE under floor after stackprof started. */
int sp_fd_room(void);

/* The lowest number stackprof keeps a descriptor at, -1 before sp_fds_init. */
int sp_fd_floor(void);

/*
 * Brackets the making of a descriptor: no close/close_range/dup2 of the
 * program's runs meanwhile. Signals are blocked on the calling thread for
 * the duration (a handler of the program's that closed a file would wait
 * for its own thread). false if the program's calls did not leave within
 * a bounded wait; then make nothing and call nothing else.
 */
bool sp_fd_begin(void);
void sp_fd_end(void);
/* (A section may be opened inside another on the same thread: the inner
 * pair does nothing. sp_log, called inside one, may abandon its descriptor.) */

/*
 * Inside sp_fd_begin/end: moves fd (just made, close-on-exec) to a high
 * number, registers it as f's and stores the number in f. Returns the new
 * number, or -errno (fd is closed then: no room above floor, or the
 * registry is full).
 */
int sp_fd_keep(struct sp_fd *f, int fd);

/* Opens path (O_CLOEXEC is added) as a kept descriptor in f, in a section
 * of its own. The number, or -errno: -EMFILE when there is no number to
 * keep it at; with O_CREAT|O_EXCL, a file that was made but can't be kept
 * is removed again: nothing is left behind. */
int sp_fd_open(struct sp_fd *f, const char *path, int flags, mode_t mode);

/* Unregisters and closes f's descriptor, in a section of its own, once no
 * one holds it. NULL or an empty f is fine. */
void sp_fd_close(struct sp_fd *f);

/* Unregisters f's descriptor without closing the number: it was found to
 * name something else (closed behind stackprof's back, then reused). */
void sp_fd_abandon(struct sp_fd *f);

/*
 * In a forked child: f's descriptor is the parent's (the same open file or
 * perf event): unregister and close it. Call before the child makes its own.
 */
void sp_fd_forget(struct sp_fd *f);

/* Takes f's current number for one use, or -1 if it has none; every
 * sp_fd_hold is paired with sp_fd_drop. Signal-safe. */
SP_SIGSAFE int sp_fd_hold(struct sp_fd *f);
SP_SIGSAFE void sp_fd_drop(struct sp_fd *f);

/* Brackets a call into libunwind on this thread (on: 1, off: 0). Signal-safe. */
SP_SIGSAFE void sp_fd_libunwind(int on);

/* Fork hooks: 0 before fork, 1 in the parent, 2 in the child. */
void sp_fds_atfork(int phase);

#endif
