#!/bin/bash
# A program's life ends as it would without stackprof, in small stacks and
# under seccomp (issue 30, points 3, 5 and 6), with every timer at 100 Hz:
# - small stacks: threads, a fork and exit under `ulimit -s 32` and
#   `ulimit -s 64` (prlimit), and with pthread_setattr_default_np(32 KiB):
#   stackprof's own threads choose their stack sizes, and its code on the
#   program's threads fits in its budget (docs/SAMPLER.md);
# - main() leaving by pthread_exit with 0, 1 and 3 workers, the last thread
#   leaving by pthread_exit with stdout's buffer unflushed and an atexit
#   handler to run; the last thread leaving by syscall(SYS_exit, 5): the
#   process ends, with the same output and status, and a complete profile;
# - seccomp: strict mode, and an allow-list filter that kills on any other
#   call (installed by prctl, by seccomp(2) through syscall(), with TSYNC,
#   and in a forked child): stackprof finishes the profile before the filter
#   takes effect, says so, and the program runs to its end.
. "$(dirname "$0")/lib.sh"

P="$BIN/probe_lifetime"
[ -x "$P" ] || skip "no $P"

# alone TAG PREFIX... -- ARGS: the program's run without stackprof, once per case
alone() {
	local tag=$1
	shift
	timeout -k 3 10 "$@" >"$tag.plain" 2>"$tag.plain.err"
	echo $? >"$tag.plain.rc"
}

# same_as_alone TAG ARGS...: status and output under stackprof ($RUNOPTS)
# are those of alone TAG's run, and every profile written is complete
same_as_alone() {
	local tag=$1 case=$2
	shift 2
	timeout -k 3 10 "$SP" run --no-summary $RUNOPTS -o "$tag.prof" -- "$@" >"$tag.txt" 2>"$tag.err"
	local got=$? want
	want=$(cat "$case.plain.rc")
	if [ "$want" -ne "$got" ] || ! cmp -s "$case.plain" "$tag.txt"; then
		say "status $want alone, $got profiled"
		diff "$case.plain" "$tag.txt" | head -5
		head -3 "$tag.err"
		return 1
	fi
	local f n=0
	for f in "$tag.prof"*; do
		[ -e "$f" ] || continue
		n=$((n + 1))
		"$SP" info --no-symbols "$f" 2>/dev/null | grep -q '^status: *complete' ||
			{ say "$f: not complete"; return 1; }
	done
	[ $n -gt 0 ] || { say "no profile"; return 1; }
}

STACK32=(prlimit --stack=32768)
STACK64=(prlimit --stack=65536)
alone s32 "${STACK32[@]}" "$P" stacks
alone s64 "${STACK64[@]}" "$P" stacks
alone d32 "$P" stacks default32
for n in 0 1 3; do alone "pexit$n" "$P" pexit $n; done
for n in 0 2; do alone "sysexit$n" "$P" sysexit $n; done
alone strict "$P" strict
for how in prctl syscall tsync fork; do alone "allow-$how" "$P" allow $how; done

for c in s32 s64 d32 pexit0 sysexit0 strict allow-prctl; do
	[ "$(cat $c.plain.rc)" -lt 2 ] || [ $c = sysexit0 ] ||
		{ cat "$c.plain" "$c.plain.err"; skip "$c fails without stackprof"; }
done

for timer in ${T0029_TIMERS:-auto perf posix thread itimer}; do
	RUNOPTS="-F 100 --timer $timer"
	t=$timer
	check "$t: threads, fork and exit under ulimit -s 32" \
		same_as_alone "s32-$t" s32 "${STACK32[@]}" "$P" stacks
	check "$t: threads, fork and exit under ulimit -s 64" \
		same_as_alone "s64-$t" s64 "${STACK64[@]}" "$P" stacks
	check "$t: threads, fork and exit with 32 KiB default thread stacks" \
		same_as_alone "d32-$t" d32 "$P" stacks default32
	for n in 0 1 3; do
		check "$t: main leaves by pthread_exit, $n workers: output, atexit, status as alone" \
			same_as_alone "pexit$n-$t" "pexit$n" "$P" pexit $n
	done
	for n in 0 2; do
		check "$t: the last thread leaves by syscall(SYS_exit, 5), $n workers before it" \
			same_as_alone "sysexit$n-$t" "sysexit$n" "$P" sysexit $n
	done
	check "$t: strict seccomp: runs to its end as alone" \
		same_as_alone "strict-$t" strict "$P" strict
	for how in prctl syscall tsync fork; do
		check "$t: allow-list seccomp filter by $how: runs to its end as alone" \
			same_as_alone "allow-$how-$t" "allow-$how" "$P" allow $how
	done
done
check "stackprof says once why it stopped before a seccomp filter" \
	[ "$(grep -c 'seccomp' allow-prctl-posix.err)" -eq 1 ]

finish
