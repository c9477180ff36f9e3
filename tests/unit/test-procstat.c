/*
 * test-procstat.c - the thread count of /proc/self/stat and status without
 * stackprof's threads (sampler/base/procstat.h): which paths are the process's
 * own, field 20 found past a name with spaces and parentheses, a count
 * that changes width, the floor of one, and text that is left alone.
 */
#include <stdio.h>
#include <string.h>

#include "sampler/base/procstat.h"
#include "tests/unit/check.h"

/* Fixes a copy of text; returns it, or "" if it was left alone. */
static const char *fixed(const char *text, enum sp_procfile kind, int ours, size_t cap)
{
	static char buf[512];
	size_t len = strlen(text);
	memcpy(buf, text, len + 1);
	size_t n = sp_procstat_fix(buf, len, cap, kind, ours);
	return n ? buf : "";
}

int main(void)
{
	CHECK(sp_procfile_of("/proc/self/stat", 42) == SP_PROC_STAT);
	CHECK(sp_procfile_of("/proc/self/status", 42) == SP_PROC_STATUS);
	CHECK(sp_procfile_of("/proc/42/stat", 42) == SP_PROC_STAT);
	CHECK(sp_procfile_of("/proc/42/status", 42) == SP_PROC_STATUS);
	CHECK(sp_procfile_of("/proc/421/stat", 42) == SP_PROC_OTHER);
	CHECK(sp_procfile_of("/proc/4/stat", 42) == SP_PROC_OTHER);
	CHECK(sp_procfile_of("/proc/self/statm", 42) == SP_PROC_OTHER);
	CHECK(sp_procfile_of("/proc/self/task/42/stat", 42) == SP_PROC_OTHER);
	CHECK(sp_procfile_of("/proc/stat", 42) == SP_PROC_OTHER);
	CHECK(sp_procfile_of("proc/self/stat", 42) == SP_PROC_OTHER);

	/* fields 3 to 19, then 20 (num_threads) = 12, then the rest */
	const char *tail = " 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 ";
	char stat[512];
	snprintf(stat, sizeof(stat), "42 (a) b) c) S%s12 0 99 7\n", tail + 2);
	/* the name "a) b) c" holds spaces and parentheses */
	char want[512];
	snprintf(want, sizeof(want), "42 (a) b) c) S%s11 0 99 7\n", tail + 2);
	CHECK(!strcmp(fixed(stat, SP_PROC_STAT, 1, 512), want));
	snprintf(want, sizeof(want), "42 (a) b) c) S%s9 0 99 7\n", tail + 2);
	CHECK(!strcmp(fixed(stat, SP_PROC_STAT, 3, 512), want));
	snprintf(want, sizeof(want), "42 (a) b) c) S%s1 0 99 7\n", tail + 2);
	CHECK(!strcmp(fixed(stat, SP_PROC_STAT, 40, 512), want));
	/* a count that grows wider does not fit a full buffer */
	CHECK(!strcmp(fixed(stat, SP_PROC_STAT, -100, strlen(stat) + 1), ""));
	/* too few fields, no name, no number */
	CHECK(!strcmp(fixed("42 (x) S 1 2 3\n", SP_PROC_STAT, 1, 512), ""));
	CHECK(!strcmp(fixed("42 x S 1 2 3\n", SP_PROC_STAT, 1, 512), ""));
	snprintf(stat, sizeof(stat), "42 (x) S%sz 0\n", tail + 2);
	CHECK(!strcmp(fixed(stat, SP_PROC_STAT, 1, 512), ""));

	const char *status = "Name:\tpython3\nTgid:\t42\nThreads:\t10\nSigQ:\t0/1\n";
	CHECK(!strcmp(fixed(status, SP_PROC_STATUS, 1, 512),
		      "Name:\tpython3\nTgid:\t42\nThreads:\t9\nSigQ:\t0/1\n"));
	CHECK(!strcmp(fixed(status, SP_PROC_STATUS, 2, 512),
		      "Name:\tpython3\nTgid:\t42\nThreads:\t8\nSigQ:\t0/1\n"));
	/* a name line that says Threads: is not the count */
	CHECK(!strcmp(fixed("Name:\tThreads: 5\nThreads:\t3\n", SP_PROC_STATUS, 1, 512),
		      "Name:\tThreads: 5\nThreads:\t2\n"));
	CHECK(!strcmp(fixed("Name:\tx\n", SP_PROC_STATUS, 1, 512), ""));
	CHECK(!strcmp(fixed(status, SP_PROC_OTHER, 1, 512), ""));

	/* one task's stat: the state, field 20 and field 52 (the exit status) */
	struct sp_task_stat ts;
	char task[1024];
	int n = snprintf(task, sizeof(task), "42 (a) b) Z");
	for (int f = 4; f <= 52; f++)
		n += snprintf(task + n, sizeof(task) - (size_t)n, " %d",
			      f == 20	? 3
			      : f == 52 ? 1280
					: 0);
	snprintf(task + n, sizeof(task) - (size_t)n, "\n");
	CHECK(sp_procstat_task(task, &ts) == 0 && ts.state == 'Z' && ts.threads == 3 &&
	      ts.exit_code == 1280);
	/* an older kernel's, without field 52 */
	snprintf(task, sizeof(task), "42 (x) R%s7 0 1\n", tail + 2);
	CHECK(sp_procstat_task(task, &ts) == 0 && ts.state == 'R' && ts.threads == 7 &&
	      ts.exit_code == 0);
	CHECK(sp_procstat_task("42 (x) S 1 2 3\n", &ts) < 0);
	CHECK(sp_procstat_task("42 x S 1 2 3\n", &ts) < 0);
	return check_exit("test-procstat");
}
