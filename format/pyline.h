/*
 * pyline.h - a CPython code object's line table, read offline: which source
 * line an instruction belongs to, from a copy of co_linetable; and the
 * table cut down to its lines, which the sampler's writer stores.
 *
 * Two formats, chosen by the interpreter's minor version:
 *  - 3.10 (PEP 626): pairs of bytes (bytecode length of the range in bytes,
 *    unsigned; line delta, signed, applied before the range), -128 marking
 *    a range with no line; documented in CPython's Objects/lnotab_notes.txt.
 *  - 3.11 to 3.13, the location table: entries of one byte with bit 7 set
 *    (a 4-bit kind and the range's length in code units minus 1) followed
 *    by bytes with bit 7 clear holding line deltas and columns in 6-bit
 *    variable-length chunks; documented in Objects/locations.md
 *    (InternalDocs/locations.md in newer trees).
 * Both start from co_firstlineno. Only lines are decoded; columns are
 * skipped.
 *
 * The whole table is checked on every lookup, so a malformed table is
 * refused whichever instruction is asked for, and nothing outside
 * [table, table + len) is ever read. Pure computation: no allocation, no
 * system call; async-signal-safe, although it is meant for after the run.
 */
#ifndef SP_FORMAT_PYLINE_H
#define SP_FORMAT_PYLINE_H

#include <stddef.h>
#include <stdint.h>

/*
 * The line of instruction instr, counted in code units (2-byte units: on
 * 3.10 the frame's f_lasti, on 3.11 and 3.12 (prev_instr -
 * co_code_adaptive) / 2, on 3.13 (instr_ptr - co_code_adaptive) / 2), of a
 * code object of CPython 3.minor whose co_linetable is table (len bytes,
 * borrowed) and whose co_firstlineno is firstlineno.
 *
 * Returns 0 with the line in *line; -ENOENT when the table gives that
 * instruction no line (an artificial instruction, or instr past the last
 * range); -EINVAL when the table is malformed (a truncated entry, a byte
 * out of place, a line out of int range) or minor is not 10 to 13. *line
 * is written only on success.
 */
int sp_pyline_addr2line(unsigned minor, const uint8_t *table, size_t len, int firstlineno,
			uint32_t instr, int *line);

/*
 * The same line table with only its lines, for a profile: the 3.11-3.13
 * location table's columns dropped, each run of code units on one line (or
 * on none) written as "no columns" entries (kind 13, or 15 for none) of up
 * to 8 units. Still a table of the same format, which every reader of it
 * reads as before: sp_pyline_addr2line gives every instruction the same
 * answer as from the original. A 3.10 table has no columns and is copied.
 *
 * out must hold len bytes: the result is never longer. Returns its length,
 * or -EINVAL when the table is malformed or minor is not 10 to 13 (then
 * out holds nothing of use, and the original is what to keep).
 */
long sp_pyline_lines_only(unsigned minor, const uint8_t *table, size_t len, uint8_t *out);

#endif
