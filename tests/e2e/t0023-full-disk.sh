#!/bin/bash
# A full disk (issue 13 item 4): `run -o keep.prof` on a nearly full
# filesystem keeps the earlier profile when the new one fails to write,
# says "disk full" (the error the library met, passed to run through the
# manifest), and exits non-zero; a new path that cannot be written is the
# same error. Needs root and a 64 KiB tmpfs.
. "$(dirname "$0")/lib.sh"
[ "$(id -u)" = 0 ] || skip "mounting a small tmpfs needs root"
mkdir small
mount -t tmpfs -o size=64k tmpfs small 2>/dev/null || skip "cannot mount a tmpfs here"
trap 'umount "$TMP/small" 2>/dev/null; rm -rf "$TMP"' EXIT
pid_of() { "$SP" info --no-symbols "$1" 2>/dev/null | awk '$1 == "pid:" { print $2 }'; }

# a program that makes a profile of some size: 1 s of CPU at 4 kHz
# through recursion of several depths
"$SP" run --no-summary -o small/keep.prof -- "$BIN/stress" exit 0
first=$(pid_of small/keep.prof)
check "an earlier profile fits" [ -n "$first" ]
cp small/keep.prof keep.copy

# fill the filesystem up to its last 4 KiB
avail=$(df -k --output=avail small | tail -1)
dd if=/dev/zero of=small/filler bs=1k count=$((avail - 4)) 2>/dev/null
"$SP" run -F 4000 -o small/keep.prof -- "$BIN/recurse" 150 1 >/dev/null 2>full.err
rc=$?
check "run exits non-zero when the new profile failed to write (exit $rc)" [ $rc -ne 0 ]
check "and says disk full" grep -q 'disk full' full.err
check "naming the file it was writing" grep -q "writing the profile $TMP/small/keep.prof\.[0-9]* failed" full.err
check "the earlier profile is still there, untouched" cmp -s small/keep.prof keep.copy
check "and says so" grep -q 'keep.prof still holds the earlier profile' full.err
check "it never claims to have written it" bash -c "! grep -q '^stackprof: wrote' full.err"
check "the earlier profile reads as complete" grep -q '^status: *complete$' <("$SP" info --no-symbols small/keep.prof)

# a new path on the full filesystem: the same error
rm -f small/keep.prof.*
"$SP" run -F 4000 -o small/new.prof -- "$BIN/recurse" 150 1 >/dev/null 2>new.err
check "a new profile that failed: exit non-zero" [ $? -ne 0 ]
check "and disk full" grep -q 'disk full' new.err

# the program's own failure status wins over ours
rm -f small/new.prof*
"$SP" run --no-summary -F 4000 -o small/new.prof -- sh -c "$BIN/recurse 150 1; exit 7" >/dev/null 2>st.err
check "the program's own status is kept (7)" [ $? -eq 7 ]
check "the error is said even with --no-summary" grep -q 'disk full' st.err
finish
