/*
 * flamegraph.h - a self-contained interactive flame graph SVG, written by
 * stackprof itself (no Perl).
 *
 * The picture follows flamegraph.pl: x is the share of the metric, y the
 * stack depth, frames sorted by name so equal prefixes merge, one <g> per
 * frame holding a <title> tooltip (name, time, share), a <rect> and a
 * <text> cut to fit. A small embedded script adds click-to-zoom with reset,
 * regex search that highlights frames and shows the matched share, and a
 * details line under the mouse.
 *
 * Size is bounded by construction: the stacks are walked sorted, frames are
 * laid out as they close (flamegraph.pl's flow merge), and a frame narrower
 * than minwidth is never written, nor anything above it. A profile with 100k
 * unique stacks therefore yields at most about (width / minwidth) frames per
 * level. Not async-signal-safe.
 */
#ifndef SP_EXPORT_FLAMEGRAPH_H
#define SP_EXPORT_FLAMEGRAPH_H

#include <stdbool.h>
#include <stdio.h>

#include "export/collapse.h"
#include "export/label.h"
#include "export/model.h"

struct sp_flamegraph_opts {
	struct sp_label_opts label;
	enum sp_metric metric;
	const char *title;    /* NULL: "Flame Graph", "Icicle Graph" or "Differential ..." */
	const char *subtitle; /* NULL: the profiled command line */
	bool inverted;	      /* icicle: root at the top */
	unsigned width;	      /* image width in px; 0 means 1200 */
	double minwidth;      /* frames narrower than this are left out... */
	bool minwidth_pct;    /* ...in percent of the width instead of px */
	bool normalize;	      /* differential: scale the base to the new total */
};

/*
 * Writes the flame graph of m. With base non-NULL, a differential graph:
 * widths from m (the new profile), red where m grew over base, blue where
 * it shrank, as flamegraph.pl draws difffolded input.
 * 0, -ENOMEM, or -errno of the first write error.
 */
int sp_flamegraph_write(const struct sp_model *m, const struct sp_model *base,
			const struct sp_flamegraph_opts *o, FILE *out);

#endif
