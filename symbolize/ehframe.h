/*
 * ehframe.h - function bounds from .eh_frame, for code without symbols.
 *
 * Every function the compiler emits unwind info for has one FDE covering
 * exactly its code, stripped or not. Where no symbol names an address, the
 * FDE that holds it gives the function's start, so all samples in one
 * unnamed function become one "libfoo.so+0x<start>" frame rather than one
 * frame per instruction. The table is sorted once; lookups are binary
 * searches. Not async-signal-safe.
 */
#ifndef SP_SYMBOLIZE_EHFRAME_H
#define SP_SYMBOLIZE_EHFRAME_H

#include <gelf.h>
#include <stdbool.h>
#include <stdint.h>

struct sp_ehframe;

/*
 * Reads the FDEs of elf's .eh_frame (addresses are elf's virtual
 * addresses). Returns 0 and the table in *out, -ENOENT when elf has no
 * .eh_frame with code in it, -ENOMEM. A malformed entry ends the scan; what
 * was read before it is kept.
 */
int sp_ehframe_new(Elf *elf, struct sp_ehframe **out);

void sp_ehframe_free(struct sp_ehframe *t);

/*
 * Whether an FDE covers vaddr; if so stores its [start, end) and whether
 * its CIE marks a signal trampoline (augmentation 'S', as glibc's
 * __restore_rt has). end and signal may be NULL.
 */
bool sp_ehframe_find(const struct sp_ehframe *t, uint64_t vaddr, uint64_t *start, uint64_t *end,
		     bool *signal);

#endif
