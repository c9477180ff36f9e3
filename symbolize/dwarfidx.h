/*
 * dwarfidx.h - address lookup in one module's DWARF: functions, inline
 * chains and line tables, indexed lazily per compile unit.
 *
 * Creating the index reads only the unit headers and each unit's address
 * ranges (the work of .debug_aranges). The first lookup that lands in a unit
 * walks that unit's DIE tree once, keeping the subprogram and
 * inlined_subroutine DIEs with code and their nesting, and flattens their
 * ranges into disjoint segments that each name the innermost DIE; it also
 * loads the unit's line table. Every later lookup in the unit is two binary
 * searches and a walk up parent links. Per-address dwarf_getscopes, which
 * rescans the unit (~13 ms on big units), is never used.
 *
 * The answers follow eu-addr2line -f -i: the innermost frame's location is
 * the line-table row for the address; each outer frame's location is the
 * call site (DW_AT_call_file/line/column) of the inlined call nested in it;
 * names are DW_AT_linkage_name (demangled) or DW_AT_name, through
 * DW_AT_abstract_origin and DW_AT_specification. Relative file names are
 * joined to the unit's DW_AT_comp_dir. Not async-signal-safe.
 */
#ifndef SP_SYMBOLIZE_DWARFIDX_H
#define SP_SYMBOLIZE_DWARFIDX_H

#include <elfutils/libdw.h>
#include <stdbool.h>
#include <stdint.h>

struct sp_dwarfidx;

/* One frame of an address's inline chain. Strings are borrowed. */
struct sp_dwframe {
	const char *func; /* never NULL: "??" for a DIE without a name */
	const char *file; /* NULL if unknown */
	unsigned line;	  /* 0 if unknown */
	unsigned column;  /* 0 if unknown */
	bool inlined;	  /* an inlined_subroutine; the outermost is the subprogram */
};

/* A line-table row. */
struct sp_dwline {
	const char *file; /* NULL when no row covers the address */
	unsigned line;
	unsigned column;
};

/*
 * Returns an index over dw (borrowed: it must outlive the index), or NULL
 * on allocation failure. flags are SP_SYM_NO_DEMANGLE and SP_SYM_BASENAMES.
 */
struct sp_dwarfidx *sp_dwarfidx_new(Dwarf *dw, unsigned flags);

void sp_dwarfidx_free(struct sp_dwarfidx *x);

/*
 * Resolves addr (a DWARF address). Stores the line-table row in *loc.
 * Returns the number of frames, innermost first, stored in *frames
 * (borrowed, valid until the next lookup), 0 when no function DIE holds
 * addr, or -ENOMEM.
 */
int sp_dwarfidx_lookup(struct sp_dwarfidx *x, uint64_t addr, const struct sp_dwframe **frames,
		       struct sp_dwline *loc);

/* Number of compile units with code, and how many were indexed so far. */
void sp_dwarfidx_stats(const struct sp_dwarfidx *x, size_t *units, size_t *indexed);

#endif
