/*
 * test-outermost.c - sp_symbolizer_is_outermost(): the CFI of this
 * program's entry point (_start, from crt1.o) marks the return address
 * undefined, main's does not. The answer comes from .eh_frame alone, so it
 * holds for a stripped binary too, and unknown addresses say no.
 */
#define _GNU_SOURCE
#include <link.h>
#include <stdio.h>
#include <sys/auxv.h>

#include "symbolize/symbolize.h"
#include "tests/unit/check.h"

struct span {
	uint64_t bias, lo, hi;
};

static int first_object(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct span *s = arg;
	s->bias = info->dlpi_addr;
	s->lo = UINT64_MAX;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_LOAD)
			continue;
		uint64_t lo = info->dlpi_addr + ph->p_vaddr, hi = lo + ph->p_memsz;
		if (lo < s->lo)
			s->lo = lo;
		if (hi > s->hi)
			s->hi = hi;
	}
	return 1; /* the main program comes first */
}

int main(int argc, char **argv)
{
	const char *exe = argc > 1 ? argv[1] : "/proc/self/exe";
	struct span sp = {0};
	dl_iterate_phdr(first_object, &sp);
	struct sp_symbolizer *s = sp_symbolizer_new(0);
	CHECK(s != NULL);
	CHECK(sp_symbolizer_add_module(s, exe, sp.lo, sp.hi, sp.bias, NULL, 0) == 0);
	uint64_t entry = getauxval(AT_ENTRY);
	CHECK(sp_symbolizer_is_outermost(s, entry, false) == 1);
	CHECK(sp_symbolizer_is_outermost(s, entry + 4, false) == 1);
	CHECK(sp_symbolizer_is_outermost(s, (uint64_t)(uintptr_t)main, false) == 0);
	CHECK(sp_symbolizer_is_outermost(s, 0x10, false) == 0);
	sp_symbolizer_free(s);
	return check_exit("test-outermost");
}
