/*
 * linetab.h - one compile unit's DWARF line table (versions 2 to 5),
 * decoded into a compact sorted array.
 *
 * libdw's dwarf_getsrclines allocates a 40-byte record per row, keeps every
 * register and sorts the whole table; on python3.11d that is most of the
 * time of a batch lookup. This decoder keeps what a lookup needs (address,
 * file, line, column, end of sequence) in 24 bytes, and sorts only when the
 * program was not already in address order. The semantics are libdw's, so
 * that answers match eu-addr2line: rows sort by address with an end of
 * sequence before a row at the same address, otherwise in program order;
 * the last row is an end of sequence; a lookup takes the last row at or
 * below the address unless it ends a sequence; file names are the
 * directory entry joined with the name unless the name is absolute (for
 * DWARF < 5 directory 0 is DW_AT_comp_dir; for DWARF 5 it is the table's).
 * Not async-signal-safe.
 */
#ifndef SP_SYMBOLIZE_LINETAB_H
#define SP_SYMBOLIZE_LINETAB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct sp_linetab;

/* The sections a line program refers to (borrowed; any may be empty). */
struct sp_linesrc {
	const uint8_t *line; /* .debug_line */
	size_t line_len;
	const uint8_t *line_str; /* .debug_line_str */
	size_t line_str_len;
	const uint8_t *str; /* .debug_str */
	size_t str_len;
};

/*
 * Decodes the line program at offset off of src->line for a unit with the
 * given address size and DW_AT_comp_dir (may be NULL). Strings point into
 * src's sections or into the table. Returns 0 with the table in *out,
 * -EINVAL for a program this decoder does not handle (the caller then uses
 * libdw), -ENOMEM.
 */
int sp_linetab_new(const struct sp_linesrc *src, uint64_t off, unsigned address_size,
		   const char *comp_dir, struct sp_linetab **out);

void sp_linetab_free(struct sp_linetab *t);

/*
 * Finds the row for addr. Returns false when none covers it; else stores
 * the file name (NULL when the row's file index is out of range; valid
 * until sp_linetab_free), line and column. File paths are joined on first
 * use, so this writes to t.
 */
bool sp_linetab_find(struct sp_linetab *t, uint64_t addr, const char **file, unsigned *line,
		     unsigned *column);

/* File name number index (DW_AT_call_file, DW_AT_decl_file), or NULL. */
const char *sp_linetab_file(struct sp_linetab *t, uint64_t index);

/* Number of rows. */
size_t sp_linetab_rows(const struct sp_linetab *t);

#endif
