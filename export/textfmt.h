/*
 * textfmt.h - numbers as the reference tools print them, and durations as
 * users type them.
 *
 * Times follow torch.autograd.profiler_util._format_time so that our tables
 * read like key_averages().table(): microseconds below 1 ms ("82.000us"),
 * milliseconds below 1 s ("218.803ms"), seconds above ("1.250s"), always three
 * decimals. Shares follow _format_time_share: "22.61%", "NaN" for a zero total.
 */
#ifndef SP_EXPORT_TEXTFMT_H
#define SP_EXPORT_TEXTFMT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define SP_TEXTFMT_LEN 32 /* enough for any output of the formatters below */

/* Formats a time given in nanoseconds; returns out. */
char *sp_textfmt_time(char *out, size_t len, uint64_t ns);

/*
 * Formats a weight in unit (an event kind's, struct sp_prof_event): a time
 * for "ns" as sp_textfmt_time, else the number and the unit ("4096 bytes",
 * "12 count"); returns out.
 */
char *sp_textfmt_weight(char *out, size_t len, uint64_t v, const char *unit);

/* Same for a signed difference: "+1.500ms", "-82.000us", "0.000us". */
char *sp_textfmt_delta(char *out, size_t len, int64_t ns);

/* part/total as a percentage with two decimals; "NaN" when total is 0. */
char *sp_textfmt_share(char *out, size_t len, double part, double total);

/*
 * Parses a duration: a number with an optional unit ns, us, ms or s (no unit
 * means seconds, as MegEngine's profile_analyze --min-time takes them).
 * Stores nanoseconds; returns 0 or -EINVAL.
 */
int sp_textfmt_parse_duration(const char *s, uint64_t *ns);

/*
 * The first write error on f as -errno (-EPIPE after `| head`), or 0. Output
 * loops call it per line so that they stop writing at the first failure.
 */
int sp_textfmt_out_error(FILE *f);

#endif
