#!/bin/bash
# The profile file: created 0600 (it holds code addresses and the command
# line), never through a symlink, never over a file it did not create unless
# told to; `stackprof run -o` replaces an earlier profile only with a new one;
# configuration from the environment is validated and bounded, and a bad
# value is named once with the default used instead; a setuid program is left
# alone, by the loader and by the library itself, and `run` says why.
. "$(dirname "$0")/lib.sh"
LIB="$BUILD/libstackprof.so"
pid_of() { "$SP" info --no-symbols "$1" 2>/dev/null | awk '$1 == "pid:" { print $2 }'; }

LD_PRELOAD="$LIB" STACKPROF_OUT=p.prof "$BIN/stress" exit 0
check "mode 0600" [ "$(stat -c %a p.prof)" = 600 ]

echo "precious" >mine.txt
ln -s mine.txt link.prof
LD_PRELOAD="$LIB" STACKPROF_OUT=link.prof "$BIN/stress" exit 0
check "a symlink at the path is not followed" [ "$(cat mine.txt)" = precious ]
check "the profile went to link.prof.<pid> instead" bash -c 'ls link.prof.* >/dev/null 2>&1'

echo "precious" >taken.prof
LD_PRELOAD="$LIB" STACKPROF_OUT=taken.prof "$BIN/stress" exit 0
check "an existing file is not overwritten" [ "$(cat taken.prof)" = precious ]
LD_PRELOAD="$LIB" STACKPROF_OUT=taken.prof STACKPROF_OVERWRITE=1 "$BIN/stress" exit 0
check "unless STACKPROF_OVERWRITE=1" has <("$SP" info --no-symbols taken.prof) '$1 == "status:"' '$2 == "complete"'

# each bad value: the program runs as it would, the value is named once with
# the default used instead, and the profile is written with the defaults
while read -r bad default; do
	rm -f b.prof*
	env LD_PRELOAD="$LIB" STACKPROF_OUT=b.prof "$bad" "$BIN/stress" exit 5 2>b.err
	rc=$?
	check "$bad: the program runs and keeps its status" [ $rc -eq 5 ]
	check "$bad: named once, with the default used instead ($default)" \
		[ "$(grep -c "${bad%%=*}=.* ignored: .*; using $default\$" b.err)" -eq 1 ]
	"$SP" info --no-symbols b.prof >b.info
	check "$bad: the profile is written at the default rate and depth" \
		grep -q '^timer: .* 100 Hz requested per thread, max depth 512$' b.info
done <<'EOF'
STACKPROF_FREQ=0 100
STACKPROF_FREQ=99999999 100
STACKPROF_FREQ=abc 100
STACKPROF_FREQ=-5 100
STACKPROF_MAX_DEPTH=1 512
STACKPROF_MAX_DEPTH=100000 512
STACKPROF_RING_KB=1 1024
STACKPROF_RING_KB=99999999 1024
STACKPROF_FLUSH_MS=0 200
STACKPROF_TIMER=bogus auto
EOF

# stackprof run -o: an earlier profile is replaced once a new one exists;
# anything else at the path is somebody's file and is refused untouched
"$SP" run --no-summary -o r.prof -- "$BIN/stress" exit 0
first=$(pid_of r.prof)
"$SP" run --no-summary -o r.prof -- "$BIN/stress" exit 0
second=$(pid_of r.prof)
check "run -o replaces an earlier profile ($first, then $second)" \
	[ -n "$first" -a -n "$second" -a "$first" != "$second" ]
check "with nothing left beside it" bash -c '! ls r.prof.* >/dev/null 2>&1'
"$SP" run --no-summary -o w2.prof -- "$BIN/stress" exit 0
"$SP" run -o w2.prof -- "$BIN/stress" exit 0 2>w2.err
check "and its summary names it by its absolute path, as a first run does" \
	grep -qx "stackprof: wrote $PWD/w2.prof" w2.err
echo "precious" >notes.txt
"$SP" run -o notes.txt -- "$BIN/stress" exit 0 2>notes.err
check "run -o over a file that is not a profile: refused (exit 1)" [ $? -eq 1 ]
check "the file is left as it was" [ "$(cat notes.txt)" = precious ]
check "and the message says why" grep -q 'exists and is not a stackprof profile' notes.err
ln -s r.prof rlink.prof
"$SP" run -o rlink.prof -- "$BIN/stress" exit 0 2>rlink.err
check "run -o at a symlink: refused (exit 1)" [ $? -eq 1 ]
check "the profile it points to is untouched" [ "$(pid_of r.prof)" = "$second" ]

# setuid: the loader ignores LD_PRELOAD for secure-execution programs, and
# `stackprof run` names that reason; the library's own AT_SECURE check is met
# when it is preloaded anyway, through /etc/ld.so.preload
if command -v setpriv >/dev/null && [ "$(id -u)" = 0 ] && id nobody >/dev/null 2>&1; then
	cp "$BIN/stress" suid && chmod 4755 suid
	chmod 777 .
	as_nobody() { setpriv --reuid=nobody --regid=nogroup --clear-groups "$@"; }
	rm -f s.prof*
	as_nobody env LD_PRELOAD="$LIB" STACKPROF_OUT="$TMP/s.prof" ./suid exit 4 2>s.err
	check "a setuid program runs unchanged" [ $? -eq 4 ]
	check "and is not profiled" bash -c '! ls s.prof* >/dev/null 2>&1'

	as_nobody "$SP" run --no-summary -o "$TMP/n.prof" -- "$BIN/stress" exit 0
	earlier=$(pid_of n.prof)
	as_nobody "$SP" run -o "$TMP/n.prof" -- ./suid exit 4 2>run.err
	check "stackprof run on a setuid program: its status passes through" [ $? -eq 4 ]
	check "and says why it was not profiled" grep -q 'suid is set-user-ID: the loader ignores LD_PRELOAD' run.err
	check "the earlier profile at -o is kept" [ -n "$earlier" -a "$(pid_of n.prof)" = "$earlier" ]

	if unshare -m true 2>/dev/null; then
		mkdir etc && cp /etc/passwd /etc/group etc/
		cp /etc/ld.so.cache etc/ 2>/dev/null
		echo "$LIB" >etc/ld.so.preload
		rm -f pre.prof*
		unshare -m sh -c "mount --bind '$TMP/etc' /etc && exec setpriv --reuid=nobody \
			--regid=nogroup --clear-groups env STACKPROF_OUT='$TMP/pre.prof' ./suid exit 4" 2>pre.err
		check "preloaded through /etc/ld.so.preload, a setuid program runs unchanged" [ $? -eq 4 ]
		check "the library says it leaves it alone" grep -q 'setuid/setgid program: stackprof leaves it alone' pre.err
		check "and writes nothing" bash -c '! ls pre.prof* >/dev/null 2>&1'
	else
		say "note: no private mount namespace here: the library's own AT_SECURE check is not exercised"
	fi
else
	say "setuid checks skipped: need root, setpriv and a 'nobody' user"
fi
finish
