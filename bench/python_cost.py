"""python_cost.py - the driver of bench/python-cost.sh: a fixed amount of
Python work done at the bottom of a stack of known Python depth, timed with
the thread's own CPU clock. The Python counterpart of bench/handler_cost.c.

usage: python3 python_cost.py DEPTH ITERS [same]

Calls down a chain of distinct Python functions (or, with "same", recurses
through one) until DEPTH Python frames are on the stack (the module's body,
main, DEPTH - 3 chain functions and spin), runs ITERS iterations of a
floating-point loop in Python at the bottom, and prints

  depth D iters N thread_cpu_ns T process_cpu_ns P

T is the thread's CPU time (time.thread_time_ns) around the recursion and
the loop: the work, plus whatever signal delivery and a profiler's handler
added to this thread. P is the process's (time.process_time_ns) over the
same span, which also holds a profiler's helper threads. Run with and
without a profiler, the difference over the samples taken is the cost of
one sample with DEPTH Python frames on the stack.

HC_ALARM=SECONDS in the environment ends the run after that much wall time
(SIGALRM's default action), as for handler_cost.c.
"""
import os
import signal
import sys
import time


def spin(n):
    x = 0.0
    for i in range(n):
        x += i * 0.5
    return x


def recurse(depth, n):
    # the work after the call keeps each frame on the stack until the end
    if depth <= 1:
        return spin(n)
    return recurse(depth - 1, n) + 1.0


def chain(count):
    """count distinct functions, c1 calling spin and each ck calling
    c(k-1): a stack of different code objects, as a real program's is."""
    src = ["def c1(n):\n    return spin(n)\n"]
    for k in range(2, count + 1):
        src.append("def c%d(n):\n    return c%d(n) + 1.0\n" % (k, k - 1))
    ns = {"spin": spin}
    exec(compile("".join(src), "python_cost_chain.py", "exec"), ns)
    return ns["c%d" % count]


def main():
    if len(sys.argv) not in (3, 4) or sys.argv[3:] not in ([], ["same"]):
        sys.stderr.write("usage: python_cost.py DEPTH ITERS [same]\n")
        return 2
    depth, iters = int(sys.argv[1]), int(sys.argv[2])
    if not 4 <= depth <= 500 or iters < 1:
        sys.stderr.write("python_cost.py: DEPTH must be 4..500 and ITERS positive\n")
        return 2
    lim = int(os.environ.get("HC_ALARM", "0") or 0)
    if lim > 0:
        signal.alarm(lim)
    t0, p0 = time.thread_time_ns(), time.process_time_ns()
    # <module>, main and spin are three frames: the chain (or recurse) makes the others
    if sys.argv[3:] == ["same"]:
        recurse(depth - 3, iters)
    else:
        chain(depth - 3)(iters)
    t1, p1 = time.thread_time_ns(), time.process_time_ns()
    print("depth %d iters %d thread_cpu_ns %d process_cpu_ns %d" % (depth, iters, t1 - t0, p1 - p0))
    return 0


if __name__ == "__main__":
    sys.exit(main())
