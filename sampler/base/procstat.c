/*
 * procstat.c - the thread count of /proc/self/stat and /proc/self/status
 * without stackprof's own threads (procstat.h).
 */
#include "sampler/base/procstat.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum sp_procfile sp_procfile_of(const char *path, int pid)
{
	if (strncmp(path, "/proc/", 6) != 0)
		return SP_PROC_OTHER;
	const char *p = path + 6;
	char own[16];
	snprintf(own, sizeof(own), "%d/", pid);
	if (!strncmp(p, "self/", 5))
		p += 5;
	else if (!strncmp(p, own, strlen(own)))
		p += strlen(own);
	else
		return SP_PROC_OTHER;
	return !strcmp(p, "stat")     ? SP_PROC_STAT
	       : !strcmp(p, "status") ? SP_PROC_STATUS
				      : SP_PROC_OTHER;
}

/* Replaces the decimal number at [at, end) in buf by n. */
static size_t sp_put_count(char *buf, size_t len, size_t cap, size_t at, size_t end, long n)
{
	char num[24];
	int w = snprintf(num, sizeof(num), "%ld", n);
	if (w <= 0 || len - (end - at) + (size_t)w >= cap)
		return 0;
	memmove(buf + at + w, buf + end, len - end);
	memcpy(buf + at, num, (size_t)w);
	len = len - (end - at) + (size_t)w;
	buf[len] = '\0';
	return len;
}

size_t sp_procstat_fix(char *buf, size_t len, size_t cap, enum sp_procfile kind, int ours)
{
	if (len >= cap)
		return 0;
	buf[len] = '\0';
	size_t at;
	if (kind == SP_PROC_STAT) {
		/* pid (comm) state ppid ...: the name may hold spaces and
		 * parentheses, so fields are counted from its last ')' */
		char *p = strrchr(buf, ')');
		if (!p)
			return 0;
		/* field 20, num_threads, is the 18th after the name */
		for (int field = 2; field < 20; field++) {
			p = strchr(p + 1, ' ');
			if (!p)
				return 0;
		}
		at = (size_t)(p + 1 - buf);
	} else if (kind == SP_PROC_STATUS) {
		char *p = strstr(buf, "\nThreads:");
		if (!p)
			return 0;
		p += strlen("\nThreads:");
		while (*p == '\t' || *p == ' ')
			p++;
		at = (size_t)(p - buf);
	} else {
		return 0;
	}
	char *end;
	long n = strtol(buf + at, &end, 10);
	if (end == buf + at || n < 1)
		return 0;
	n = n - ours < 1 ? 1 : n - ours;
	return sp_put_count(buf, len, cap, at, (size_t)(end - buf), n);
}

int sp_procstat_task(const char *text, struct sp_task_stat *out)
{
	const char *p = strrchr(text, ')');
	if (!p || p[1] != ' ' || !p[2])
		return -1;
	out->state = p[2];
	out->threads = 0;
	out->exit_code = 0;
	p++; /* each field comes after one space, from 3 (the state) on */
	for (int field = 3; field <= 52; field++) {
		if (field == 20 || field == 52) {
			char *end;
			long v = strtol(p + 1, &end, 10);
			if (end == p + 1)
				return field == 52 ? 0 : -1;
			if (field == 20)
				out->threads = v;
			else
				out->exit_code = (int)v;
		}
		p = strchr(p + 1, ' ');
		if (!p)
			return field >= 20 ? 0 : -1;
	}
	return out->threads > 0 ? 0 : -1;
}
