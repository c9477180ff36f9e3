#!/bin/bash
# Offline use: a profile copied to another directory still finds its
# binaries by their recorded paths; a binary whose build-id no longer matches
# the one recorded is read from the run's copy in the build-id cache, and
# without one, reported and not used (frames fall back to module+offset
# instead of wrong names); the vDSO, in no file, is named
# from the image the profile carries.
. "$(dirname "$0")/lib.sh"
SRC="$SP_SOURCE_DIR/workloads/programs/chain.c"
command -v cc >/dev/null || skip "no C compiler"

cc -g -O1 -fno-optimize-sibling-calls -Wl,--build-id=sha1 -o chain "$SRC"
"$SP" run --no-summary -o c.prof -- ./chain 0.5 >/dev/null
mkdir elsewhere && cp c.prof elsewhere/
(cd elsewhere && "$SP" collapse --frame func c.prof >../copied.folded 2>../copied.err)
check "a copied profile still symbolizes" grep -qE ';main;chain_a;chain_b;chain_c;leaf_spin ' copied.folded
check "without warnings" [ ! -s copied.err ]

# the binary changes after the run: another build at the same path. The
# run kept a copy in the build-id cache (t0037); without it, the stale
# binary is refused
cc -g -O1 -fno-optimize-sibling-calls -DDIFFERENT_BUILD -Wl,--build-id=0x0123456789abcdef -o chain "$SRC"
"$SP" collapse --frame func c.prof >cached.folded 2>cached.err
check "with the run's copy in the cache, the names are right" \
	grep -qE ';main;chain_a;chain_b;chain_c;leaf_spin ' cached.folded
export STACKPROF_CACHE_DIR="$TMP/no-cache"
"$SP" collapse --frame func c.prof >stale.folded 2>stale.err
cat stale.err
check "the mismatch is reported" grep -q 'build-id .* not used' stale.err
check "the stale binary's names are not used" bash -c "! grep -q 'chain_a' stale.folded"
check "its frames fall back to module+offset" grep -qE ';chain\+0x[0-9a-f]+;' stale.folded

# the binary is gone
rm chain
"$SP" collapse --frame func c.prof >gone.folded 2>gone.err
check "a missing binary is reported" grep -q 'cannot open' gone.err
check "libc frames still resolve" grep -q '__libc_start' gone.folded

# The vDSO is in no file: the profile carries its image, section headers
# included, so its functions are named offline (only its loaded segment
# was kept once, and every vDSO frame read [vdso]+0x...).
cat >clock.c <<'EOF2'
#include <time.h>
int main(void)
{
	struct timespec t0, t;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do
		clock_gettime(CLOCK_MONOTONIC, &t);
	while ((t.tv_sec - t0.tv_sec) * 1000000000L + (t.tv_nsec - t0.tv_nsec) < 400000000L);
	return 0;
}
EOF2
cc -O1 -o clock clock.c
"$SP" run -F 1000 -o v.prof -- ./clock 2>v.sum
check "the run's summary names it, in the vDSO's own brackets" \
	grep -Eq '  (__vdso_)?clock_gettime \[vdso\]$' v.sum
"$SP" collapse --frame func --metric samples v.prof >v.folded 2>v.err
n=$(awk '{ n += $NF } END { print n + 0 }' v.folded)
named=$(awk '/;(__vdso_)?clock_gettime / { n += $NF } END { print n + 0 }' v.folded)
anon=$(awk '/\[vdso\]\+0x/ { n += $NF } END { print n + 0 }' v.folded)
say "vDSO: $named of $n samples in a named clock_gettime, $anon at [vdso]+offset"
check "vDSO frames are named from the profile's copy of its image" [ "$named" -gt 0 ]
# An offset left unnamed must be one no symbol of the vDSO covers: the
# clock's reader is a static function of its own on some hosts (a KVM
# guest's pvclock), and then only .eh_frame bounds it. This machine's vDSO,
# read from a process's memory, says which offsets its symbols cover.
need_python
"$PY" - <<'EOF2'
for line in open("/proc/self/maps"):
    if line.rstrip().endswith("[vdso]"):
        lo, hi = (int(x, 16) for x in line.split()[0].split("-"))
        with open("/proc/self/mem", "rb") as mem:
            mem.seek(lo)
            open("vdso.so", "wb").write(mem.read(hi - lo))
EOF2
readelf -sW vdso.so | awk '$4 == "FUNC" { print $2, $3 }' | while read -r value size; do
	echo "$((0x$value)) $size"
done >vdso.ranges
check "the vDSO's function symbols were read" [ -s vdso.ranges ]
covered=$(grep -oE '\[vdso\]\+0x[0-9a-f]+' v.folded | sort -u | sed 's/.*+//' | while read -r off; do
	awk -v o="$((off))" '$1 <= o && o < $1 + $2 { print; exit }' vdso.ranges | grep -q . && echo "$off"
done)
check "no vDSO offset that a symbol covers is left unnamed" [ -z "$covered" ] || say "unnamed: $covered"
finish
