#!/bin/bash
# A program that counts its own threads counts them as it would without
# stackprof. CPython 3.12 and 3.13 read the count from /proc/self/stat
# (fopen64) in the parent after os.fork() and warn above one thread
# ("DeprecationWarning: This process ... is multi-threaded"): stackprof's
# writer thread made a single-threaded script print that. On every
# interpreter present:
#   - a single-threaded script that forks prints what it prints unprofiled
#     (on 3.12+: nothing), and a script with a thread of its own still
#     gets its warning, the same as unprofiled;
#   - the count read through libc's fopen and fopen64 (ctypes), from
#     /proc/self/stat and /proc/self/status, is 1 + the threads the script
#     started, with the default timer and with --timer thread (whose ticker
#     is a second thread of ours), in the parent and in a forked child
#     (whose own writer is counted afresh).
. "$(dirname "$0")/lib.sh"
need_pythons

cat >single.py <<'PY'
import os
pid = os.fork()
if pid == 0:
    os._exit(0)
os.waitpid(pid, 0)
PY
cat >threaded.py <<'PY'
import os, threading
ev = threading.Event()
t = threading.Thread(target=ev.wait)
t.start()
pid = os.fork()
if pid == 0:
    os._exit(0)
os.waitpid(pid, 0)
ev.set()
t.join()
PY
cat >count.py <<'PY'
import ctypes, os, sys, threading

libc = ctypes.CDLL(None)
for name in ("fopen", "fopen64"):
    getattr(libc, name).restype = ctypes.c_void_p
    getattr(libc, name).argtypes = (ctypes.c_char_p, ctypes.c_char_p)
libc.fread.argtypes = (ctypes.c_char_p, ctypes.c_size_t, ctypes.c_size_t, ctypes.c_void_p)
libc.fclose.argtypes = (ctypes.c_void_p,)

def read(opener, path):
    f = getattr(libc, opener)(path.encode(), b"re")
    buf = ctypes.create_string_buffer(8192)
    n = libc.fread(buf, 1, 8191, f)
    libc.fclose(f)
    return buf.raw[:n].decode()

def counts(who):
    for opener in ("fopen", "fopen64"):
        stat = read(opener, "/proc/self/stat")
        n_stat = int(stat[stat.rindex(")") + 2:].split()[17])
        status = read(opener, "/proc/%d/status" % os.getpid())
        n_status = int(status.split("Threads:")[1].split()[0])
        print(who, opener, n_stat, n_status, threading.active_count())

ev = threading.Event()
ts = [threading.Thread(target=ev.wait) for _ in range(2)]
for t in ts:
    t.start()
counts("parent")
pid = os.fork()
if pid == 0:
    tc = threading.Thread(target=ev.wait)
    tc.start()
    counts("child")
    sys.stdout.flush()
    os._exit(0)
os.waitpid(pid, 0)
ev.set()
for t in ts:
    t.join()
PY

for py in "${PYTHONS[@]}"; do
	v=$("$py" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
	for s in single threaded; do
		"$py" $s.py 2>&1 | sed 's/pid=[0-9]*/pid=N/' >$s.plain
		"$SP" run --no-summary -o $s.prof -- "$py" $s.py 2>&1 | sed 's/pid=[0-9]*/pid=N/' >$s.prof.out
		check "$v: $s.py prints what it prints unprofiled ($(wc -l <$s.plain) lines)" \
			cmp -s $s.plain $s.prof.out
	done
	check "$v: single.py prints no warning under stackprof" bash -c '! grep -q multi-threaded single.prof.out'
	case $v in
	3.1[2-9])
		check "$v: threaded.py still gets its warning" grep -q multi-threaded threaded.prof.out ;;
	esac
	for timer in auto thread; do
		"$SP" run --no-summary --timer $timer -o c.prof -- "$py" count.py >count.out 2>&1
		# parent: 3 threads (main and two), child: 2 (the forking one and
		# one it started: not at the floor of one, where a count off by
		# ours would hide)
		check "$v, --timer $timer: the parent counts 3 threads by fopen and fopen64" \
			[ "$(grep -c '^parent fopen\(64\)\? 3 3 3$' count.out)" -eq 2 ]
		check "$v, --timer $timer: the forked child counts 2" \
			[ "$(grep -c '^child fopen\(64\)\? 2 2 2$' count.out)" -eq 2 ]
		grep -q '3 3 3$' count.out || cat count.out
	done
done
finish
