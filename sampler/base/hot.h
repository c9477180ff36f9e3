/*
 * hot.h - memory for the shared tables the signal handler probes at random
 * on every frame: the unwinder's rule cache (rulecache.c) and the Python
 * code table (pystack.c).
 *
 * Spread over 4 KiB pages, a probe made after a millisecond of the
 * program's own work was usually a TLB miss, and in a VM each miss is a
 * page walk through two levels of page tables: on a Python driver with 17
 * native frames, nearly all of the rule cache lookup's time sat on the
 * load of the slot. The tables come instead from one 2 MiB region, aligned
 * and marked for a transparent huge page: one TLB entry covers them all.
 * Where the kernel gives no huge page (THP off, no free 2 MiB), the region
 * is plain 4 KiB pages, as before. The huge page is not taken at the
 * first fault: one 4 KiB page is written before the region is marked, so
 * its pages start as 4 KiB ones and khugepaged makes them one huge page in
 * the background (within 30 s here). Taken at the first fault, the 2 MiB
 * stalled a third of the starts by 4-6 ms on the program's thread on the
 * 2026-11-29 VM, a price every short run paid.
 */
#ifndef SP_SAMPLER_HOT_H
#define SP_SAMPLER_HOT_H

#include <stddef.h>

/*
 * len bytes of zeroed, resident memory from the region, taken in order
 * until it is used up; after that, mapped on its own. NULL with errno set.
 * Never freed. Not signal-safe.
 */
void *sp_hot_alloc(size_t len);

/* Makes the pages of [p, p + len) resident and writable now
 * (MADV_POPULATE_WRITE), so that no first write to them faults later:
 * 0, or -1 with errno set (EINVAL: a kernel before 5.14). Not
 * signal-safe. */
int sp_populate(void *p, size_t len);

#endif
