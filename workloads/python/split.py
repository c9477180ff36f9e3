"""split.py - Python code with a known CPU split, which it measures itself.

The Python counterpart of workloads/programs/split.c, for stackprof's Python
frames (issue 16). Each measured function is a leaf of the work: it calls
no other measured function, and its callers do almost nothing of their
own, so the thread CPU time spent inside each call (time.thread_time()
around it) is that function's true share. The shapes a profiler must get
right are all here:

  shared        one function reached by two call paths (via_one, via_two)
  deep_leaf     the bottom of a 120-deep recursion (recurse)
  gen_values    a generator, driven by a for loop
  Worker.step   a method
  <lambda>      a lambda compiled anew on every call, from "<fresh-lambda>":
                its code object dies after each call, all through the run
  hash_work     a call into a C extension (hashlib: _hashlib and libcrypto)
  regex_work    a call into a module built into the interpreter (_sre, the
                re module's engine), whose frames are the interpreter's own
  thread_work   a second Python thread, named py-worker

usage: python3 split.py [SECONDS]   (CPU seconds per thread, default 3)
Prints "truth func NAME SHARE" lines (shares of the measured functions'
CPU, summing to 1), "truth thread NAME SECONDS", and "callee FRAME NAME"
lines: a sample belongs to NAME when FRAME is the frame Meter.run called
(how a profile of this program is read against its truth).
"""
import hashlib
import re
import sys
import threading
import time

FRESH = "lambda n: sum([i * i for i in range(n)])"
BUF = bytes(range(256)) * 4096  # 1 MiB
# no match: _sre tries each word and backtracks through it, in C
PATTERN = re.compile(r"[a-z]+[0-9]")
TEXT = "abcdefgh " * 6000


def spin(n):
    s = 0
    for i in range(n):
        s += i * i
    return s


def shared(n):
    return spin(n)


def via_one(n):
    return shared(n)


def via_two(n):
    return shared(n)


def deep_leaf(n):
    return spin(n)


def recurse(depth, n):
    if depth <= 1:
        return deep_leaf(n)
    return recurse(depth - 1, n) + 1


def gen_values(n):
    for i in range(n):
        yield i * i


class Worker:
    def step(self, n):
        s = 0
        for i in range(n):
            s ^= i
        return s


def drive_gen(n):
    return sum(gen_values(n))


def fresh_lambda(n):
    # a new code object on every call: the old one dies with it
    f = eval(compile(FRESH, "<fresh-lambda>", "eval"))
    return f(n)


def hash_work(rounds):
    d = b""
    for _ in range(rounds):
        d = hashlib.sha256(BUF).digest()
    return d


def regex_work(rounds):
    m = None
    for _ in range(rounds):
        m = PATTERN.search(TEXT)
    return m


def thread_work(n):
    return spin(n)


# the function Meter.run calls (its qualname, or its name on 3.10) -> the
# measured function it stands for
CALLEES = [
    ("via_one", "shared"),
    ("via_two", "shared"),
    ("recurse", "deep_leaf"),
    ("drive_gen", "gen_values"),
    ("Worker.step", "Worker.step"),
    ("step", "Worker.step"),
    ("fresh_lambda", "<lambda>"),
    ("hash_work", "hash_work"),
    ("regex_work", "regex_work"),
    ("thread_work", "thread_work"),
]


class Meter:
    """CPU time per measured function, read around each call."""

    def __init__(self):
        self.t = {}

    def run(self, name, fn, *args):
        t0 = time.thread_time()
        r = fn(*args)
        self.t[name] = self.t.get(name, 0.0) + time.thread_time() - t0
        return r


def main_loop(meter, secs):
    w = Worker()
    end = time.thread_time() + secs
    while time.thread_time() < end:
        # the call-path frames (via_one, via_two, recurse) are outside the
        # measured part: their own time is a few calls
        meter.run("shared", via_one, 20000)
        meter.run("shared", via_two, 10000)
        meter.run("deep_leaf", recurse, 120, 15000)
        meter.run("gen_values", drive_gen, 15000)
        meter.run("Worker.step", w.step, 30000)
        meter.run("<lambda>", fresh_lambda, 12000)
        meter.run("hash_work", hash_work, 3)
        meter.run("regex_work", regex_work, 2)


def thread_main(meter, secs):
    end = time.thread_time() + secs
    while time.thread_time() < end:
        meter.run("thread_work", thread_work, 20000)


def main():
    secs = float(sys.argv[1]) if len(sys.argv) > 1 else 3.0
    m_main, m_thread = Meter(), Meter()
    th = threading.Thread(target=thread_main, args=(m_thread, secs), name="py-worker")
    th.start()
    main_loop(m_main, secs)
    th.join()
    total = {}
    for m in (m_main, m_thread):
        for k, v in m.t.items():
            total[k] = total.get(k, 0.0) + v
    all_cpu = sum(total.values())
    for k in sorted(total):
        print("truth func %s %.5f" % (k, total[k] / all_cpu))
    for frame, name in CALLEES:
        print("callee %s %s" % (frame, name))
    print("truth thread MainThread %.3f" % sum(m_main.t.values()))
    print("truth thread py-worker %.3f" % sum(m_thread.t.values()))


if __name__ == "__main__":
    main()
