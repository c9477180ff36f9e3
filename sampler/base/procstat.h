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

/*
 * What /proc/PID/task/TID/stat says of one task (a cheap read: unlike the
 * process's stat, it sums no other thread's times): its state letter ('Z'
 * for a thread-group leader that has exited while other threads run), the
 * process's thread count (field 20, which counts such a leader), and the
 * task's exit status in waitpid's form (field 52, Linux 3.5+; 0 if absent).
 * 0, or -1 if the text is not as expected.
 */
struct sp_task_stat {
	char state;
	long threads;
	int exit_code;
};
int sp_procstat_task(const char *text, struct sp_task_stat *out);

#endif
