/*
 * pprof.h - the profile as pprof's profile.proto, gzip-compressed: what
 * `go tool pprof`, pprof-format (npm), Pyroscope and Speedscope read.
 *
 * The protobuf encoding is written by hand (varints and length-delimited
 * fields; the schema is github.com/google/pprof/proto/profile.proto):
 *   - sample types samples/count and cpu/nanoseconds (the default), period
 *     type cpu/nanoseconds, period 1e9 / rate, time_nanos (wall-clock start),
 *     duration_nanos (last sample), the command line as a comment;
 *   - one Mapping per module, with its build-id as hex;
 *   - one Location per distinct address, its Line entries innermost first
 *     (pprof's order for inlined code), plus one address-less Location per
 *     range, thread or "[truncated]" frame;
 *   - one Function per (name, file); system_name repeats the name, as the
 *     symbolizer hands out demangled names only;
 *   - one Sample per (stack, thread, range) with labels thread (name),
 *     thread_id (number) and range (the innermost range's name).
 * Not async-signal-safe.
 */
#ifndef SP_EXPORT_PPROF_H
#define SP_EXPORT_PPROF_H

#include <stdio.h>

#include "export/model.h"

/* 0, -ENOMEM, -EIO (zlib), or -errno of the first write error. */
int sp_pprof_write(const struct sp_model *m, FILE *out);

#endif
