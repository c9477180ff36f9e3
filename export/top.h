/*
 * top.h - the top-N view of MegEngine's profile_analyze: the heaviest
 * functions (or files, modules, threads), filtered by name and time.
 *
 * Output, one row per key after filtering and ordering:
 *       Self   Self %      Total  Total %  Samples  Name
 *   62.005ms   42.47%   62.005ms   42.47%       62  gemm_kernel
 * or per thread, one row per (thread, key):
 *       Self   Self %      Total  Total %  Samples  Thread            Name
 *   50.005ms   34.25%   50.005ms   34.25%       50  worker pool-1001  gemm_kernel
 * Times use the PyTorch units of textfmt.h. Not async-signal-safe.
 */
#ifndef SP_EXPORT_TOP_H
#define SP_EXPORT_TOP_H

#include <regex.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "export/model.h"
#include "export/rollup.h"

enum sp_top_col {
	SP_TOP_SELF = 0,
	SP_TOP_TOTAL,
	SP_TOP_SAMPLES, /* samples the key appears in */
	SP_TOP_NAME,
};

struct sp_top_opts {
	enum sp_rollup_by by;
	size_t top;		/* rows to print; 0 for all */
	const regex_t *name_re; /* keep names matching this, or NULL */
	enum sp_top_col order;
	bool ascending;		 /* default: descending, except name */
	uint64_t min_ns, max_ns; /* keep self time in [min, max]; max 0 means no bound */
	double percent_above;	 /* keep self share > this percentage; < 0 to keep all */
	/* a row per (thread, key), the thread in a Thread column before Name;
	 * the model must be built with per_thread */
	bool per_thread;
	/* the rows' group is their process (a merged model's process roots,
	 * merge.h): the column reads Process; with per_thread, both */
	bool per_process;
	/* m is already a view of by (op, module-path): one made per profile
	 * before a merge (merge.h); its frames are the keys */
	bool viewed;
};

/* Parses a column name: self, total, samples, name, or torch's self_cpu_time_total,
 * cpu_time_total, count (a leading '+' sets ascending). */
int sp_top_col_parse(const char *s, enum sp_top_col *out, bool *ascending);

/* 0, -ENOMEM, or -errno of the first write error. */
int sp_top_write(const struct sp_model *m, const struct sp_top_opts *o, FILE *out);

#endif
