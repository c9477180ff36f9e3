#!/bin/bash
# gen-cfi-seeds.sh - builds the seeds of fuzz-cfi from tests/fuzz/seeds/cfi.c
# and cfi.S: each is a shared object's .eh_frame_hdr and .eh_frame as they
# lie in its read-only segment (objcopy -O binary keeps the gap between
# them), behind the 2-byte header offset fuzz-cfi.c reads (0: the header
# comes first). Compiled code from gcc and clang at -O0 and -O2, with and
# without frame pointers, and hand-written CFI for what compilers rarely
# emit (a signal trampoline, a CFA expression, an undefined return address,
# a register saved in a register, long advances and a 4 MiB frame).
#
#   tests/fuzz/gen-cfi-seeds.sh OUTDIR
#
# Run by hand when a new shape is worth seeding; the output is committed
# under tests/fuzz/corpus/cfi/ (docs/FUZZING.md). Missing compilers only
# skip their seeds.
set -u
out=${1:?usage: $0 OUTDIR}
src=$(cd "$(dirname "$0")/seeds" && pwd)
mkdir -p "$out" && out=$(cd "$out" && pwd) || exit 1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

flags="-shared -fPIC -nostdlib -fasynchronous-unwind-tables -Wl,--build-id=none -Wl,--hash-style=gnu"
made=0
mk() { # mk NAME COMPILER-AND-FLAGS... SOURCE: builds NAME.so, keeps its unwind sections
	local name=$1
	shift
	if "$@" $flags -o "$tmp/$name.so" 2>"$tmp/err" &&
		objcopy -O binary -j .eh_frame_hdr -j .eh_frame "$tmp/$name.so" "$tmp/$name.bin" 2>>"$tmp/err" &&
		[ -s "$tmp/$name.bin" ]; then
		{ printf '\0\0'; cat "$tmp/$name.bin"; } >"$out/$name"
		made=$((made + 1))
	else
		echo "skipped $name: $(head -c 200 "$tmp/err")" >&2
	fi
}

mk gcc-O2 gcc -O2 "$src/cfi.c"
mk gcc-O2-fp gcc -O2 -fno-omit-frame-pointer "$src/cfi.c"
mk gcc-O0 gcc -O0 "$src/cfi.c"
mk clang-O2 clang -O2 "$src/cfi.c"
mk clang-O2-fp clang -O2 -fno-omit-frame-pointer "$src/cfi.c"
mk asm gcc "$src/cfi.S"
echo "$made seeds in $out"
