#!/bin/bash
# Processes that end without running any exit path (issue 30 point 14, issue
# 31 point 3), each run alone and under stackprof: same output, same exit
# status as the shell sees it.
# - SIGTERM from outside at its default action (a C program `kill -TERM`ed
#   mid-work; a Python Pool with the spawn and the forkserver start methods,
#   whose workers burn CPU until pool.terminate() SIGTERMs them, on Debian's
#   python3 and one pyenv version): stackprof takes the signal, finishes the
#   profile and lets the signal end the process: status 143 as alone, the
#   profile complete, "ended: by SIGTERM, sent from outside".
# - What stays the program's: it sees SIG_DFL (sigaction, and signal()'s
#   answer) and its own handler runs once set; a SIGTERM blocked and taken
#   with sigwait(); one ignored before it started (trap '' TERM) still does
#   nothing.
# - A raw exit_group system call (as Go programs with cgo end): nothing can
#   finish in-process, so the profile ends at its last flush, and every
#   reading command (collapse, top, info) reads it with exit 0, the samples,
#   and ONE short note on stderr that the last moments are missing; info's
#   status says "cut off at its last flush". A damaged profile still exits 1
#   (export/errors, unit/format).
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

# complete_read TAG PROFILE FUNCTION: PROFILE is complete, reads with exit 0
# and nothing said of a cut; FUNCTION has samples
complete_read() {
	local tag=$1 prof=$2 fn=$3 cmd rc f n
	f=${tag//[^A-Za-z0-9.-]/_}
	for cmd in collapse info; do
		"$SP" $cmd "$prof" >"$f.$cmd" 2>"$f.$cmd.err"
		rc=$?
		check "$tag: $cmd reads it, exit 0, no note of a cut" \
			bash -c "[ $rc -eq 0 ] && ! grep -qiE 'last flush|truncated|partial' '$f.$cmd.err'"
	done
	check "$tag: info: status: complete" grep -qE '^status: *complete$' "$f.info"
	n=$(awk -v fn="$fn" '$0 ~ ("(^|;)" fn "_\\(") { s += $NF } END { print s + 0 }' "$f.collapse")
	say "$tag: $n us of $fn in collapse"
	check "$tag: collapse has the work of $fn (>= 100 ms)" [ "$n" -ge 100000 ]
}

# --- C programs sent SIGTERM from outside, mid-work
# term_run TAG CMD...: runs CMD, which writes its pid to the file named
# last in CMD once at work, and SIGTERMs that pid (not run) 0.3 s later;
# prints the status the shell saw
term_run() {
	local tag=$1 ready=${!#} pid p st
	shift
	rm -f "$ready"
	"$@" >"$tag.out" 2>"$tag.out.err" &
	p=$!
	for _ in $(seq 600); do [ -s "$ready" ] && break; sleep 0.05; done
	pid=$(cat "$ready" 2>/dev/null)
	[ -n "$pid" ] && sleep 0.3 && kill -TERM "$pid"
	wait $p
	st=$?
	echo $st
}
# term_case TAG WANT PREFIX... -- ARGS...: PREFIX CMD ARGS TAG.ready alone and
# under stackprof run (-o TAG.prof): the status the shell sees is WANT in both, and the output the same
term_case() {
	local tag=$1 want=$2 pre=() a b
	shift 2
	while [ "$1" != -- ]; do pre+=("$1"); shift; done
	shift
	a=$(term_run "$tag-alone" timeout 60 "${pre[@]}" "$PC" "$@" "$tag-alone.ready")
	b=$(term_run "$tag" timeout 60 "${pre[@]}" "$SP" run --no-summary -o "$tag.prof" -- \
		"$PC" "$@" "$tag.ready")
	say "$tag: status $a alone, $b profiled; output: $(tr '\n' '|' <"$tag.out")"
	[ "$a" = "$want" ] && [ "$b" = "$want" ]
	check "$tag: status $want alone and profiled" [ $? -eq 0 ]
	check "$tag: the same output" cmp -s "$tag-alone.out" "$tag.out"
}
# at the default action: stackprof finishes the profile, then the process dies of SIGTERM
term_case term 143 -- term 20
complete_read "SIGTERM" term.prof spin
check "SIGTERM: info says it came from outside and ended the process" \
	grep -q '^ended: *by SIGTERM, sent from outside at its default action' SIGTERM.info
# the program's own handler, set with signal(): it saw SIG_DFL, and its handler runs
term_case ownterm 5 -- ownterm 20
check "ownterm: sigaction and signal() answered SIG_DFL; its own handler ran" \
	bash -c "grep -qx 'SIGTERM at start: SIG_DFL' ownterm.out && grep -qx 'signal() answered SIG_DFL' ownterm.out && grep -qx 'handled 15' ownterm.out"
complete_read "ownterm" ownterm.prof spin
# blocked and taken with sigwait
term_case sigwait 0 -- sigwait
check "sigwait: got it" grep -qx 'sigwait got 15' sigwait.out
# ignored before the program started (nohup, trap ''): untouched, it runs on
term_case ignored 3 bash -c 'trap "" TERM; exec "$@"' _ -- term 1
check "ignored: SIGTERM did nothing" grep -qx 'no SIGTERM came' ignored.out
complete_read "ignored" ignored.prof spin

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
			complete_read "$t: worker $pid" "$prof" burn
			check "$t: worker $pid: ended by SIGTERM from outside" \
				grep -q '^ended: *by SIGTERM, sent from outside' "${t//[^A-Za-z0-9.-]/_}__worker_$pid.info"
		done
		check "$t: two workers" [ "$n" -eq 2 ]
	done
done
finish
