"""codedeath.py - Python code that dies while it is being profiled, with a
known CPU split per line, which it measures itself.

Every round compiles a function, runs it for a while, then drops it so that
its code object is freed before the next round compiles the next one (and
CPython's allocator often gives the new code object the freed one's
address). A profiler that names code by address alone would give the later
code the earlier one's name or lines. Each round's function spends its time
on a single line of its own, so its samples must land on that (file, line):

  exec      source compiled by exec() from "<exec-N>", the function named
            exec_fn_N, its busy line at a line number of its own
  reload    one module file, rewritten and importlib.reload()ed each round:
            the same file and the same function name (work) every round,
            only the busy line moves

usage: python3 codedeath.py DIR [SECONDS]
  DIR      a directory for the reloaded module (written, then left there)
  SECONDS  CPU seconds in all (default 2)
Prints "truth line FILE LINE FUNC SHARE" for every round (shares of the
rounds' CPU, summing to 1).
"""
import gc
import importlib
import os
import sys
import time

ROUNDS = 6  # of each kind

# The busy line: the whole loop on one line, so every sample of the
# function is on it.
BODY = "    end = _t() + secs\n    x = 0\n    while _t() < end: x += 1\n    return x\n"


def source(name, pad):
    """A function NAME whose busy line is busy_line(pad)."""
    return ("from time import thread_time as _t\n" + "\n" * pad + "def %s(secs):\n" % name + BODY)


def busy_line(pad):
    return 5 + pad  # import, pad blank lines, def, end =, x =, while


def run_exec(i, secs):
    src = source("exec_fn_%d" % i, 3 * i)
    ns = {}
    exec(compile(src, "<exec-%d>" % i, "exec"), ns)
    fn = ns["exec_fn_%d" % i]
    t0 = time.thread_time()
    fn(secs)
    spent = time.thread_time() - t0
    del fn, ns  # the function, its globals and its code die here
    gc.collect()
    return ("<exec-%d>" % i, busy_line(3 * i), "exec_fn_%d" % i, spent)


def run_reload(i, secs, path, mod):
    pad = 2 * i + 1
    with open(path, "w") as f:
        f.write(source("work", pad))
    importlib.invalidate_caches()
    mod = importlib.reload(mod) if mod else importlib.import_module("reloadmod")
    t0 = time.thread_time()
    mod.work(secs)
    spent = time.thread_time() - t0
    gc.collect()  # the previous round's work is gone since the reload
    return (path, busy_line(pad), "work", spent), mod


def main():
    d = os.path.realpath(sys.argv[1])
    total = float(sys.argv[2]) if len(sys.argv) > 2 else 2.0
    secs = total / (2 * ROUNDS)
    sys.dont_write_bytecode = True  # a stale .pyc must never stand in for the new source
    sys.path.insert(0, d)
    path = os.path.realpath(os.path.join(d, "reloadmod.py"))
    rows, mod = [], None
    for i in range(ROUNDS):
        # rounds of unequal length, so that a mix-up shows in the shares
        rows.append(run_exec(i, secs * (0.5 + i / ROUNDS)))
        row, mod = run_reload(i, secs * (1.5 - i / ROUNDS), path, mod)
        rows.append(row)
    cpu = sum(r[3] for r in rows)
    for f, line, fn, spent in rows:
        print("truth line %s %d %s %.4f" % (f, line, fn, spent / cpu))


if __name__ == "__main__":
    main()
