/*
 * collapse.h - collapsed ("folded") stacks, PyTorch export_stacks compatible.
 *
 * One line per distinct stack: frames root first joined by ';', one space,
 * an integer. Frame text is escaped (space, ';', tab, newline and other
 * control characters become '_'), so flamegraph.pl's line regex
 * /^(.*)\s+?(\d+(?:\.\d*)?)$/ always splits at the last space and never
 * mistakes the end of a frame for a second count. Lines are merged by text
 * and sorted by frames from the root; zero-valued lines are left out.
 *
 * The differential form (flamegraph.pl's difffolded.pl) prints two counts:
 * "stack base new". Not async-signal-safe.
 */
#ifndef SP_EXPORT_COLLAPSE_H
#define SP_EXPORT_COLLAPSE_H

#include <stdbool.h>
#include <stdio.h>

#include "export/label.h"
#include "export/model.h"

enum sp_metric {
	/* microseconds of CPU time, rounded per line; for a kind whose unit is
	 * not time (bytes, counts), its weight in that unit */
	SP_METRIC_US = 0,
	SP_METRIC_SAMPLES, /* sample counts */
};

struct sp_collapse_opts {
	struct sp_label_opts label; /* .folded is forced on */
	enum sp_metric metric;
	bool normalize; /* differential: scale the new side to the base total */
};

/* Writes m's collapsed stacks to out. 0, -ENOMEM, or -errno of the first write error. */
int sp_collapse_write(const struct sp_model *m, const struct sp_collapse_opts *o, FILE *out);

/* Writes "stack base new" lines for the union of both models' stacks. */
int sp_collapse_write_diff(const struct sp_model *base, const struct sp_model *cur,
			   const struct sp_collapse_opts *o, FILE *out);

#endif
