#!/bin/bash
# A Python program that forks: the child's profile names the Python code
# it runs, on every interpreter present. The child inherits the parent's
# table of code objects already named, whose names went to the parent's
# profile; it once kept them, and the child's <module> frame (named in the
# parent, before the fork) read "[Python code not recorded]".
. "$(dirname "$0")/lib.sh"
need_pythons

cat >fk.py <<'PY'
import os, sys, time

def spin(seconds):
    t = time.process_time()
    x = 0
    while time.process_time() - t < seconds:
        x += 1

def parent_work():
    spin(0.3)

def child_work():
    spin(0.3)

parent_work()
pid = os.fork()
if pid == 0:
    child_work()
    sys.exit(0)
_, status = os.waitpid(pid, 0)
sys.exit(os.waitstatus_to_exitcode(status))
PY

for py in "${PYTHONS[@]}"; do
	v=$("$py" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
	rm -f p.prof p.prof.*
	"$SP" run -F 1000 -o p.prof -- "$py" -W ignore::DeprecationWarning fk.py >run.out 2>&1
	check "$v: the program and its child exit 0" [ $? -eq 0 ]
	child=$(ls p.prof.* 2>/dev/null | head -1)
	check "$v: the child wrote a profile of its own" [ -n "$child" ]
	[ -n "$child" ] || continue
	"$SP" collapse "$child" >child.txt 2>/dev/null
	"$SP" collapse p.prof >parent.txt 2>/dev/null
	n=$(awk '/child_work/ { s += $NF } END { print s + 0 }' child.txt)
	good=$(awk '/<module>_\([^)]*fk\.py:[0-9]+\);child_work/ { s += $NF } END { print s + 0 }' child.txt)
	# collapse's counts are CPU time in microseconds
	say "$v: child: $good of $n us in child_work under a named <module>"
	check "$v: the child's time in child_work (>= 0.1 s of its 0.3 s)" [ "$n" -ge 100000 ]
	check "$v: every one under fk.py's <module> with its line" [ "$good" -eq "$n" ]
	check "$v: no Python frame of the child is unrecorded" \
		bash -c '! grep -q "not.recorded" child.txt'
	check "$v: the parent's profile has parent_work under <module>" \
		grep -q '<module>_([^)]*fk\.py:[0-9]*);parent_work' parent.txt
done
finish
