/*
 * sys.h - small system helpers every part of the sampler uses: clocks, the
 * kernel thread id, reading a /proc file, and diagnostics on stderr.
 *
 * Those marked signal-safe are called from the handler; the rest are not.
 */
#ifndef SP_SAMPLER_SYS_H
#define SP_SAMPLER_SYS_H

#include <stdint.h>
#include <sys/types.h>

#include "sampler/base/sigsafe.h"

#include <stdbool.h>

/* Monotonic time in ns (vDSO, ~25 ns). Signal-safe. */
SP_SIGSAFE uint64_t sp_now_ns(void);

/* The calling thread's CPU time in ns (a system call). Signal-safe. */
SP_SIGSAFE uint64_t sp_thread_cpu_ns(void);

/* Kernel thread id (a system call). Signal-safe. */
SP_SIGSAFE pid_t sp_gettid(void);

/* Reads up to size-1 bytes of a small file (/proc) and NUL-terminates buf,
 * through a descriptor the program can't close (fds.h). Bytes read, or -1. */
ssize_t sp_read_small(const char *path, char *buf, size_t size);

/*
 * Writes "stackprof[pid]: <message>\n" with one write(2), unless
 * STACKPROF_QUIET, to stackprof's own duplicate of the stderr the process
 * started with (made by a constructor of sys.c's, kept like any descriptor
 * of stackprof's: fds.h). Never to fd 2 as it is now, which the program may
 * have made its data file; nothing at all if the process started without a
 * stderr or stackprof had to give its duplicate up. errno is kept. Formats
 * with vsnprintf: not for the handler.
 */
void sp_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* STACKPROF_QUIET: sp_log says nothing (set at start-up from the config). */
extern bool sp_log_quiet;

/* Closes stackprof's stderr (a program stackprof leaves alone). */
void sp_log_close(void);

#endif
