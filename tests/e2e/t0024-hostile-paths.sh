#!/bin/bash
# Paths that are not what they were (issue 13 items 6 and 8):
# - a module path recorded in a profile that is now a FIFO, a device or a
#   huge sparse file: no command hangs or stalls; each warns and goes on;
#   a FIFO given as the profile itself neither;
# - an ELF file cut to 1,000 bytes: a warning that it is damaged, where
#   its frames were "name+0x..." without a word;
# - STACKPROF_OUT=/dev/null profiles and keeps nothing, and creates no
#   /dev/null.<pid>; a FIFO there is refused and the program runs as it
#   would; `run -o /dev/null` says nothing was kept;
# - two profiles concatenated, or junk after one: read, but not as
#   complete, exit 1, and the message says what follows the profile;
# - two concurrent `run -o same.prof`: neither profile is lost, and the
#   second says where its own went;
# - a relative -o, the default name, and a relative STACKPROF_OUT are the
#   directory the run started in: a program that cds and then forks or
#   execs leaves every profile there, none where it went.
. "$(dirname "$0")/lib.sh"
LIB="$BIN/../../libstackprof.so"
[ -r "$LIB" ] || LIB="$BUILD/libstackprof.so"
# in_time CMD...: runs CMD with 30 s to finish; its status, 124 if it hung
in_time() { timeout -k 5 30 "$@"; }

# --- a module path that is not a binary any more
cp "$BIN/chain" prog
# --no-cache: these checks are of the module files themselves, with no
# copy of the build in the build-id cache to fall back on
"$SP" run --no-summary --no-cache -o prog.prof -- ./prog 1 >/dev/null
check "the profile of a copy was written" [ -s prog.prof ]
rm prog
mkfifo prog
for cmd in "info" "collapse" "table -n 2" "top" "flamegraph" "export --format speedscope"; do
	# shellcheck disable=SC2086
	in_time "$SP" $cmd prog.prof >out 2>err
	rc=$?
	check "FIFO at the module path: $cmd does not hang (exit $rc)" [ $rc -ne 124 ]
	[ "$cmd" = info ] && grep -q 'not a regular file (a FIFO)' out || grep -q 'not a regular file (a FIFO)' err
	check "FIFO at the module path: $cmd says so" [ $? -eq 0 ]
done
in_time "$SP" diff prog.prof prog.prof >/dev/null 2>&1
check "FIFO at the module path: diff does not hang" [ $? -ne 124 ]
rm prog
ln -s /dev/zero prog
in_time "$SP" collapse prog.prof >out 2>err
check "a device at the module path: collapse goes on" [ $? -eq 0 ]
check "and says it is a character device" grep -q 'not a regular file (a character device)' err
rm prog
cp "$BIN/chain" prog
truncate -s 100G prog
in_time "$SP" collapse prog.prof >out 2>err
check "a huge sparse file at the module path: collapse goes on" [ $? -eq 0 ]
check "and says it is too large to be a binary" grep -q 'prog: too large to be a binary' err

# a FIFO as the profile itself
mkfifo fifo.prof
in_time "$SP" info fifo.prof >out 2>err
rc=$?
check "info FIFO: does not hang, exits 1 (exit $rc)" [ $rc -eq 1 ]
check "info FIFO: not a regular file" grep -q 'fifo.prof: not a regular file' err

# --- an ELF file cut short
cp "$BIN/chain" cut
"$SP" run --no-summary --no-cache -o cut.prof -- ./cut 1 >/dev/null
truncate -s 1000 cut
"$SP" collapse --frame func cut.prof >cut.folded 2>cut.err
check "a binary cut to 1,000 bytes: a warning that it is damaged" \
	grep -q "cut: damaged: the file has 1000 bytes" cut.err
check "its frames fall back to name+0x..." grep -q 'cut+0x' cut.folded
"$SP" symbolize -e cut 0x1000 >/dev/null 2>sym.err
check "symbolize -e a damaged file: exit 1" [ $? -eq 1 ]
check "symbolize: says damaged" grep -q 'damaged' sym.err

# --- STACKPROF_OUT=/dev/null, and other files that are not files
before=$(ls /dev/null.* 2>/dev/null | wc -l)
LD_PRELOAD="$LIB" STACKPROF_OUT=/dev/null "$BIN/stress" exit 3 2>null.err
check "STACKPROF_OUT=/dev/null: the program keeps its status" [ $? -eq 3 ]
made=$(ls -d /dev/null.* 2>/dev/null)
check "STACKPROF_OUT=/dev/null: no /dev/null.<pid> in /dev" [ "$(ls /dev/null.* 2>/dev/null | wc -l)" -eq "$before" ]
[ "$before" -eq 0 ] && [ -n "$made" ] && rm -f $made
check "STACKPROF_OUT=/dev/null: nothing said" bash -c "! grep -q . null.err"
mkfifo out.fifo
in_time env LD_PRELOAD="$LIB" STACKPROF_OUT=out.fifo "$BIN/stress" exit 4 2>fifo.err
check "STACKPROF_OUT=FIFO: the program runs, keeps its status" [ $? -eq 4 ]
check "STACKPROF_OUT=FIFO: refused with a message" grep -q 'is not a regular file' fifo.err
check "STACKPROF_OUT=FIFO: nothing made beside it" bash -c "! ls out.fifo.* >/dev/null 2>&1"
"$SP" run -o /dev/null -- "$BIN/stress" exit 0 2>devnull.err
check "run -o /dev/null: exit 0" [ $? -eq 0 ]
check "run -o /dev/null: says nothing was kept" grep -q 'went to /dev/null' devnull.err

