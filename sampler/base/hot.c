/*
 * hot.c - the huge-page region for the handler's shared tables (hot.h).
 */
#include "sampler/base/hot.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/mman.h>

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23 /* Linux 5.14 */
#endif

#define SP_HOT_BYTES ((size_t)2 << 20) /* one x86-64 huge page */

static _Atomic(char *) sp_hot;
static _Atomic size_t sp_hot_used;

int sp_populate(void *p, size_t len)
{
	return madvise(p, len, MADV_POPULATE_WRITE);
}

/* The region: 2 MiB, 2 MiB-aligned, marked for a huge page, not yet
 * resident. NULL if it can't be mapped. */
static char *sp_hot_map(void)
{
	char *raw = mmap(NULL, 2 * SP_HOT_BYTES, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (raw == MAP_FAILED)
		return NULL;
	char *p = (char *)(((uintptr_t)raw + SP_HOT_BYTES - 1) & ~(uintptr_t)(SP_HOT_BYTES - 1));
	if (p > raw)
		munmap(raw, (size_t)(p - raw));
	munmap(p + SP_HOT_BYTES, (size_t)(raw + SP_HOT_BYTES - p));
	/* One 4 KiB page first, then the mark: the region's faults are then
	 * 4 KiB pages, and khugepaged makes it one huge page later, in the
	 * background (hot.h). Marked first, the first fault takes the 2 MiB
	 * on the program's thread: 4-6 ms of a start in a third of the starts
	 * on the 2026-11-29 VM, against ~1 ms otherwise. */
	*(volatile char *)p = 0;
	madvise(p, SP_HOT_BYTES, MADV_HUGEPAGE); /* EINVAL without THP: 4 KiB pages */
	return p;
}

/* Makes [p, p + len) resident, before any handler reads it: a read of a
 * page never written maps the shared zero page, and the first write to it
 * is then a copy-on-write fault that flushes every CPU's TLB. */
static void sp_hot_fill(char *p, size_t len)
{
	if (sp_populate(p, len) == 0)
		return;
	for (size_t i = 0; i < len; i += 4096)
		((volatile char *)p)[i] = 0;
}

void *sp_hot_alloc(size_t len)
{
	len = (len + 4095) & ~(size_t)4095;
	char *hot = atomic_load(&sp_hot);
	if (!hot && (hot = sp_hot_map())) {
		char *none = NULL;
		if (!atomic_compare_exchange_strong(&sp_hot, &none, hot)) {
			munmap(hot, SP_HOT_BYTES); /* another thread mapped it first */
			hot = none;
		}
	}
	size_t at;
	char *p;
	if (hot && len <= SP_HOT_BYTES &&
	    (at = atomic_fetch_add(&sp_hot_used, len)) <= SP_HOT_BYTES - len) {
		p = hot + at;
	} else {
		p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (p == MAP_FAILED)
			return NULL;
	}
	sp_hot_fill(p, len);
	return p;
}
