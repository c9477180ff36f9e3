/*
 * module.h - one ELF object opened for symbolization: its symbol table,
 * DWARF (found through build-id, .gnu_debuglink or /usr/lib/debug) and
 * .eh_frame function bounds.
 *
 * Addresses here are the object's own ELF virtual addresses; the
 * symbolizer subtracts the load bias first. Every index is built on first
 * need, so opening is cheap. Not async-signal-safe.
 */
#ifndef SP_SYMBOLIZE_MODULE_H
#define SP_SYMBOLIZE_MODULE_H

#include <stddef.h>
#include <stdint.h>

#include "symbolize/symbolize.h"

struct sp_module;

/*
 * Opens the ELF file at path. flags are SP_SYM_*. build_id (build_id_len
 * bytes, may be 0) is the build-id recorded when the file was mapped; when
 * given and the file's differs (or it has none), the file is not used.
 * Returns 0 with the module in *out, or -errno with a one-line reason in
 * why: -ENOENT, -EACCES and the like (cannot open), -ENOEXEC (not ELF),
 * -ESTALE (build-id mismatch), -ENOMEM. On success why holds a remark worth
 * a warning ("no debug info ...") or "".
 */
int sp_module_open(const char *path, const uint8_t *build_id, size_t build_id_len, unsigned flags,
		   struct sp_module **out, char *why, size_t why_len);

/*
 * Same for an ELF image in memory (the vDSO). The module keeps a copy.
 * Symbols come from its .dynsym (or .symtab); it has no DWARF.
 */
int sp_module_open_image(const void *image, size_t len, unsigned flags, struct sp_module **out,
			 char *why, size_t why_len);

void sp_module_free(struct sp_module *m);

/*
 * Resolves vaddr. Stores in *frames a borrowed array (valid until the next
 * lookup on m), innermost first, and returns its length (>= 1) or -ENOMEM.
 * Frames are SP_FRAME_FUNC or SP_FRAME_INLINED with names, or one
 * SP_FRAME_UNNAMED frame with func NULL and offset the start of the
 * enclosing function (from .eh_frame; vaddr itself where no FDE covers it).
 * Named frames have offset = vaddr; module is left NULL for the caller.
 */
int sp_module_lookup(struct sp_module *m, uint64_t vaddr, const struct sp_frame **frames);

/*
 * Returns the ELF symbol holding vaddr (demangled unless SP_SYM_NO_DEMANGLE;
 * borrowed until sp_module_free) and its start in *start (may be NULL), or
 * NULL.
 */
const char *sp_module_symbol(struct sp_module *m, uint64_t vaddr, uint64_t *start);

/*
 * Whether the call frame information at vaddr says the return address is
 * undefined: how the ABI marks an outermost frame (glibc's _start and the
 * thread entry in clone/clone3). 1 yes, 0 no, -1 no CFI covers vaddr.
 */
int sp_module_is_outermost(struct sp_module *m, uint64_t vaddr);

#endif
