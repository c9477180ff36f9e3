#!/bin/bash
# Python multiprocessing workers started with the fork method end with
# os._exit() (multiprocessing/popen_fork.py), which runs no destructors:
# their profiles used to end at the writer's last flush, read as truncated
# and missed up to 200 ms of samples (PyTorch DataLoader workers lost ~20%
# of their CPU). Now each worker's profile is complete and holds the CPU
# the worker measured itself in its burn() function, and the exit codes
# pass through, on every interpreter present. A Pool's busier workers
# don't take the run's summary from the script.
. "$(dirname "$0")/lib.sh"
need_pythons

cat >mp.py <<'PY'
import multiprocessing as mp, os, sys, time

def burn(seconds):
    # this thread's CPU: the process's also counts stackprof's writer
    t = time.thread_time()
    x = 0
    while time.thread_time() - t < seconds:
        x += 1
    return time.thread_time() - t

def worker(q, code):
    used = burn(0.5)
    q.put((os.getpid(), used))
    # burn again after the report, right up to the exit: what the last
    # flush would miss
    used2 = burn(0.25)
    with open("w.%d" % os.getpid(), "w") as f:
        f.write("%.6f\n" % (used + used2))
    sys.exit(code)

if __name__ == "__main__":
    ctx = mp.get_context("fork")
    q = ctx.Queue()
    codes = [0, 0, 4]
    ps = [ctx.Process(target=worker, args=(q, c)) for c in codes]
    for p in ps:
        p.start()
    for p in ps:
        q.get()
    for p in ps:
        p.join()
    got = [p.exitcode for p in ps]
    print("exit codes", got)
    sys.exit(0 if got == codes else 1)
PY

for py in "${PYTHONS[@]}"; do
	v=$("$py" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
	rm -f p.prof p.prof.* w.*
	timeout 120 "$SP" run -F 1000 -o p.prof -- "$py" -W ignore::DeprecationWarning mp.py \
		>run.out 2>&1
	check "$v: the workers' exit codes pass through (0, 0, 4), the program exits 0" [ $? -eq 0 ]
	n=0
	for w in w.*; do
		[ -e "$w" ] || continue
		pid=${w#w.}
		prof=p.prof.$pid
		n=$((n + 1))
		check "$v: worker $pid wrote a profile" [ -s "$prof" ]
		[ -s "$prof" ] || continue
		"$SP" info --no-symbols "$prof" >info.$pid 2>&1
		check "$v: worker $pid: its profile is complete (info exits 0)" [ $? -eq 0 ]
		check "$v: worker $pid: info says complete" grep -q '^status: *complete' info.$pid
		"$SP" collapse "$prof" >c.$pid 2>c.$pid.err
		check "$v: worker $pid: collapse does not warn that it was cut off" \
			bash -c "! grep -qi 'without finishing' c.$pid.err"
		# collapse's values are CPU microseconds; frames read "burn_(FILE:LINE)"
		got=$(awk '/;burn_\(/ { s += $NF } END { print s + 0 }' c.$pid)
		want=$(awk '{ printf "%d", $1 * 1e6 }' "$w")
		say "$v: worker $pid: $got us in burn of the $want us it measured"
		check "$v: worker $pid: >= 90% of its burn() CPU in the profile" \
			[ $((got * 100)) -ge $((want * 90)) ]
		check "$v: worker $pid: <= 115% of it" [ $((got * 100)) -le $((want * 115)) ]
	done
	check "$v: three workers reported" [ "$n" -eq 3 ]
done

# A Pool whose workers, together, took more samples than the script: the
# run's summary is still the script's, and the workers' profiles are
# listed with their samples (it used to summarize the busiest worker,
# which `with Pool()` ends by SIGTERM, under a "truncated" warning).
cat >pool.py <<'PY'
import multiprocessing as mp, time

def burn(seconds):
    t = time.thread_time()
    while time.thread_time() - t < seconds:
        pass

if __name__ == "__main__":
    burn(0.5)
    with mp.get_context("fork").Pool(2) as p:
        p.map(burn, [0.4] * 4)
PY
py=${PYTHONS[0]}
rm -f pool.prof pool.prof.*
timeout 120 "$SP" run -o pool.prof -- "$py" pool.py >pool.out 2>&1
check "Pool: the program exits 0" [ $? -eq 0 ]
cat pool.out
check "Pool: the summary is of the script's own profile" \
	bash -c "! grep -q '^stackprof: the summary is of' pool.out && grep -q '  burn (pool.py)$' pool.out"
check "Pool: the workers' profiles are listed with their samples" \
	grep -Eq "^stackprof: wrote .*/pool\.prof; children and exec'ed images: .*/pool\.prof\.[0-9]+ \([1-9][0-9]* samples\)" pool.out
finish
