#!/bin/bash
# The profile file: created 0600 (it holds code addresses and the command
# line), never through a symlink, never over a file it did not create unless
# told to; configuration from the environment is validated and bounded; a
# setuid program is left alone.
. "$(dirname "$0")/lib.sh"
LIB="$BUILD/libstackprof.so"
prog() { "$BIN/stress" exit 0; }

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
check "unless STACKPROF_OVERWRITE=1" "$SP" info --no-symbols taken.prof >/dev/null

for bad in STACKPROF_FREQ=0 STACKPROF_FREQ=99999999 STACKPROF_FREQ=abc STACKPROF_MAX_DEPTH=1 \
	STACKPROF_RING_KB=1 STACKPROF_FLUSH_MS=0 STACKPROF_TIMER=bogus; do
	rm -f b.prof*
	env LD_PRELOAD="$LIB" STACKPROF_OUT=b.prof "$bad" "$BIN/stress" exit 5 2>b.err
	rc=$?
	check "$bad: the program runs and keeps its status" [ $rc -eq 5 ]
	check "$bad: rejected with a message" grep -q "${bad%%=*}=.* ignored" b.err
	check "$bad: defaults used, profile written" "$SP" info --no-symbols b.prof >/dev/null
done

# setuid: the loader ignores LD_PRELOAD paths for secure-execution programs,
# and the library refuses AT_SECURE if it gets in; either way no profile
if command -v setpriv >/dev/null && [ "$(id -u)" = 0 ] && id nobody >/dev/null 2>&1; then
	cp "$BIN/stress" suid && chmod 4755 suid
	chmod 777 .
	rm -f s.prof*
	setpriv --reuid=nobody --regid=nogroup --clear-groups \
		env LD_PRELOAD="$LIB" STACKPROF_OUT="$TMP/s.prof" ./suid exit 4 2>s.err
	check "a setuid program runs unchanged" [ $? -eq 4 ]
	check "and is not profiled" bash -c '! ls s.prof* >/dev/null 2>&1'
else
	say "setuid check skipped: needs root, setpriv and a 'nobody' user"
fi
finish
