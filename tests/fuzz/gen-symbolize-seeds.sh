#!/bin/bash
# gen-symbolize-seeds.sh - builds the seed ELF files of fuzz-symbolize from
# tests/fuzz/seeds/*.c: small (a few KB, no libc) but real compiler output,
# one per shape the symbolizer handles: DWARF 5 and 4, gcc and clang,
# compressed debug sections (SHF_COMPRESSED and GNU .zdebug), split DWARF
# without its .dwo, line tables only, symbols only, stripped (.eh_frame
# only), a shared object, a relocatable object, 32-bit, C++, and .eh_frame
# CIEs with personality and LSDA (-fexceptions).
#
#   tests/fuzz/gen-symbolize-seeds.sh OUTDIR
#
# Run by hand when a new shape is worth seeding; the output is committed
# under tests/fuzz/corpus/symbolize/ (docs/FUZZING.md). Missing tools only
# skip their seeds.
set -u
out=${1:?usage: $0 OUTDIR}
src=$(cd "$(dirname "$0")/seeds" && pwd)
mkdir -p "$out" && out=$(cd "$out" && pwd) || exit 1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# no libc, no start files: a few KB; gc-sections drops what _start misses
# the prefix maps keep build paths out of the committed files
small="-ffile-prefix-map=$src=/sp-seeds -ffile-prefix-map=$tmp=/sp-seeds -nostdlib -ffunction-sections -fdata-sections -Wl,--gc-sections -Wl,--build-id -fno-asynchronous-unwind-tables -funwind-tables"
made=0
mk() { # mk NAME COMMAND...: runs COMMAND (which writes $tmp/NAME), keeps it if it worked
	local name=$1
	shift
	if (cd "$src" && "$@") 2>"$tmp/err" && [ -s "$tmp/$name" ]; then
		cp "$tmp/$name" "$out/$name"
		made=$((made + 1))
	else
		echo "skipped $name: $(head -c 200 "$tmp/err")" >&2
	fi
}

mk inline-gcc-dw5 gcc -O2 -g -gdwarf-5 -static $small "$src/inline.c" -o "$tmp/inline-gcc-dw5"
mk inline-gcc-dw4 gcc -O2 -g -gdwarf-4 -static $small "$src/inline.c" -o "$tmp/inline-gcc-dw4"
mk inline-gcc-pie gcc -O2 -g -fPIE -pie $small "$src/inline.c" -o "$tmp/inline-gcc-pie"
mk inline-clang-dw5 clang -O2 -g -gdwarf-5 -static $small "$src/inline.c" -o "$tmp/inline-clang-dw5"
mk inline-clang-dw4 clang -O2 -g -gdwarf-4 -static $small "$src/inline.c" -o "$tmp/inline-clang-dw4"
mk inline-clang-lines clang -O2 -gline-tables-only -static $small "$src/inline.c" -o "$tmp/inline-clang-lines"
mk inline-clang-m32 clang -m32 -O2 -g -static $small "$src/inline.c" -o "$tmp/inline-clang-m32"
mk inline-gz gcc -O2 -g -gz=zlib -static $small -Wl,--compress-debug-sections=zlib "$src/inline.c" -o "$tmp/inline-gz"
mk inline-zdebug sh -c "objcopy --compress-debug-sections=zlib-gnu '$out/inline-gcc-dw4' '$tmp/inline-zdebug'"
mk inline-split sh -c "cd '$tmp' && gcc -O2 -g -gsplit-dwarf -static $small '$src/inline.c' -o inline-split"
mk inline-nodebug objcopy --strip-debug "$out/inline-gcc-dw5" "$tmp/inline-nodebug"
mk inline-stripped objcopy --strip-all "$out/inline-gcc-dw5" "$tmp/inline-stripped"
mk inline-debuglink objcopy --strip-debug --add-gnu-debuglink="$out/inline-gcc-dw5" \
	"$out/inline-gcc-dw5" "$tmp/inline-debuglink"
mk inline-rel.o gcc -O2 -g -c -ffunction-sections -ffile-prefix-map="$src"=/sp-seeds "$src/inline.c" -o "$tmp/inline-rel.o"
mk cxx-gcc g++ -O2 -g -static $small -fno-exceptions -fno-rtti "$src/cxx.cc" -o "$tmp/cxx-gcc"
mk cxx-clang clang++ -O2 -g -static $small -fno-exceptions -fno-rtti "$src/cxx.cc" -o "$tmp/cxx-clang"
mk eh-gcc gcc -O2 -g -static -fexceptions $small "$src/eh.c" -o "$tmp/eh-gcc"
mk eh-clang-m32 clang -m32 -O2 -g -static -fexceptions $small "$src/eh.c" -o "$tmp/eh-clang-m32"
mk lib-gcc.so gcc -O2 -g -shared -fPIC $small "$src/lib.c" -o "$tmp/lib-gcc.so"
mk lib-stripped.so objcopy --strip-all "$out/lib-gcc.so" "$tmp/lib-stripped.so"
# the debuglink names a file in the build tree: keep only its basename
if [ -f "$out/inline-debuglink" ]; then
	objcopy --remove-section=.gnu_debuglink "$out/inline-debuglink" "$tmp/dl" &&
		cp "$out/inline-gcc-dw5" "$tmp/inline-gcc-dw5.debug" &&
		(cd "$tmp" && objcopy --add-gnu-debuglink=inline-gcc-dw5.debug dl inline-debuglink) &&
		cp "$tmp/inline-debuglink" "$out/inline-debuglink"
fi
echo "$made seeds in $out"
ls -l "$out" | awk 'NR > 1 && $5 > 30000 { print "warning: " $9 " is " $5 " bytes" }'
