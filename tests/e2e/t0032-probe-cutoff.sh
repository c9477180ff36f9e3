#!/bin/bash
# Profiles that end at their last flush (issue 30 point 14, issue 31 point 3):
# processes that die without any exit path a preloaded library can see.
# - a Python Pool with the spawn and the forkserver start methods, whose
#   workers burn CPU until pool.terminate() SIGTERMs them (what `with Pool()`
#   does), on Debian's python3 and one pyenv version;
# - a C program killed by `kill -TERM` from outside, mid-work;
# - a C program that ends with a raw exit_group system call (as Go programs
#   with cgo do): no destructor, no _exit.
# Each runs as alone (output, files, exit status: 143 for SIGTERM). Its
# profile holds everything up to its last flush, and every reading command
# (collapse, top, info) reads it with exit 0, samples of the work, and ONE
# short note on stderr saying the last moments are missing; info's status
# says "cut off at its last flush". A damaged profile still exits 1
# (export/errors, unit/format).
. "$(dirname "$0")/lib.sh"
PC=$BIN/probe_cutoff
POOL=$SP_SOURCE_DIR/workloads/python/probe_pool.py

# same_as_alone TAG ARGS...: status and output under stackprof are those alone
same_as_alone() {
	local tag=$1
	shift
	timeout 120 "$@" >"$tag.plain" 2>"$tag.plain.err"
	local want=$?
	timeout 120 "$SP" run --no-summary -o "$tag.prof" -- "$@" >"$tag.txt" 2>"$tag.err"
	local got=$?
	[ "$want" -eq "$got" ] && cmp -s "$tag.plain" "$tag.txt" ||
		{ say "status $want alone, $got profiled"; diff "$tag.plain" "$tag.txt" | head; return 1; }
}

NOTE='^stackprof: note: .* ends at its last flush \(the process was killed or ended without finishing the profile\): [0-9]+ samples? read, the last moments are missing$'

# one_note FILE: stderr FILE says the profile was cut off in one line, and
# nothing more about it
one_note() {
	[ "$(grep -cE "$NOTE" "$1")" -eq 1 ] && ! grep -qiE 'truncated|partial|exit status 1' "$1" ||
		{ say "stderr:"; cat "$1"; return 1; }
}

# cut_readable TAG PROFILE FUNCTION: PROFILE ends at its last flush; every
# reading command takes it with exit 0 and the note; FUNCTION has samples
cut_readable() {
	local tag=$1 prof=$2 fn=$3 cmd rc f
	f=${tag//[^A-Za-z0-9.-]/_}
	for cmd in collapse top info; do
		"$SP" $cmd "$prof" >"$f.$cmd" 2>"$f.$cmd.err"
		rc=$?
		check "$tag: $cmd reads it, exit 0" [ $rc -eq 0 ]
		check "$tag: $cmd says once, in one line, that it ends at its last flush" \
			one_note "$f.$cmd.err"
	done
	check "$tag: info: status: cut off at its last flush" \
		grep -qE '^status: *cut off at its last flush' "$f.info"
	check "$tag: info: samples read" has "$f.info" '/^samples:/' '$2 > 5'
	local n
	n=$(awk -v fn="$fn" '$0 ~ ("(^|;)" fn "_\\(") { s += $NF } END { print s + 0 }' "$f.collapse")
	say "$tag: $n us of $fn in collapse"
	check "$tag: collapse has the work of $fn (>= 100 ms)" [ "$n" -ge 100000 ]
}

# --- a C program killed by SIGTERM from outside, mid-work
# term_run TAG [stackprof run ...]: starts the program, SIGTERMs it (not
# run) once it has burned 0.3 s; prints the status the shell saw
term_run() {
	local tag=$1 pid p st
	shift
	rm -f "$tag.ready"
	"$@" "$PC" term 20 "$tag.ready" >"$tag.out" 2>"$tag.out.err" &
	p=$!
	for _ in $(seq 600); do [ -s "$tag.ready" ] && break; sleep 0.05; done
	pid=$(cat "$tag.ready" 2>/dev/null)
	[ -n "$pid" ] && sleep 0.3 && kill -TERM "$pid"
	wait $p
	st=$?
	echo $st
}
st_alone=$(term_run term-alone timeout 60)
st_prof=$(term_run term timeout 60 "$SP" run --no-summary -o term.prof --)
say "SIGTERM from outside: status $st_alone alone, $st_prof profiled"
check "SIGTERM from outside: 143 alone" [ "$st_alone" = 143 ]
check "SIGTERM from outside: the same status profiled" [ "$st_alone" = "$st_prof" ]
check "SIGTERM from outside: the same output" cmp -s term-alone.out term.out
cut_readable "SIGTERM" term.prof spin

# --- a raw exit_group
same_as_alone exitgroup "$PC" exitgroup 0.5 4
check "exit_group: runs as alone (status 4, its output)" [ $? -eq 0 ]
cut_readable "exit_group" exitgroup.prof spin

# --- Pool.terminate() with spawn and forkserver workers
find_pythons
pys=()
[ -x /usr/bin/python3 ] && pys+=(/usr/bin/python3)
pyenv_py=""
for p in "${PYTHONS[@]}"; do [ "$p" != /usr/bin/python3 ] && pyenv_py=$p; done
[ -n "$pyenv_py" ] && pys+=("$pyenv_py")
[ -x /usr/bin/python3 ] || say "not tested: Debian's /usr/bin/python3 is not installed"
[ -n "$pyenv_py" ] || say "not tested: no pyenv CPython 3.10-3.13 is installed"
for py in "${pys[@]}"; do
	v=$("$py" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
	for method in spawn forkserver; do
		t="$v-$method"
		mkdir -p "$t.alone" "$t"
		timeout 120 "$py" "$POOL" "$method" "$t.alone" >"$t.plain" 2>&1
		st_alone=$?
		timeout 120 "$SP" run --no-summary -o "$t.prof" -- "$py" "$POOL" "$method" "$t" \
			>"$t.txt" 2>"$t.err"
		st_prof=$?
		say "$t: status $st_alone alone, $st_prof profiled: $(cat "$t.txt")"
		[ $st_alone -eq 0 ] && [ $st_prof -eq 0 ] && cmp -s "$t.plain" "$t.txt"
		check "$t: Pool.terminate(): both workers died of SIGTERM, as alone" [ $? -eq 0 ]
		n=0
		for w in "$t"/w.*; do
			[ -e "$w" ] || continue
			pid=${w##*.}
			# a spawned worker exec'ed: its own image's profile is the last
			prof=$(ls "$t.prof.$pid" "$t.prof.$pid".* 2>/dev/null | sort -V | tail -1)
			check "$t: worker $pid wrote a profile" [ -n "$prof" ]
			[ -n "$prof" ] || continue
			n=$((n + 1))
			cut_readable "$t: worker $pid" "$prof" burn
		done
		check "$t: two workers" [ "$n" -eq 2 ]
	done
done
finish
