#!/bin/bash
# agree.sh STACKPROF [ELF|libc] - agreement with eu-addr2line: 2,000 random
# .text addresses (fixed seed) of python3.11d (or ELF; "libc" is the C
# library stackprof itself runs with) through `stackprof symbolize` and
# `eu-addr2line -f -i -C`; at least 99% of the output lines must be the
# same (common lines over the longer output). Differences are printed.
# Exit 0 pass, 1 fail, 77 skip. SP_AGREE_N changes the count, SP_AGREE_SEED the seed.
set -u
sp=${1:?usage: agree.sh STACKPROF [ELF]}
elf=${2:-/usr/bin/python3.11d}
if [ "$elf" = libc ]; then
	elf=$(ldd "$sp" 2>/dev/null | awk '$1 ~ /^libc\.so/ { print $3 }')
	[ -n "$elf" ] || { echo "skip: cannot find the C library of $sp"; exit 77; }
	elf=$(readlink -f "$elf")
fi
n=${SP_AGREE_N:-2000}
seed=${SP_AGREE_SEED:-20240601}

[ -r "$elf" ] || { echo "skip: $elf is not installed (apt-get install python3.11-dbg)"; exit 77; }
command -v eu-addr2line >/dev/null || { echo "skip: no eu-addr2line (apt-get install elfutils)"; exit 77; }
command -v python3 >/dev/null || { echo "skip: no python3 to draw addresses"; exit 77; }

tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT

# .text bounds from the section headers: "[Nr] Name Type Address Off Size ..."
read -r start size < <(LC_ALL=C readelf -SW "$elf" |
	awk '{ for (i = 1; i < NF; i++) if ($i == ".text") { print $(i + 2), $(i + 4); exit } }')
[ -n "${start:-}" ] || { echo "FAIL: no .text in $elf"; exit 1; }

python3 - "$start" "$size" "$n" "$seed" > "$tmp/addrs" <<'PY'
import random, sys
start, size, n, seed = int(sys.argv[1], 16), int(sys.argv[2], 16), int(sys.argv[3]), int(sys.argv[4])
r = random.Random(seed)
print("\n".join(hex(start + r.randrange(size)) for _ in range(n)))
PY

"$sp" symbolize -e "$elf" < "$tmp/addrs" > "$tmp/ours" 2> "$tmp/ours.err" ||
	{ echo "FAIL: stackprof symbolize exited $?"; cat "$tmp/ours.err"; exit 1; }
eu-addr2line -f -i -C -e "$elf" < "$tmp/addrs" > "$tmp/eu" 2>/dev/null

ours=$(wc -l < "$tmp/ours")
theirs=$(wc -l < "$tmp/eu")
common=$(diff --unchanged-line-format='.' --old-line-format='' --new-line-format='' \
	"$tmp/ours" "$tmp/eu" | wc -c)
longest=$(( ours > theirs ? ours : theirs ))
pct=$(awk -v c="$common" -v l="$longest" 'BEGIN { printf "%.2f", l ? 100 * c / l : 100 }')
echo "agree-eu: $n addresses of $elf: $common of $longest lines identical ($pct%)"
if [ "$common" -ne "$longest" ]; then
	echo "differences (< stackprof, > eu-addr2line), first 40 lines:"
	diff "$tmp/ours" "$tmp/eu" | head -40
fi
awk -v p="$pct" 'BEGIN { exit !(p >= 99) }' || { echo "FAIL: below 99%"; exit 1; }
exit 0
