#!/bin/bash
# Many processes, one view (issue 31 item 3): a multiprocessing.Pool run
# writes PATH for the script and PATH.<pid> for each worker, and the
# reading commands take them together. top, collapse, table and
# flamegraph given every file show the workers' work merged: their
# worker_burn() holds the CPU the workers measured themselves. With
# --per-process each stack is rooted at its process, "python3 (pid N)".
# One profile alone reads as before, and a bad operand among several is
# an error that names it.
. "$(dirname "$0")/lib.sh"
PY=/usr/bin/python3
[ -x "$PY" ] || skip "Debian's /usr/bin/python3 is not installed"

cat >pool.py <<'PY'
import multiprocessing as mp, os, time

def worker_burn(seconds):
    # this thread's CPU: the process's also counts stackprof's writer
    t = time.thread_time()
    x = 0
    while time.thread_time() - t < seconds:
        for i in range(1000):
            x += i
    return os.getpid(), time.thread_time() - t

if __name__ == "__main__":
    p = mp.get_context("fork").Pool(2)
    for pid, used in p.map(worker_burn, [0.3] * 6, chunksize=1):
        print("burned %d %.6f" % (pid, used))
    # close and join: the workers end on their own, their profiles whole
    p.close()
    p.join()
PY
timeout 120 "$SP" run --no-summary -o pool.prof -- "$PY" pool.py >burned.txt 2>run.err
check "the Pool run exits 0" [ $? -eq 0 ]
workers=$(ls pool.prof.* 2>/dev/null | sed 's/^pool\.prof\.//' | grep -E '^[0-9]+$')
say "workers' profiles: $(echo $workers)"
check "pool.prof and two workers' pool.prof.<pid>" \
	bash -c "[ -s pool.prof ] && [ $(echo $workers | wc -w) -eq 2 ]"
# what the workers measured, in microseconds: in all, and per pid
want=$(awk '/^burned/ { s += $3 } END { printf "%d", s * 1e6 }' burned.txt)
say "the workers measured ${want} us in worker_burn"

# within 10% of what the workers measured
near() { [ $(($1 * 100)) -ge $(($2 * 90)) ] && [ $(($1 * 100)) -le $(($2 * 110)) ]; }

# top over every file: worker_burn's Total, converted to microseconds
"$SP" top pool.prof pool.prof.* -l 0 >top.all 2>top.err
check "top PATH PATH.* exits 0" [ $? -eq 0 ]
cat top.all | head -5
us() { awk '{ v = $1; u = $1; sub(/[0-9.]+/, "", u); sub(/[a-z]+$/, "", v);
	m = u == "s" ? 1e6 : u == "ms" ? 1e3 : u == "us" ? 1 : 1e-3; printf "%d", v * m }'; }
got=$(awk '$NF == "worker_burn" { print $3 }' top.all | us)
say "top: worker_burn ${got:-0} us in all"
check "top merges the workers: worker_burn is their measured CPU (+-10%)" near "${got:-0}" "$want"
check "top merged: the functions header, no process column" \
	bash -c "head -1 top.all | grep -q ' functions, ' && ! sed -n 2p top.all | grep -q Process"

# one profile alone: the parent's, which never ran worker_burn
"$SP" top pool.prof -l 0 >top.one 2>/dev/null
check "top of one profile exits 0 and reads as before" \
	bash -c "head -1 top.one | grep -Eq '^[0-9]+ of [0-9]+ functions, ' && ! grep -q 'worker_burn\$' top.one"

# collapse: merged, then per process
"$SP" collapse pool.prof pool.prof.* >all.folded 2>/dev/null
check "collapse PATH PATH.* exits 0" [ $? -eq 0 ]
got=$(awk '/worker_burn/ { s += $NF } END { printf "%d", s }' all.folded)
say "collapse: worker_burn ${got} us in all"
check "collapse merges the workers: worker_burn is their measured CPU (+-10%)" near "$got" "$want"
check "collapse merged: no process roots without --per-process" bash -c "! grep -q '^python3_(pid' all.folded"
"$SP" collapse --per-process pool.prof pool.prof.* >pp.folded 2>/dev/null
check "collapse --per-process exits 0" [ $? -eq 0 ]
check "collapse --per-process: every line starts at a process root" \
	bash -c "[ -s pp.folded ] && ! grep -vqE '^python3_\\(pid_[0-9]+\\);' pp.folded"
for pid in $workers; do
	w=$(awk -v p="$pid" '$1 == "burned" && $2 == p { s += $3 } END { printf "%d", s * 1e6 }' burned.txt)
	g=$(awk -v r="^python3_\\\\(pid_$pid\\\\);" '$0 ~ r && /worker_burn/ { s += $NF } END { printf "%d", s }' pp.folded)
	say "worker $pid: $g us under its root, $w us measured"
	check "collapse --per-process: worker $pid's root holds its worker_burn (+-10%)" near "$g" "$w"
done
ppid=$(awk '/^pid:/ { print $2; exit }' <("$SP" info --no-symbols pool.prof 2>/dev/null))
check "collapse --per-process: the script's own process is a root too" \
	grep -q "^python3_(pid_${ppid});" pp.folded
"$SP" collapse --per-process --per-thread pool.prof >p1.folded 2>/dev/null
check "collapse --per-process --per-thread of one profile: the process, then the thread" \
	bash -c "[ -s p1.folded ] && ! grep -vqE '^python3_\\(pid_${ppid}\\);[^;]*-?[0-9]+;' p1.folded"

# table and flamegraph
"$SP" table pool.prof pool.prof.* -l 5 >table.all 2>/dev/null
check "table PATH PATH.* exits 0" [ $? -eq 0 ]
tot=$(awk '$1 == "worker_burn" { print $5 }' table.all | us)
say "table: worker_burn CPU total ${tot:-0} us"
check "table merges the workers: worker_burn's CPU total (+-10%)" near "${tot:-0}" "$want"
"$SP" flamegraph --per-process pool.prof pool.prof.* -o pool.svg 2>/dev/null
check "flamegraph --per-process PATH PATH.* exits 0" [ $? -eq 0 ]
for pid in $ppid $workers; do
	check "flamegraph --per-process: a root for pid $pid" grep -q "python3 (pid $pid)" pool.svg
done
check "flamegraph: worker_burn drawn" grep -q worker_burn pool.svg
"$SP" top --aggregate-by op pool.prof pool.prof.* >op.all 2>/dev/null
check "top --aggregate-by op of several profiles: every sample, '[no operator]'" \
	has op.all '/ \[no operator\]$/' '$2 == "100.00%"'

# bad operands among several: exit 1, naming the file; none: usage (2)
"$SP" top pool.prof missing.prof >bad.out 2>bad.err
rc=$?
cat bad.err
check "a missing profile among several: exit 1" [ $rc -eq 1 ]
check "... naming it" grep -q '^stackprof: missing.prof: No such file or directory' bad.err
check "... and nothing on stdout" [ ! -s bad.out ]
"$SP" collapse pool.prof pool.py >bad.out 2>bad.err
rc=$?
check "a file that is not a profile among several: exit 1, naming it" \
	bash -c "[ $rc -eq 1 ] && grep -q 'pool.py' bad.err"
"$SP" top >/dev/null 2>bad.err
rc=$?
check "no profile at all: a usage error (2)" bash -c "[ $rc -eq 2 ] && grep -q 'expected a PROFILE, or several' bad.err"
finish
