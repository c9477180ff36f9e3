#!/bin/bash
# _exit() and _Exit() run no destructors: a process that ends with them
# once left a profile cut off at the writer's last flush (up to 200 ms of
# samples lost, read as truncated). Now it finishes its profile first and
# the status passes through: the process itself, and a forked child
# (exit() in a child still finishes through the destructor). From inside a
# signal handler nothing is finished (it could wait on a lock the
# interrupted code holds): the child ends at once with its status and a
# profile cut off as before, never a hang. A vfork child's _exit touches
# nothing of its parent's, whose profile is complete and whole.
. "$(dirname "$0")/lib.sh"
X="$BIN/exitcall"

# run NAME WANT ARGS...: `stackprof run` of exitcall ARGS at 1 kHz, bounded;
# checks the status and that the first profile is complete.
run() {
	local name=$1 want=$2
	shift 2
	rm -f $name.prof $name.prof.*
	timeout 120 "$SP" run --no-summary -F 1000 -o $name.prof -- "$X" "$@" >$name.out 2>$name.err
	local rc=$?
	check "$name: no hang, exit status $want" [ $rc -eq $want ]
	"$SP" info --no-symbols $name.prof >$name.info 2>&1
	check "$name: the first process's profile is complete (info exits 0)" [ $? -eq 0 ]
}

# cpu_in PROFILE FUNCTION: microseconds of CPU with FUNCTION on the stack.
cpu_in() {
	"$SP" collapse "$1" 2>/dev/null | awk -v f="$2" '
		{ n = split($1, fr, ";"); for (i = 1; i <= n; i++) if (fr[i] ~ "^" f "(_\\(|$)") { s += $NF; break } }
		END { print s + 0 }'
}

# holds PROFILE FUNCTION WHO NAME: PROFILE has >= 90% (and <= 115%) of the
# CPU that process WHO (its line in NAME.out) measured in FUNCTION.
holds() {
	local prof=$1 fn=$2 who=$3 name=$4
	local want got
	want=$(awk -v w="$who" '$1 == w { print $3; exit }' $name.out)
	got=$(cpu_in "$prof" "$fn")
	want=${want:-0}
	say "$name: $got us in $fn of the $want us it measured"
	check "$name: $who reported its CPU" [ "$want" -gt 0 ]
	check "$name: >= 90% of $fn's CPU in the profile" [ $((got * 100)) -ge $((want * 90)) ]
	check "$name: <= 115% of it" [ $((got * 100)) -le $((want * 115)) ]
}

# child_prof NAME: the forked child's profile, PATH.<pid> by the pid it printed.
child_prof() { echo "$1.prof.$(awk '$1 == "child" { print $2; exit }' $1.out)"; }

for how in _exit _Exit; do
	run self$how 3 self $how 3
	check "self$how: says complete" grep -q '^status: *complete' self$how.info
	holds self$how.prof self_work self self$how

	run fork$how 5 fork $how 5
	c=$(child_prof fork$how)
	check "fork$how: the child wrote $c" [ -s "$c" ]
	"$SP" info --no-symbols "$c" >fork$how.cinfo 2>&1
	check "fork$how: the child's profile is complete (info exits 0)" [ $? -eq 0 ]
	check "fork$how: says complete" grep -q '^status: *complete' fork$how.cinfo
	"$SP" collapse "$c" >/dev/null 2>fork$how.cerr
	check "fork$how: collapse does not warn it was cut off" \
		bash -c "! grep -qi 'without finishing' fork$how.cerr"
	holds "$c" child_work child fork$how
done

# exit() in a forked child: the destructor, as before
run forkexit 7 fork exit 7
c=$(child_prof forkexit)
"$SP" info --no-symbols "$c" >forkexit.cinfo 2>&1
check "forkexit: the child's profile is complete" [ $? -eq 0 ]
holds "$c" child_work child forkexit

# _exit from a SIGTERM handler: SIGTERM blocked in it, or SA_NODEFER on the
# child's own sigaltstack. Nothing finished: status 6 at once, profile cut
# off at its last flush but readable
for kind in plain altstack; do
	run sig$kind 6 sigterm $kind
	c=$(ls sig$kind.prof.* 2>/dev/null | head -1)
	check "sig$kind: the child wrote a profile" [ -n "$c" ]
	[ -n "$c" ] || continue
	"$SP" info --no-symbols "$c" >sig$kind.cinfo 2>&1
	irc=$?
	check "sig$kind: from the handler nothing was finished: read up to its last flush, exit 0" \
		[ $irc -eq 0 ]
	check "sig$kind: readable, says cut off" grep -q '^status: *cut off at its last flush' sig$kind.cinfo
	check "sig$kind: a note says the last moments are missing" \
		grep -q '^stackprof: note: .* ends at its last flush' sig$kind.cinfo
	check "sig$kind: it has samples" has sig$kind.cinfo '/^samples:/' '$2 > 10'
done

# a thread on a 32 KiB stack calls _exit: the final flush needs more than
# that, and runs on a thread of stackprof's own
run smallstack 4 smallstack 4
check "smallstack: says complete" grep -q '^status: *complete' smallstack.info
holds smallstack.prof small_work small smallstack
# the same thread calls exit(): the destructor's finish ran on that stack
# and overflowed it (the program died of SIGSEGV)
run smallexit 8 smallstack 8 exit
check "smallexit: says complete" grep -q '^status: *complete' smallexit.info
holds smallexit.prof small_work small smallexit

# vfork children that _exit/_Exit at once: the parent's profile is whole
run vfork 0 vfork 200
check "vfork: says complete" grep -q '^status: *complete' vfork.info
holds vfork.prof after_vfork after vfork
check "vfork: the children wrote no profile" bash -c '! ls vfork.prof.* >/dev/null 2>&1'
finish
