/*
 * symtab.h - an ELF symbol table sorted for address lookup.
 *
 * Built once per module from .symtab or .dynsym; each lookup is a binary
 * search (libdwfl's dwfl_module_addrname scans the whole table per call,
 * 0.7 ms on libtorch_cpu). The choice between candidates follows libdwfl so
 * that names agree with eu-addr2line: the closest symbol whose
 * [st_value, st_value + st_size) holds the address, global before weak before
 * local; a symbol is never used outside its size. A sizeless symbol (an
 * assembly label) is used only when no sized symbol holds the address, it is
 * in the address's section, and no sized symbol ends after it.
 * Not async-signal-safe.
 */
#ifndef SP_SYMBOLIZE_SYMTAB_H
#define SP_SYMBOLIZE_SYMTAB_H

#include <gelf.h>
#include <stdint.h>

struct sp_symtab;

/*
 * Indexes elf's symbol table of type sh_type (SHT_SYMTAB or SHT_DYNSYM).
 * Symbols keep pointing into elf's string table: elf must outlive the
 * symtab. demangle says whether sp_symtab_find returns demangled names.
 * Returns 0 and stores the table in *out, -ENOENT if elf has no such table
 * (or no usable symbol in it), -ENOMEM.
 */
int sp_symtab_new(Elf *elf, GElf_Word sh_type, int demangle, struct sp_symtab **out);

void sp_symtab_free(struct sp_symtab *t);

/*
 * Returns the name (demangled if asked; borrowed, valid until
 * sp_symtab_free) of the symbol holding vaddr, and its start in *start
 * (may be NULL); NULL when no symbol holds vaddr.
 */
const char *sp_symtab_find(struct sp_symtab *t, uint64_t vaddr, uint64_t *start);

/* Number of symbols indexed. */
size_t sp_symtab_count(const struct sp_symtab *t);

#endif
