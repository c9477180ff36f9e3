/*
 * speedscope.h - the speedscope file format
 * (https://www.speedscope.app/file-format-schema.json): shared frames with
 * name, file and line; one "sampled" profile per thread, its samples in
 * time order as frame-index arrays root first with their weights in
 * nanoseconds (consecutive equal stacks merged). Frames are interned by
 * their text in the chosen label style. Not async-signal-safe.
 */
#ifndef SP_EXPORT_SPEEDSCOPE_H
#define SP_EXPORT_SPEEDSCOPE_H

#include <stdio.h>

#include "export/label.h"
#include "export/model.h"

/* exporter names the writer ("stackprof 0.1.0"). 0, -ENOMEM or -errno of a write error. */
int sp_speedscope_write(const struct sp_model *m, const struct sp_label_opts *lo,
			const char *exporter, FILE *out);

#endif
