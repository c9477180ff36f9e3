/*
 * table.h - the key_averages(group_by_stack_n=N).table() summary.
 *
 * Rows are keyed by (function name, the first N frames of the stack from the
 * function outward), as torch.profiler groups events by (name, stack[:N]).
 * Self time counts samples whose leaf is the row's function; total time
 * counts samples where it appears anywhere, once per sample however deep the
 * recursion. Range frames (the record_function analogue) are rows too, as
 * "model_inference" is in PyTorch's tables.
 *
 * Layout, copied from torch/autograd/profiler_util.py's _build_table:
 * the name column is as wide as the longest name + 4 (at most 55; longer
 * names are cut to 52 characters and "..."), numeric columns are 12 wide and
 * right aligned, every column is followed by two spaces (so lines end with
 * two spaces), the Source Location column is left aligned, as wide as its
 * longest entry + 4 (at most 75), and with N > 0 each row's entries span N lines, innermost first,
 * followed by a blank line. Columns: Name, Self CPU %, Self CPU,
 * CPU total %, CPU total, Samples (where torch has "CPU time avg" and
 * "# of Calls": a sampler knows no calls, and total/samples would only
 * restate the sampling period). Footer: "Self CPU time total: 218.803ms".
 *
 * One departure: torch cuts a Source Location that does not fit from the
 * left, behind "...", which loses the function's name when its argument
 * list is long. Here the middle of the path is cut first, then the middle
 * of the argument list; the function's name stays.
 */
#ifndef SP_EXPORT_TABLE_H
#define SP_EXPORT_TABLE_H

#include <stddef.h>
#include <stdio.h>

#include "export/model.h"

enum sp_table_sort {
	SP_TABLE_SELF = 0, /* self_cpu_time_total */
	SP_TABLE_TOTAL,	   /* cpu_time_total */
	SP_TABLE_COUNT,	   /* count: samples the function appears in */
};

struct sp_table_opts {
	unsigned stack_n; /* group_by_stack_n; 0 groups by name only */
	enum sp_table_sort sort;
	size_t row_limit; /* 0 prints every row */
	/* m is an operator view with its Python callers (view.h,
	 * SP_VIEW_OP_PYTHON): Python frames get no rows, and an operator's
	 * stack entries are the stack_n Python frames nearest outside it, as
	 * torch.profiler's with_stack shows an operator's Python stack */
	bool python_callers;
	/* rows of every function, but each one's stack entries are Python
	 * frames only: its own first if it is one, then the Python frames
	 * outside it (what with_stack would show a sample there) */
	bool python_stack;
};

/* Parses a PyTorch sort key name ("self_cpu_time_total", "cpu_time_total",
 * "count") or top's name for it ("self", "total", "samples"). 0 or -EINVAL. */
int sp_table_sort_parse(const char *s, enum sp_table_sort *out);

/*
 * Writes the table for m to out; nothing when m has no samples (as torch
 * returns ""). 0, -ENOMEM, or -errno of the first write error.
 */
int sp_table_write(const struct sp_model *m, const struct sp_table_opts *o, FILE *out);

#endif
