/*
 * procstat.h - /proc/self/stat and /proc/self/status as the program would
 * read them without stackprof: its thread count leaves ours out.
 *
 * CPython 3.12 and later read field 20 of /proc/self/stat (the process's
 * threads) in the parent after os.fork(), os.forkpty() and
 * multiprocessing's fork, and above one print "DeprecationWarning: This
 * process (pid=N) is multi-threaded, use of fork() may lead to deadlocks
 * in the child". stackprof's writer thread made a single-threaded script
 * print it. interpose.c hands fopen() of those files the text below.
 */
#ifndef SP_SAMPLER_PROCSTAT_H
#define SP_SAMPLER_PROCSTAT_H

#include <stdbool.h>
#include <stddef.h>

/* Which file a path names: one of the process's own, by "self" or by pid. */
enum sp_procfile { SP_PROC_OTHER, SP_PROC_STAT, SP_PROC_STATUS };
enum sp_procfile sp_procfile_of(const char *path, int pid);

/*
 * Takes `ours` threads off the count in the text of such a file (len bytes
 * in buf, cap its size), never below one. Returns the new length, or 0 if
 * the text is not as expected (it is then left alone).
 */
size_t sp_procstat_fix(char *buf, size_t len, size_t cap, enum sp_procfile kind, int ours);

#endif
