/*
 * json.h - the little JSON the exporters need: escaped strings and numbers.
 *
 * Output is written straight to a FILE as it is produced, so a 100k-sample
 * trace never has to sit in memory as a document. Not async-signal-safe.
 */
#ifndef SP_EXPORT_JSON_H
#define SP_EXPORT_JSON_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/*
 * Writes s as a quoted JSON string. Control characters become \uXXXX, and
 * bytes that are not valid UTF-8 become U+FFFD, because JSON readers
 * (JSON.parse, Perfetto) reject or mangle them and C++ symbols from odd
 * binaries are not guaranteed to be UTF-8. NULL writes "".
 */
void sp_json_str(FILE *f, const char *s);

/* Length of the valid UTF-8 sequence starting at s (1 for ASCII), 0 if invalid. */
size_t sp_json_utf8_len(const unsigned char *s);

/* Writes ns as microseconds with three decimals (Trace Event "ts"/"dur"). */
void sp_json_us(FILE *f, uint64_t ns);

#endif
