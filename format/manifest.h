/*
 * manifest.h - the text of STACKPROF_MANIFEST, the file through which every
 * profiled process tells `stackprof run` which profile it writes.
 *
 * One line per fact, appended with one O_APPEND write each: the profile's
 * absolute path when a process starts writing it, "!error ENAME PATH" when
 * writing it failed. A path may hold any byte but NUL, a newline included
 * (a directory's name): each path is written escaped, so that a line is
 * always one whole fact, and the reader undoes it.
 *
 * Also the rule both sides apply to a profile path the user names (-o,
 * STACKPROF_OUT): no control characters.
 */
#ifndef SP_FORMAT_MANIFEST_H
#define SP_FORMAT_MANIFEST_H

#include <stdbool.h>
#include <stddef.h>

/*
 * Writes path into out, NUL-terminated, with '\' as "\\", a newline as
 * "\n" and every other control byte as "\xHH". Returns the length, or -1
 * (out holds "") if it does not fit in cap. Not signal-safe.
 */
int sp_manifest_encode(const char *path, char *out, size_t cap);

/* Undoes sp_manifest_encode in place. */
void sp_manifest_decode(char *s);

/* Whether s holds a control character (bytes 1 to 31, and 127): such a
 * path is refused where the user names it, because every message that
 * names it would be split or garbled. */
bool sp_has_control(const char *s);

#endif
