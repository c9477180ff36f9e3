#!/bin/bash
# A profile stays readable after its program is rebuilt (issue 31 item 5):
# `stackprof run` keeps a copy of the program's own binaries in the build-id
# cache, and the reading commands take it when the file on disk is another
# build. Also: system libraries (libc) are not copied; without a copy the
# warning says how to keep one; the cache is bounded (the oldest copy goes);
# `stackprof cache add/list/clear`; --no-cache.
. "$(dirname "$0")/lib.sh"
command -v cc >/dev/null || skip "no C compiler"

export STACKPROF_CACHE_DIR="$TMP/cache"
unset STACKPROF_CACHE_MAX

# spin_original at a known line; the rebuild renames it and moves it
cat >hot.c <<'C'
#include <stdio.h>
#include <time.h>

__attribute__((noinline)) static double spin_original(double x)
{
	for (int i = 0; i < 1000; i++)
		x = x * 1.0000001 + 0.5; /* line 7 */
	return x;
}

int main(void)
{
	double x = 0;
	clock_t end = clock() + CLOCKS_PER_SEC / 2;
	while (clock() < end)
		x = spin_original(x);
	printf("%g\n", x);
	return 0;
}
#ifdef SEED
int seed = SEED; /* another build-id for each SEED */
#endif
C
sed -e 's/spin_original/spin_renamed/g' \
	-e 's|^#include <time.h>$|#include <time.h>\nint table[4096] = {1};\nvoid unused(void) { puts("moved"); }|' \
	hot.c >hot2.c
cc -g -O1 -o hot hot.c || skip "cc cannot build a program"
"$SP" run --no-summary -o hot.prof -- ./hot >/dev/null 2>run.err
check "the run wrote a profile" [ -s hot.prof ]
check "... quietly" [ ! -s run.err ]

# the program's own binary is in the cache, libc is not
"$SP" cache list >list.out 2>&1
check "cache list: one copy" [ "$(grep -c '/elf$' list.out)" -eq 1 ]
libc=$("$SP" info -m hot.prof 2>/dev/null | grep -o '/[^ ]*libc\.so[^ ]*' | head -1)
check "the profile maps libc ($libc)" [ -n "$libc" ]
libc_id=$(readelf -n "$libc" 2>/dev/null | awk '/Build ID/ { print $3 }')
check "libc was not copied (build-id $libc_id)" bash -c "[ -n '$libc_id' ] && \
	[ ! -e '$STACKPROF_CACHE_DIR/buildid/${libc_id:0:2}/${libc_id:2}' ] && \
	[ \$(find '$STACKPROF_CACHE_DIR' -name elf | wc -l) -eq 1 ]"
cmp -s hot "$(awk '/\/elf$/ { print $3 }' list.out)"
check "the copy is the binary" [ $? -eq 0 ]

# rebuilt from other code: another build-id, other addresses
cc -g -O1 -o hot hot2.c
"$SP" top hot.prof >top.out 2>top.err
check "after the rebuild, top names the original function" grep -q 'spin_original' top.out
check "... and no module+0x frame of hot" bash -c "! grep -q 'hot+0x' top.out"
check "... with no 'different build' warning" bash -c "! grep -q 'different build' top.err"
"$SP" collapse hot.prof >hot.folded 2>collapse.err
check "collapse has spin_original at its line (hot.c:7)" \
	grep -q 'spin_original_\[\?\(\[[^]]*\]\)\?(.*hot\.c:7)' hot.folded
check "... and main" grep -q ';main_(.*hot\.c:1[0-9])' hot.folded
"$SP" info hot.prof >info.out 2>&1
check "info says the copy was read" grep -q 'rebuilt since the run; read from the copy' info.out

# without the copy: the old warning, and how to keep one next time
STACKPROF_CACHE_DIR="$TMP/empty" "$SP" top hot.prof >nocopy.out 2>nocopy.err
check "without the copy: 'a different build, not used'" grep -q 'a different build, not used' nocopy.err
check "... that says how to keep one" grep -q 'stackprof cache add' nocopy.err
check "... and hot+0x frames" grep -q 'hot+0x' nocopy.out

# --no-cache keeps none; `cache add` by hand, from a binary
rm -rf "$TMP/c2"
STACKPROF_CACHE_DIR="$TMP/c2" "$SP" run --no-cache --no-summary -o nc.prof -- ./hot >/dev/null 2>&1
check "--no-cache: no copy" [ ! -e "$TMP/c2/buildid" ]
STACKPROF_CACHE_DIR="$TMP/c2" "$SP" cache add nc.prof >add.out 2>&1
check "cache add PROFILE copies its own binary" bash -c "grep -q '^added .*/hot\$' add.out && \
	[ \$(find '$TMP/c2' -name elf | wc -l) -eq 1 ]"
STACKPROF_CACHE_DIR="$TMP/c2" "$SP" cache add nc.prof >add2.out 2>&1
check "... once" grep -q '^kept  .*/hot$' add2.out

id() { readelf -n "$1" | awk '/Build ID/ { print $3 }'; }

# bounded: with room for four binaries (a quarter of the bound each, at
# most), a fifth evicts the oldest
for i in 1 2 3 4 5; do
	cc -g -O1 -DSEED=$i -o b$i hot.c
done
size=$(stat -c %s b5)
rm -rf "$TMP/c3"
export STACKPROF_CACHE_MAX=$((size * 9 / 2))
for i in 1 2 3 4; do
	STACKPROF_CACHE_DIR="$TMP/c3" "$SP" cache add ./b$i >/dev/null 2>&1
	# mtimes minutes apart, oldest first: the order does not rest on the clock's grain
	b=$(id b$i)
	touch -d "$((10 - i)) minutes ago" "$TMP/c3/buildid/${b:0:2}/${b:2}/elf"
done
STACKPROF_CACHE_DIR="$TMP/c3" "$SP" cache list >four.out 2>&1
check "four copies fit" [ "$(grep -c '/elf$' four.out)" -eq 4 ]
STACKPROF_CACHE_DIR="$TMP/c3" "$SP" cache add ./b5 >/dev/null 2>&1
STACKPROF_CACHE_DIR="$TMP/c3" "$SP" cache list >bound.out 2>&1
check "bounded: the fifth copy is added" grep -q "^$(id b5) " bound.out
check "... the oldest one removed" bash -c "! grep -q '^$(id b1) ' bound.out"
check "... the others kept" bash -c "grep -q '^$(id b2) ' bound.out && grep -q '^$(id b4) ' bound.out"
cp b1 big && head -c $((size * 2)) /dev/zero >>big
STACKPROF_CACHE_DIR="$TMP/c3" "$SP" cache add ./big >/dev/null 2>big.err
check "a binary over a quarter of the bound is refused, exit 1, said" \
	bash -c "[ $? -eq 1 ] && grep -q 'quarter' big.err"
unset STACKPROF_CACHE_MAX

# clear
"$SP" cache clear >clear.out 2>&1
check "cache clear: exit 0, says how many" bash -c "[ $? -eq 0 ] && grep -q '^removed 1 copy' clear.out"
check "... and the cache is empty" [ -z "$(find "$STACKPROF_CACHE_DIR" -name elf)" ]
"$SP" cache frob >/dev/null 2>&1
check "cache frob: exit 2" [ $? -eq 2 ]
finish