# --- more than a profile in one file
"$SP" run --no-summary -o one.prof -- "$BIN/stress" exit 0
cat one.prof one.prof >two.prof
{ cat one.prof; echo "junk after the trailer"; } >junk.prof
for f in two junk; do
	"$SP" info --no-symbols $f.prof >$f.info 2>$f.err
	check "$f.prof: info exits 1" [ $? -eq 1 ]
	check "$f.prof: not complete" bash -c "! grep -q '^status: *complete' $f.info"
	check "$f.prof: says bytes follow the profile" grep -q 'bytes follow the end of the profile' $f.err
	"$SP" collapse $f.prof >$f.folded 2>/dev/null
	check "$f.prof: collapse exits 1" [ $? -eq 1 ]
	check "$f.prof: everything before is kept" cmp -s $f.folded <("$SP" collapse one.prof 2>/dev/null)
done
check "two.prof: another profile follows" grep -q 'another profile (two files concatenated?)' two.err

# --- two runs with the same -o at once
# an earlier profile at the path: the first run claims it, the second
# writes beside it and says so
"$SP" run --no-summary -o r.prof -- "$BIN/stress" exit 0
"$SP" run -o r.prof -- "$BIN/stress" sleep >/dev/null 2>r1.err &
r1=$!
for _ in $(seq 100); do ls r.prof.* >/dev/null 2>&1 && break; sleep 0.05; done
"$SP" run -o r.prof -- "$BIN/stress" exit 0 >/dev/null 2>r2.err
pkill -TERM -P $r1 -f "stress sleep"
wait $r1
pids=$(for f in r.prof r.prof.*; do "$SP" info --no-symbols "$f" 2>/dev/null | awk '$1 == "pid:" { print $2 }'; done | sort -u | wc -l)
check "an earlier profile, two runs: both new profiles are kept" [ "$pids" -eq 2 ]
check "the second says its profile stays beside it" grep -q 'was being written or replaced by another process' r2.err
check "the two do not both claim r.prof" \
	[ "$(cat r1.err r2.err | grep -c "^stackprof: wrote $TMP/r.prof\$")" -le 1 ]
# no file at the path: the first run's program creates it and is still
# writing it when the second run looks
"$SP" run -o c.prof -- "$BIN/stress" sleep >/dev/null 2>c1.err &
c1=$!
for _ in $(seq 100); do [ -s c.prof ] && break; sleep 0.05; done
"$SP" run -o c.prof -- "$BIN/stress" exit 0 >/dev/null 2>c2.err
pkill -TERM -P $c1 -f "stress sleep"
wait $c1
pids=$(for f in c.prof c.prof.*; do "$SP" info --no-symbols "$f" 2>/dev/null | awk '$1 == "pid:" { print $2 }'; done | sort -u | wc -l)
check "a profile still being written, two runs: both are kept" [ "$pids" -eq 2 ]
check "the second says where its own went" grep -q 'was being written or replaced by another process' c2.err
# --- relative output paths and a program that changes directory
mkdir -p rel/sub
(
	cd rel || exit 1
	# the child and the exec'ed image work, so that run keeps their
	# profiles (it removes other processes' empty ones, and the exec'ed
	# image's takes the place of the shell's, which took no sample)
	"$SP" run --no-summary -o r.prof -- sh -c 'cd sub && "$0" 0.2 && exec "$0" 0.2' \
		"$BIN/chain" >/dev/null
	"$SP" run --no-summary -- sh -c 'cd sub && exec "$0" 0.2' "$BIN/chain" >/dev/null
	LD_PRELOAD="$LIB" STACKPROF_OUT=p.prof sh -c 'cd sub && exec /bin/true'
)
ls -R rel
cmd_of() { "$SP" info --no-symbols "$1" 2>/dev/null | awk '$1 == "command:" { print $2 }'; }
check "run -o r.prof: its child's profile is beside it, and the exec'ed image's is r.prof" \
	[ -s rel/r.prof -a "$(ls rel/r.prof.* 2>/dev/null | wc -l)" -eq 1 -a "$(cmd_of rel/r.prof)" = "$BIN/chain" ]
check "run without -o: the exec'ed image's profile in the directory it started in" \
	[ "$(ls rel/stackprof.*.prof* 2>/dev/null | wc -l)" -eq 1 -a \
	"$(cmd_of "$(ls rel/stackprof.*.prof* 2>/dev/null | head -1)")" = "$BIN/chain" ]
check "STACKPROF_OUT=p.prof: both in the starting directory" \
	[ -s rel/p.prof -a "$(ls rel/p.prof.* 2>/dev/null | wc -l)" -eq 1 ]
check "nothing where the program went" [ -z "$(ls rel/sub)" ]
finish
