/*
 * chrome.h - the samples as a Chrome Trace Event timeline, for Perfetto
 * (ui.perfetto.dev) and chrome://tracing.
 *
 * The classic conversion of sampled stacks into a trace: per thread, in time
 * order, consecutive samples that share a stack prefix extend the same
 * slices, and a slice ends where the stack stops containing it. Each sample
 * stands for the weight_ns of CPU time before its timestamp; a gap longer
 * than one sample's weight (the thread slept or waited) ends every slice.
 * Output: process and thread name metadata ("ph":"M") and complete events
 * ("ph":"X", ts/dur in microseconds) with the frame's file, line and module
 * in args, category "range" for named ranges and "native" otherwise.
 * Complete events nest cleanly per thread, which Perfetto draws as a flame
 * chart on the thread's track. Not async-signal-safe.
 *
 * Only a kind whose weights are time (cpu, wall: sp_model_is_timed) has a
 * timeline. A count or a number of bytes is no duration, and Trace Event
 * counters ("ph":"C") would keep the amounts but lose the stacks, which are
 * what the profile is for; speedscope and pprof show such kinds.
 */
#ifndef SP_EXPORT_CHROME_H
#define SP_EXPORT_CHROME_H

#include <stdio.h>

#include "export/label.h"
#include "export/model.h"

/* 0, -ENOMEM, or -errno of the first write error; -EDOM, with nothing
 * written, when m's weights are not time. */
int sp_chrome_write(const struct sp_model *m, const struct sp_label_opts *lo, FILE *out);

#endif
