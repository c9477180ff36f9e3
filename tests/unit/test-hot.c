/*
 * test-hot.c - the region of the handler's shared tables (sampler/base/hot.h):
 * pieces are zeroed, resident, apart from each other, on one 2 MiB-aligned
 * region that a huge page backs where the kernel has them on, and a piece
 * that no longer fits is mapped on its own, still zeroed and resident.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

#include "sampler/base/hot.h"
#include "tests/unit/check.h"

#define MIB ((size_t)1 << 20)

/* Whether every page of [p, p + len) is in memory. */
static int resident(const void *p, size_t len)
{
	static unsigned char vec[1024];
	size_t pages = (len + 4095) / 4096;
	if (pages > sizeof(vec) || mincore((void *)p, len, vec) != 0)
		return 0;
	for (size_t i = 0; i < pages; i++)
		if (!(vec[i] & 1))
			return 0;
	return 1;
}

static int zeroed(const unsigned char *p, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (p[i])
			return 0;
	return 1;
}

/* From /proc/self/smaps, for the mapping that holds p: its AnonHugePages
 * in kB (-1 if not found) and whether its VmFlags have "hg" (the
 * MADV_HUGEPAGE advice). */
static long huge_kb(const void *p, int *advised)
{
	FILE *f = fopen("/proc/self/smaps", "r");
	char line[512];
	int in = 0;
	long kb = -1;
	*advised = 0;
	while (f && fgets(line, sizeof(line), f)) {
		unsigned long lo, hi;
		if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2 &&
		    strchr(line, '-') < strchr(line, ' '))
			in = (uintptr_t)p >= lo && (uintptr_t)p < hi;
		else if (in && !strncmp(line, "AnonHugePages:", 14))
			sscanf(line + 14, "%ld", &kb);
		else if (in && !strncmp(line, "VmFlags:", 8))
			*advised = strstr(line, " hg") != NULL;
	}
	if (f)
		fclose(f);
	return kb;
}

/* Whether the kernel hands out huge pages to a region that asks. */
static int thp_on(void)
{
	char buf[128] = "";
	FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
	if (f) {
		if (!fgets(buf, sizeof(buf), f))
			buf[0] = '\0';
		fclose(f);
	}
	return !strstr(buf, "[never]") && buf[0];
}

int main(void)
{
	unsigned char *a = sp_hot_alloc(MIB);
	unsigned char *b = sp_hot_alloc(MIB - 100); /* rounded up to whole pages */
	CHECK(a && b);
	CHECK((uintptr_t)a % (2 * MIB) == 0);
	CHECK(b == a + MIB);
	CHECK(resident(a, 2 * MIB));
	CHECK(zeroed(a, 2 * MIB));
	memset(a, 1, MIB);
	CHECK(zeroed(b, MIB - 100));
	/* asked for, always; given, when the kernel has a free 2 MiB (said,
	 * not checked: a fragmented machine may have none) */
	int advised;
	long kb = huge_kb(a, &advised);
	CHECK(advised);
	if (!thp_on())
		printf("test-hot: transparent huge pages are off here\n");
	else
		printf("test-hot: %ld kB of the region on huge pages\n", kb);

	/* the region is used up: a piece of its own */
	unsigned char *c = sp_hot_alloc(3 * 4096);
	CHECK(c && (c + 3 * 4096 <= a || c >= a + 2 * MIB));
	CHECK(resident(c, 3 * 4096) && zeroed(c, 3 * 4096));
	return check_exit("test-hot");
}
