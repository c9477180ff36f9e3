/*
 * diff.h - two profiles compared function by function, as HTA's TraceDiff
 * compares two traces: which functions were added, removed, grew, shrank or
 * stayed the same, with sample counts and times on both sides.
 *
 * A function is "added" when its compared time (self or total) is 0 in the
 * base (it appears in no sample there, or, comparing self time, was never
 * the leaf), "removed" when it is 0 in the new profile; otherwise its change
 * in the compared metric decides, and a change no larger
 * than the threshold counts as unchanged (sampling noise). With normalize,
 * the new profile's times and counts are scaled to the base's total, so that
 * a longer run does not make everything look slower. With a name filter,
 * only the names it matches are rows, and counted in the closing line.
 * Not async-signal-safe.
 */
#ifndef SP_EXPORT_DIFF_H
#define SP_EXPORT_DIFF_H

#include <regex.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "export/model.h"
#include "export/rollup.h"

enum sp_diff_sort {
	SP_DIFF_DELTA = 0, /* new - base, largest growth first */
	SP_DIFF_ABS,	   /* |new - base| */
	SP_DIFF_BASE,
	SP_DIFF_NEW,
	SP_DIFF_NAME,
};

struct sp_diff_opts {
	enum sp_rollup_by by;
	bool total; /* compare total time instead of self time */
	enum sp_diff_sort sort;
	bool normalize;
	double threshold_pct;	  /* |delta| <= this % of the base total: unchanged */
	size_t limit;		  /* rows to print; 0 for all */
	const regex_t *name_re;	  /* keep names matching this, or NULL (top's --name) */
	const char *name_pattern; /* its text, for the heading */
	const char *base_name;	  /* shown in the heading */
	const char *new_name;
};

int sp_diff_sort_parse(const char *s, enum sp_diff_sort *out);

/* 0, -ENOMEM, or -errno of the first write error. */
int sp_diff_write(const struct sp_model *base, const struct sp_model *cur,
		  const struct sp_diff_opts *o, FILE *out);

#endif
