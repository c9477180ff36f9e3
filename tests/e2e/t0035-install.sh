#!/bin/bash
# `cmake --install` (issue 31 item 6): everything a user needs lands under a
# prefix, and the installed stackprof works from there with the build
# directory out of reach:
# - bin/stackprof runs a program and finds its sampler in lib/stackprof/;
# - a Python program run by it imports the installed package, not the checkout's;
# - stackprof(1) renders, with a section for every command;
# - a program built against include/stackprof.h and lib/libstackprof-api.so
#   runs without the sampler, and is profiled with it.
. "$(dirname "$0")/lib.sh"

PREFIX="$TMP/prefix"
cmake --install "$BUILD" --prefix "$PREFIX" >install.log 2>&1
check "cmake --install into a temporary prefix succeeds" [ $? -eq 0 ]
for f in bin/stackprof lib/stackprof/libstackprof.so lib/libstackprof-api.so include/stackprof.h \
	share/man/man1/stackprof.1 lib/stackprof/python/stackprof/__init__.py \
	lib/stackprof/python/stackprof/torch.py; do
	check "installs $f" [ -f "$PREFIX/$f" ]
done

# the installed tree only: the build directory's library and the checkout's
# package must not be what runs (STACKPROF_LIB unset, another working dir)
unset STACKPROF_LIB
mkdir elsewhere && cd elsewhere || exit 1
PATH="$PREFIX/bin:$PATH" stackprof run -o chain.prof -- "$BIN/chain" >run.out 2>run.err
check "the installed stackprof runs a program" [ $? -eq 0 ]
check "... and profiles it (a summary with samples)" grep -q 'samples' run.err
PATH="$PREFIX/bin:$PATH" stackprof top chain.prof --row-limit 5 >top.out 2>&1
check "the installed stackprof reads it: chain's leaf_spin on top" \
	has top.out '/ leaf_spin$/' '$4 + 0 > 50'
PATH="$PREFIX/bin:$PATH" stackprof run --no-summary -o maps.prof -- cat /proc/self/maps >maps.out 2>&1
check "... and preloads the installed sampler, not the build directory's" \
	grep -q " $(realpath "$PREFIX")/lib/stackprof/libstackprof.so$" maps.out

need_python
PATH="$PREFIX/bin:$PATH" stackprof run --no-summary -o py.prof -- "$PY" -c \
	'import stackprof, os; print(os.path.realpath(stackprof.__file__)); print(stackprof.active())' \
	>py.out 2>py.err
check "a Python program imports the installed package" \
	grep -qx "$(realpath "$PREFIX")/lib/stackprof/python/stackprof/__init__.py" py.out
check "... which finds the sampler preloaded" grep -qx True py.out

MANPAGE="$PREFIX/share/man/man1/stackprof.1"
if command -v groff >/dev/null; then
	# without the terminal's bold and underline overstrikes
	groff -man -Tutf8 "$MANPAGE" 2>man.err | sed 's/.\x08//g' >man.txt
	check "stackprof(1) renders without warnings" [ -s man.txt ] && [ ! -s man.err ]
	for c in run info collapse table top diff flamegraph export symbolize cache; do
		C=$(printf '%s' "$c" | tr a-z A-Z)
		check "stackprof(1) has the section for '$c'" grep -q "STACKPROF $C" man.txt
	done
	check "stackprof(1) documents the STACKPROF_* variables" grep -q 'STACKPROF_OUT' man.txt
else
	say "groff is not installed: stackprof(1) not rendered"
fi

cat >api.c <<'C'
#include <stackprof.h>
#include <stdio.h>
int main(void)
{
	volatile double x = 0;
	stackprof_range_push("installed");
	for (long i = 0; i < 60000000; i++)
		x += i * 0.5;
	stackprof_range_pop();
	printf("%d\n", x > 0);
	return 0;
}
C
cc -O1 -I"$PREFIX/include" api.c -L"$PREFIX/lib" -lstackprof-api -Wl,-rpath,"$PREFIX/lib" -o api 2>cc.err
check "a program builds against the installed header and API library" [ $? -eq 0 ] || cat cc.err
check "... and runs without the sampler" [ "$(./api)" = 1 ]
PATH="$PREFIX/bin:$PATH" stackprof run --no-summary -o api.prof -- ./api >/dev/null 2>&1
check "... and its range is in the profile under the installed stackprof" \
	grep -q 'installed' <(PATH="$PREFIX/bin:$PATH" stackprof collapse api.prof)
finish
